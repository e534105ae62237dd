import Testing

/// No monitor at boot (issue 31): the only head of a virtio-gpu forced off on the kernel command
/// line; kioskd says READY=1 with a STATUS= that it waits for a display, stays up, and shows the
/// clock within 2 s of the connector being forced on through sysfs, which raises no udev event
/// (scripts/vm/scenarios_nomonitor.py checks the notification lines and the screendump pixels).
/// KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct NoMonitorVMTests {
    @Test func startsWaitingAndShowsTheClockWhenTheConnectorAppears() throws {
        try VMScenario.check("kioskd-no-monitor-at-boot", needsKioskd: true)
    }
}
