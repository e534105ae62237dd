import Testing

/// Kernel tests of input: QEMU boots Debian's kernel, uinput devices and QEMU's usb-tablet go
/// through udev and libinput into kioskd (scripts/vm/scenarios_input.py says what each scenario
/// draws and checks). Enabled with KIOSK_VM_TESTS=1; each boots its own VM.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct InputVMTests {
    @Test func uinputTouchscreensKeysAndRotationThroughLibinput() throws {
        try VMScenario.check("input-libinput-touch", needsKioskd: true)
    }

    @Test func qemuUSBTabletActsAsOneFinger() throws {
        try VMScenario.check("input-libinput-usb-tablet", needsKioskd: true)
    }

    @Test func mapToOutputAndPermissionErrors() throws {
        try VMScenario.check("input-libinput-output-permissions", needsKioskd: true)
    }

    @Test func keysTapSwipeAndLongPressDriveTheCounterOnDRM() throws {
        try VMScenario.check("input-kioskd-counter-keys", needsKioskd: true)
    }

    @Test func twoFingersTabletAndUnplugPaintOnDRM() throws {
        try VMScenario.check("input-kioskd-paint", needsKioskd: true)
    }

    @Test func paintTurned90DegreesPutsInkUnderTheFingers() throws {
        try VMScenario.check("input-kioskd-paint-rot90", needsKioskd: true)
    }
}
