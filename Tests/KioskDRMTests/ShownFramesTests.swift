#if canImport(Glibc)
import Glibc
#endif
import Testing
import KioskCore
import KioskDRMTesting
import KioskTesting
@testable import KioskDRM

/// What reached the panel, as the display reports it: the time of the latest frame the kernel
/// completed, the frames it completed in the last minute, and an error line for a flip that never
/// completed — counted from the kernel's answers, not from what kioskd asked for.
@Suite struct ShownFramesTests {
    /// 2023-11-14T22:13:20Z, the virtual loop's wall clock at start.
    static let start: Int64 = 1_700_000_000_000_000_000

    @Test func completedFramesAreCountedWhenTheKernelCompletesThem() throws {
        let r = try Rig()
        #expect(r.display.shownFrames == ShownFrames(lastRealtimeNs: nil, lastMinute: 0))
        r.loop.advance(by: 1_000_000_000)
        try r.present(Rig.red)
        // The mode set is on screen when it returns.
        #expect(r.display.shownFrames == ShownFrames(lastRealtimeNs: Self.start + 1_000_000_000, lastMinute: 1))
        r.loop.advance(by: 500_000_000)
        try r.present(Rig.green)
        #expect(r.display.shownFrames?.lastMinute == 1, "a queued flip is not on screen yet")
        r.loop.advance(by: 16_000_000)
        #expect(r.kms.completeFlip())
        #expect(r.display.shownFrames == ShownFrames(lastRealtimeNs: Self.start + 1_516_000_000, lastMinute: 2))
        #expect(ShownFrames.utc(r.display.shownFrames!.lastRealtimeNs!) == "2023-11-14T22:13:21Z")
        // A minute later the two have left the window; the time of the latest stays.
        r.loop.advance(by: 59_484_000_000)
        #expect(r.display.shownFrames?.lastMinute == 1, "the mode set 60 s ago has left; the flip 59.484 s ago still counts")
        r.loop.advance(by: 516_000_000)
        #expect(r.display.shownFrames == ShownFrames(lastRealtimeNs: Self.start + 1_516_000_000, lastMinute: 0))
    }

    @Test func aFlipThatNeverCompletesGivesAnErrorLineUntilAFrameCompletes() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.flipEventsLost = true
        try r.present(Rig.green)
        // The flip happens at the vertical blank, but its event never comes.
        #expect(r.kms.completeFlip())
        #expect(r.display.shownFrames?.error == nil)
        r.loop.advance(by: DRMDisplay.flipEventTimeoutNs)
        #expect(r.display.shownFrames?.error == "a page flip of Virtual-1 8x4@60 did not complete within 2000 ms "
                + "(at 2023-11-14T22:13:22Z); the panel may not show the latest frames")
        #expect(r.display.shownFrames?.lastMinute == 1, "only the mode set reached the panel")
        r.kms.flipEventsLost = false
        try r.present(Rig.blue)
        #expect(r.kms.completeFlip())
        #expect(r.display.shownFrames?.error == nil && r.display.shownFrames?.lastMinute == 2)
    }
}
