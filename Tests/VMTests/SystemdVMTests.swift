import Testing

/// The shipped unit under a real systemd: systemd 252 is PID 1 in the VM (host root read-only
/// under a tmpfs overlay), kioskd is installed by scripts/install.sh and driven with systemctl
/// (scripts/vm/scenarios_systemd.py, scripts/vm/systemd-boot.sh): ready after the first frame,
/// the sandbox, the watchdog, a bad reload and a bad start. Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct SystemdVMTests {
    @Test func installedUnitUnderRealSystemd() throws {
        try VMScenario.check("systemd-unit", needsKioskd: true)
    }
}
