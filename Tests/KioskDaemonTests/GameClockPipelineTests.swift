import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskScenes
import KioskState
import KioskTesting
import KioskTestTraits
import Logging
import Synchronization
import Testing

private let t0 = WallTime(realtimeNs: 1_704_067_200_000_000_000, monotonicNs: 10_000_000_000)

/// The game clock through the command pipeline and the daemon: decided in order at the instant
/// asked for, kept as a `GameClockRecord`, answered once kept; resumed after a kill.
@Suite(.ownThreads) struct GameClockPipelineTests {
    let rules = try! GameClockRules(periodLengthMs: 600_000, periods: 4, shotClockMs: 24_000)

    func change(_ intent: ClockIntent, at: WallTime) -> CommandPipeline.ClockChange {
        CommandPipeline.ClockChange(key: GameClockRecord.stateKey(scene: "board"), scene: "board", intent: intent,
                                    shown: GameClock(rules: rules), at: at, bootID: "boot-a")
    }

    @Test func aClockChangeIsKeptAsARecordAndDecidedAgainstTheLastOne() throws {
        let store = MemoryStateStore()
        let pipeline = CommandPipeline(store: store, logger: quietLogger) { $0() }
        let commits = ManualEventLoop()
        pipeline.start(on: commits)
        let outcomes = Mutex<[CommandPipeline.ClockOutcome]>([])
        pipeline.submit(change(.start, at: t0)) { o in outcomes.withLock { $0.append(o) } }
        #expect(commits.runPending() > 0)
        let kept = try #require(store.load(GameClockRecord.stateKey(scene: "board")))
        let record = try JSONDecoder().decode(GameClockRecord.self, from: Data(kept.utf8))
        #expect(record.game.running && record.game.remainingMs == 600_000 && record.game.sinceMonotonicNs == t0.monotonicNs)
        #expect(record.game.sinceRealtimeNs == t0.realtimeNs && record.bootID == "boot-a")
        // Stopped 5.25 s later: decided against the running clock kept (the `shown` one is a fresh clock).
        pipeline.submit(change(.stop, at: t0.advanced(byNs: 5_250_000_000))) { o in outcomes.withLock { $0.append(o) } }
        commits.runPending()
        let stopped = try JSONDecoder().decode(GameClockRecord.self, from: Data(try #require(store.load(GameClockRecord.stateKey(scene: "board"))).utf8))
        #expect(!stopped.game.running && stopped.game.remainingMs == 594_750 && stopped.shot?.remainingMs == 18_750)
        let last = outcomes.withLock { $0.last }
        guard case .decided(let clock, _)? = last else { Issue.record("not decided: \(String(describing: last))"); return }
        #expect(clock.remainingMs(at: t0.advanced(byNs: 99_000_000_000)) == 594_750)
    }

    @Test func aClockChangeTheRulesRefuseNamesTheLimitAndWritesNothing() throws {
        let store = MemoryStateStore()
        let pipeline = CommandPipeline(store: store, logger: quietLogger) { $0() }
        let commits = ManualEventLoop()
        pipeline.start(on: commits)
        let outcome = Mutex<CommandPipeline.ClockOutcome?>(nil)
        pipeline.submit(change(.set(ms: 700_000), at: t0)) { o in outcome.withLock { $0 = o } }
        commits.runPending()
        guard case .refused(let e)? = outcome.withLock({ $0 }) else { Issue.record("not refused"); return }
        #expect(e.kind == .outOfRange && e.message.contains("11:40") && e.message.contains("10:00"), "\(e.message)")
        #expect(store.load(GameClockRecord.stateKey(scene: "board")) == nil)
    }

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
        [[scene.board.counter]]
        name = "AWAY"
        [scene.board.clock]
        period_length = "10:00"
        shot_clock = 24
        """
    }

    /// The clock's time left as the daemon answers it (status).
    func remainingMs(_ daemon: Daemon) throws -> Int {
        try #require(daemon.status().clocks?.first).clock.remainingMs
    }

    @Test func aKilledDaemonResumesTheClockWithinOneFrameOfTheTruth() throws {
        let d = tempDir()
        var loop = ManualEventLoop()
        var daemon = try DaemonRig.start(Self.config(d), in: d, loop: loop, time: loop, logger: quietLogger)
        var random = SeededRandom(seed: 32)
        // The truth: time left, and since when it runs (nil: stopped).
        var left: Int64 = 600_000_000_000
        var runningSince: Int64?
        func truthMs(_ now: Int64) -> Int64 { max(0, left - (runningSince.map { now - $0 } ?? 0)) / 1_000_000 }
        let frameMs: Int64 = 17
        for round in 0..<8 {
            // Start or stop at an arbitrary instant (not on a millisecond).
            loop.advance(by: Int64.random(in: 1_000_000...3_000_000_000, using: &random))
            let now = loop.monotonic
            if let since = runningSince {
                #expect(try daemon.answer(.clock(intent: .stop, scene: nil)).status == 200)
                left -= now - since
                runningSince = nil
            } else {
                #expect(try daemon.answer(.clock(intent: .start, scene: "board")).status == 200)
                runningSince = now
            }
            loop.advance(by: Int64.random(in: 1_000_000...40_000_000_000, using: &random))
            // SIGKILL: the process is gone, nothing more is written; its state directory is free.
            daemon.state.close()
            let restart = ManualEventLoop(monotonic: loop.monotonic + 300_000_000, realtime: loop.realtime + 300_000_000)
            loop = restart
            daemon = try DaemonRig.start(Self.config(d), in: d, loop: loop, time: loop, logger: quietLogger)
            let shown = Int64(try remainingMs(daemon))
            #expect(abs(shown - truthMs(loop.monotonic)) <= frameMs, "round \(round): shown \(shown) ms, truth \(truthMs(loop.monotonic)) ms")
            #expect(daemon.status().clocks?.first?.clock.running == (runningSince != nil), "round \(round)")
        }
        daemon.shutdown()
    }

    @Test func badClockValuesAreRefusedNamingWhatIsWrong() throws {
        let d = tempDir()
        let loop = ManualEventLoop()
        let daemon = try DaemonRig.start(Self.config(d), in: d, loop: loop, time: loop, logger: quietLogger)
        defer { daemon.shutdown() }
        let big = try daemon.answer(.clock(intent: .set(ms: 660_000), scene: nil))
        #expect(big.status == 422 && big.errorMessage?.contains("0:00…10:00") == true, "\(big.errorMessage ?? "")")
        let none = try daemon.answer(.clock(intent: .start, scene: "nope"))
        #expect(none.status == 404 && none.errorMessage?.contains("scenes with a clock: board") == true, "\(none.errorMessage ?? "")")
        // The socket's road: words parsed by the router, an error naming the word.
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "POST", uri: "/clock", body: Array(#"{"words":["set","99:99"]}"#.utf8)) }
        do { _ = try ControlRouter.parse(method: "POST", uri: "/clock", body: Array(#"{"words":["set","99:99"]}"#.utf8)) } catch let e as ControlRequestError {
            #expect(e.status == 400 && e.message.contains("'99:99'") && e.message.contains("seconds 0–59"), "\(e.message)")
        }
        // Status: one entry per scene with a clock, in snake case.
        let json = String(decoding: try ControlJSON.encode(daemon.status()), as: UTF8.self)
        #expect(json.contains(#""remaining_ms":600000"#) && json.contains(#""shot_remaining_ms":24000"#) && json.contains(#""period":1"#), "\(json)")
    }
}
