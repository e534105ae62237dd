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

    /// The score stays on the screen through `systemctl restart` and a crash restart (systemd's
    /// file descriptor store keeps the DRM file), and 20 restarts leak no framebuffer
    /// (scripts/vm/scenarios_restart_picture.py, docs/restart.md).
    @Test func pictureStaysThroughRestarts() throws {
        try VMScenario.check("systemd-restart-picture", needsKioskd: true)
    }
}
