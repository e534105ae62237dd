import Testing

/// The game clock through SIGKILL on a real kernel and display (bochs-drm): kioskd killed and
/// started again at several instants of a running period and once while the clock is stopped;
/// its frame log says what each frame showed when (scripts/vm/scenarios_clock.py says what it
/// checks). KIOSK_VM_TESTS=1.
@Suite(.enabled(if: vmTestsEnabled), .serialized)
struct ClockVMTests {
    /// After each SIGKILL and restart the first frame shows the truth's face and the next faces
    /// come 0–17 ms after the truth reaches them; a stopped clock comes back with exactly its
    /// time; the period ends exactly at its kept start + the time it had.
    @Test func aKilledClockResumesWithinOneFrameOfTheTruth() throws {
        try VMScenario.check("kioskd-clock-kill", needsKioskd: true)
    }
}
