import Foundation
import KioskControl
import KioskCore
import KioskComponent
@testable import KioskDaemon
import KioskDaemonTesting
import KioskTesting
import KioskTestTraits
@testable import KioskWebComponent
import Testing

/// What the phone page is sent of a game clock (the `state` event's `game_clocks`, `horn` and
/// `now_monotonic_ns`): enough to show the clock as the screen does without asking again.
@Suite(.ownThreads) struct WebGameClockStateTests {
    static func config(_ d: String) -> String {
        """
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scene.board]
        kind = "counter"
        digits = 2
        [[scene.board.counter]]
        name = "HOME"
        [scene.board.clock]
        period_length = "8:00"
        tenths_below = "0:30"
        shot_clock = 30
        [audio]
        device = "hw:CARD=kioskd-test-no-such-card"
        mute = true
        """
    }

    @Test func theStateCarriesTheShotClockTheFaceAndTheHorn() throws {
        let d = shortDir()
        let loop = ManualEventLoop()
        let daemon = try DaemonRig.start(Self.config(d), in: d, loop: loop, time: loop, logger: quietLogger)
        defer { daemon.shutdown() }
        loop.advance(by: 1_000_000_000)
        let started = loop.monotonic
        #expect(try daemon.answer(.clock(intent: .start, scene: "board")).status == 200)
        loop.advance(by: 2_500_000_000)
        let state = daemon.kioskState()
        let c = try #require(state.gameClocks.first)
        #expect(c.remainingMs == 480_000 && c.sinceMonotonicNs == started && c.period == 1 && c.periods == 4)
        #expect(c.shot == .init(remainingMs: 30_000, sinceMonotonicNs: started))
        #expect(c.face == .init(periodLengthMs: 480_000, tenthsBelowMs: 30_000, shotTenthsBelowMs: 5_000, direction: "down", showsGameClock: true))
        #expect(state.horn == .init(available: false, muted: true))
        // Stopped: both runs keep their time left, without an instant.
        #expect(try daemon.answer(.clock(intent: .stop, scene: "board")).status == 200)
        let stopped = try #require(daemon.kioskState().gameClocks.first)
        #expect(stopped.sinceMonotonicNs == nil && stopped.remainingMs == 477_500 && stopped.shot == .init(remainingMs: 27_500, sinceMonotonicNs: nil))
        // As the page reads it: snake case.
        let json = String(decoding: try ControlJSON.encode(daemon.kioskState()), as: UTF8.self)
        for part in [#""shot":{"remaining_ms":27500}"#, #""period_length_ms":480000"#, #""tenths_below_ms":30000"#,
                     #""shot_tenths_below_ms":5000"#, #""direction":"down""#, #""shows_game_clock":true"#,
                     #""horn":{"available":false,"muted":true}"#] {
            #expect(json.contains(part), "\(part) not in \(json)")
        }
    }

    @Test func theStateEventIsStampedWithTheInstantItIsSent() throws {
        let stamped = WebComponent.stamped(Array(#"{"scene":"board"}"#.utf8), monotonicNs: 12_345_000_000)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(stamped)) as? [String: Any])
        #expect(o["now_monotonic_ns"] as? Int64 == 12_345_000_000 && o["scene"] as? String == "board")
        #expect(WebComponent.stamped(Array("{}".utf8), monotonicNs: 1) == Array("{}".utf8))
        #expect(WebComponent.stamped([], monotonicNs: 1) == [])
    }
}
