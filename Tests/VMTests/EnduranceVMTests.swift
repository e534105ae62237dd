import Testing

/// Endurance on a real kernel: kioskd on virtio-gpu through N connector unplug/replug cycles and N
/// uinput touchscreens plugged in and out (every other one mid-stroke); open descriptors the same
/// at the end as after the first cycle, threads no more, resident memory within 8 MB and, its two largest
/// warm-up steps aside, within 1 MB; every finished tap counted, the daemon alive and its screen
/// unchanged (scripts/vm/scenarios_endurance.py). KIOSK_VM_TESTS=1; KIOSK_ENDURANCE_CYCLES sets N
/// (default 10).
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct EnduranceVMTests {
    @Test func hotplugCyclesLeakNothing() throws {
        try VMScenario.check("kioskd-endurance-virtio", needsKioskd: true)
    }
}
