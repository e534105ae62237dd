import Testing

/// kioskd started as systemd/kioskd.service starts it (unprivileged user, video/input/render
/// groups, no capabilities, no new privileges) on a real kernel: display, touch input, control
/// socket and state across a restart (scripts/vm/scenarios_daemon.py). KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct DaemonVMTests {
    @Test func unprivilegedUserGetsDisplayAndInput() throws {
        try VMScenario.check("kioskd-unit-user", needsKioskd: true)
    }
}
