import Testing

/// Several outputs on a real kernel (issue 23): QEMU's virtio-gpu with two heads, each head's
/// screendump checked by pixels (scripts/vm/scenarios_multihead.py says what the scenario draws and
/// checks; its failures name the check). KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct MultiOutputVMTests {
    /// The harness's second head with a single-output kioskd: `[display] output = "Virtual-2"`
    /// draws the clock on head 1 while head 0 keeps the text console.
    @Test func singleOutputDrawsOnTheSecondHead() throws {
        try VMScenario.check("kioskd-clock-virtual2", needsKioskd: true)
    }

    /// One kioskd, two `[[output]]`s: clock on Virtual-1 and counter on Virtual-2 at once, a
    /// touchscreen mapped to Virtual-2, one head unplugged while the other keeps its frame rate,
    /// both consoles back on SIGTERM; a second output on a missing connector exits 78.
    @Test func twoOutputsTwoScenesTouchAndUnplug() throws {
        try VMScenario.check("kioskd-two-outputs", needsKioskd: true)
    }

    /// One kioskd on two DRM devices (virtio-gpu and bochs-display) named by driver only: the
    /// clock on one and a counter on the other, checked by each device's screendump;
    /// `--list-outputs` lists both with driver and by-path name; the bochs connector forced off
    /// and the bochs device unbound while the virtio output keeps the clock's frame a second.
    @Test func outputsOnTwoDevicesNamedByDriver() throws {
        try VMScenario.check("kioskd-two-devices", needsKioskd: true)
    }

    /// The same with the two devices' PCI slots swapped: the same scenes on the same devices.
    @Test func outputsOnTwoDevicesWithTheirSlotsSwapped() throws {
        try VMScenario.check("kioskd-two-devices-swapped", needsKioskd: true)
    }
}
