import Testing
import KioskCore
import KioskDRMTesting
import KioskTesting
@testable import KioskDRM

/// "Screen showing" (`ScreenShowing`) on virtual time, from what the fake kernel completes: off
/// within 3 s of a frame that never completes, off while blanked or disconnected, on again once
/// frames complete.
@Suite struct ScreenShowingTests {
    static func showing(_ r: Rig) -> (problem: String?, recheckAtNs: Int64?) {
        ScreenShowing.evaluate(connected: r.display.logicalSize != nil, blanked: r.display.isBlanked,
                               shown: r.display.shownFrames, nowNs: r.loop.now(.monotonic))
    }

    @Test func aFlipThatStopsCompletingTurnsItOffWithinThreeSeconds() throws {
        let r = try Rig()
        #expect(Self.showing(r).problem == "no frame shown yet")
        try r.present(Rig.red)
        #expect(Self.showing(r).problem == nil, "the mode set is on screen")
        r.kms.flipEventsLost = true
        try r.present(Rig.green)
        let queued = r.loop.now(.monotonic)
        #expect(r.kms.completeFlip())
        let waiting = Self.showing(r)
        #expect(waiting.problem == nil && waiting.recheckAtNs == queued + ScreenShowing.staleNs,
                "still showing while the flip may complete; the answer turns by itself 3 s after it was queued")
        r.loop.advance(by: ScreenShowing.staleNs - 1)
        #expect(Self.showing(r).problem == nil)
        r.loop.advance(by: 1)
        #expect(Self.showing(r).problem == "no page flip completed within 3 s")
        // The watchdog gave the flip up at 2 s and the scene drew again: still no frame completed.
        try r.present(Rig.blue)
        #expect(r.kms.completeFlip(), "flipped at the vertical blank; its event lost too")
        r.loop.advance(by: 1_000_000_000)
        #expect(Self.showing(r).problem == "no page flip completed within 3 s")
        #expect(r.logs.count(containing: "error: page flip event did not arrive within 2000 ms") == 1, "one error line for the episode")
        // Resumed: a flip completes, the screen shows again.
        r.kms.flipEventsLost = false
        r.loop.advance(by: DRMDisplay.flipEventTimeoutNs)
        try r.present(Rig.red)
        #expect(r.kms.completeFlip())
        #expect(Self.showing(r).problem == nil && Self.showing(r).recheckAtNs == nil)
        #expect(r.logs.count(containing: "page flips complete again") == 1)
    }

    @Test func blankedIsOffAndLitAgainIsOn() throws {
        let r = try Rig()
        try r.present(Rig.red)
        try r.display.setBlanked(true)
        #expect(Self.showing(r).problem == "blanked")
        try r.display.setBlanked(false)
        try r.present(Rig.green)
        if r.kms.completeFlip() {} // a flip or a mode set: either completes the frame
        #expect(Self.showing(r).problem == nil)
    }

    @Test func theRuleWithoutADisplay() {
        #expect(ScreenShowing.evaluate(connected: false, blanked: false, shown: nil, nowNs: 0).problem == "disconnected")
        #expect(ScreenShowing.evaluate(connected: true, blanked: true, shown: nil, nowNs: 0).problem == "blanked")
        // A display that cannot tell what reached the panel (headless) shows what it is given.
        #expect(ScreenShowing.evaluate(connected: true, blanked: false, shown: nil, nowNs: 0).problem == nil)
        let stale = ShownFrames(lastRealtimeNs: 1, lastMinute: 1, pendingSinceNs: 10)
        #expect(ScreenShowing.evaluate(connected: true, blanked: false, shown: stale, nowNs: 10 + ScreenShowing.staleNs).problem != nil)
        #expect(ScreenShowing.evaluate(connected: false, blanked: false, shown: stale, nowNs: 10).problem == "disconnected")
    }
}
