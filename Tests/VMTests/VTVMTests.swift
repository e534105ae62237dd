import Testing

/// Kernel test of the VT hand-off: the real kioskd with /dev/tty1 on standard input follows
/// `VT_ACTIVATE` switches (VT_PROCESS): away to tty2 it releases DRM master (fbcon shows tty2, a
/// second DRM client fills the screen), back on tty1 it takes master again and repaints the same
/// frame; after SIGTERM tty1 is shown as it was before kioskd (scripts/vm/scenarios_vt.py).
/// Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct VTVMTests {
    @Test func kioskdFollowsVTSwitchesAwayAndBack() throws {
        try VMScenario.check("kioskd-vt-switch-bochs", needsKioskd: true)
    }
}
