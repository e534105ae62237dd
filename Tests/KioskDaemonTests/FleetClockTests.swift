import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskPosix
import KioskScenes
import KioskState
import KioskTesting
import KioskTestTraits
import Testing

/// Another machine's clocks on the rig's loop: its monotonic clock started elsewhere (`monoShiftNs`
/// apart) and its realtime clock `realShiftNs` off (set by a test to step it).
final class ShiftedTime: TimeSource {
    let base: ManualEventLoop
    let monoShiftNs: Int64
    var realShiftNs: Int64 = 0
    init(_ base: ManualEventLoop, monoShiftNs: Int64) { self.base = base; self.monoShiftNs = monoShiftNs }
    func now() -> WallTime {
        let n = base.now()
        return WallTime(realtimeNs: n.realtimeNs + realShiftNs, monotonicNs: n.monotonicNs + monoShiftNs)
    }
}

/// One game clock on every screen of a fleet (docs/scoreboard.md): the primary decides, keeps and
/// publishes the clock; followers (whose monotonic clocks started an hour apart) show the same
/// time from the primary's realtime "running since", forward their controls, and show a warning
/// in place of the time when a system clock is not synchronised. Virtual time (`FleetRig`).
@Suite(.ownThreads) struct FleetClockTests {
    static let s: Int64 = 1_000_000_000
    let topic = "kioskd/group/hall/clock/score"

    func remainingMs(_ d: Daemon) -> Int? { d.clockAnswers(at: d.manager.time.now())?.first?.clock.remainingMs }
    func running(_ d: Daemon) -> Bool? { d.clockAnswers(at: d.manager.time.now())?.first?.clock.running }
    /// Each daemon brought up to now and its frame drawn (the followers' own scene timers run on
    /// their shifted clocks, not the rig loop's).
    func draw(_ rig: FleetRig, _ ds: [Daemon]) {
        for d in ds { d.manager.tick() }
        rig.loop.runPending()
    }
    func scene(_ d: Daemon) throws -> CounterScene { try #require(d.manager.scenes.first as? CounterScene) }
    func clock(_ d: Daemon, _ intent: ClockIntent, _ answers: Answers) { d.handle(.clock(intent: intent, scene: nil), reply: answers.reply) }
    func retained(_ rig: FleetRig) throws -> FleetClockState {
        try JSONDecoder().decode(FleetClockState.self, from: Data(try #require(rig.broker.retained[topic], "no retained clock state")))
    }

    /// A primary and two followers, the followers' monotonic clocks 1 h and 2 h ahead of the primary's.
    func fleet(_ rig: FleetRig) throws -> (Daemon, Daemon, Daemon, ShiftedTime) {
        let p = try rig.daemon(role: .primary, id: "p", clock: true)
        let t1 = ShiftedTime(rig.loop, monoShiftNs: 3600 * Self.s)
        let f1 = try rig.daemon(role: .follower, id: "f1", clock: true, time: t1)
        let f2 = try rig.daemon(role: .follower, id: "f2", clock: true, time: ShiftedTime(rig.loop, monoShiftNs: 7200 * Self.s))
        rig.settle()
        return (p, f1, f2, t1)
    }

    @Test func thePrimaryPublishesItsClockAndFollowersShowTheSameTenth() throws {
        let rig = FleetRig()
        let (p, f1, f2, _) = try fleet(rig)
        let answers = Answers()
        clock(p, .start, answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200])
        let s = try retained(rig)
        #expect(s.primary == "p" && s.seq == 1 && s.synced && s.clock.game.running && s.clock.game.remainingMs == 600_000)
        #expect(s.clock.game.sinceRealtimeNs == rig.loop.now().realtimeNs)

        rig.loop.advance(by: 7 * Self.s + 345_000_000)
        draw(rig, [p, f1, f2])
        #expect([p, f1, f2].map(remainingMs) == [592_655, 592_655, 592_655])
        #expect(try [f1, f2].map { try scene($0).clockFollowsFleet } == [true, true])
        // The same digits drawn: the three screens are the same picture.
        let picture = try p.manager.screenshotPNG()
        #expect(try f1.manager.screenshotPNG() == picture && f2.manager.screenshotPNG() == picture)

        // Stopped on the primary: the followers stop at the same instant's time.
        clock(p, .stop, answers)
        rig.settle()
        rig.loop.advance(by: 3 * Self.s)
        #expect([p, f1, f2].map(remainingMs) == [592_655, 592_655, 592_655] && [p, f1, f2].map(running) == [false, false, false])
        #expect(try retained(rig).seq == 2)
        // The follower keeps what it shows: its own record, on its own clocks.
        let kept = try #require(f1.state.load(GameClockRecord.stateKey(scene: "score")))
        #expect(try JSONDecoder().decode(GameClockRecord.self, from: Data(kept.utf8)).game.remainingMs == 592_655)
    }

    @Test func aFollowersControlGoesToThePrimaryAndIsAnsweredOnceThePrimaryKeptIt() throws {
        let rig = FleetRig()
        let (p, f1, f2, _) = try fleet(rig)
        let answers = Answers()
        clock(f1, .start, answers)
        rig.loop.step() // sent; nothing changes before the primary decides
        #expect(answers.list.isEmpty && running(f1) == false && running(p) == false)
        rig.settle()
        #expect(answers.list.map(\.status) == [200])
        #expect(try answers.list.first?.decode(ClockAnswer.self).clock.running == true)
        #expect([p, f1, f2].map(running) == [true, true, true])

        // A tap on the follower's clock stops it through the primary (a toggle goes as "stop").
        rig.loop.advance(by: 2 * Self.s)
        let band = try #require(try scene(f2).clockBand)
        let y = (Double(band.y) + Double(band.height) / 2) / 48
        _ = try scene(f2).handle(.gesture(.tap(x: 0.5, y: y)), now: f2.manager.time.now())
        rig.settle()
        #expect([p, f1, f2].map(running) == [false, false, false] && [p, f1, f2].map(remainingMs) == [598_000, 598_000, 598_000])
        let cmds = rig.broker.log.filter { $0.topic == topic + "/cmd" }.compactMap { try? JSONDecoder().decode(FleetClockCommand.self, from: Data($0.payload)) }
        #expect(cmds.map(\.intent) == [["start"], ["stop"]])

        // A value the primary's rules refuse is answered with its reason, and changes nothing.
        clock(f1, .set(ms: 5_940_000), answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200, 422])
        #expect(answers.list.last?.errorMessage?.contains("the period's length") == true)

        // Primary out of reach: 202 after ack_timeout_ms, applied once when it is back.
        try #require(rig.transports["p"]).setConnected(false)
        clock(f1, .adjust(ms: -10_000), answers)
        rig.settle()
        rig.loop.advance(by: 5 * Self.s)
        rig.settle()
        #expect(answers.list.map(\.status) == [200, 422, 202])
        try #require(rig.transports["p"]).setConnected(true)
        rig.loop.advance(by: 5 * Self.s) // resent
        rig.settle()
        rig.loop.advance(by: 5 * Self.s)
        rig.settle()
        #expect([p, f1, f2].map(remainingMs) == [588_000, 588_000, 588_000])
    }

    @Test func aFollowerWhoseClockIsNotSynchronisedShowsAWarningInsteadOfTheTime() throws {
        let rig = FleetRig()
        let (p, f1, f2, _) = try fleet(rig)
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: Self.s)
        draw(rig, [p, f1, f2])
        let synced = try f1.manager.screenshotPNG()

        f1.applyTimeSync(TimeSyncStatus(kernel: false, timesyncd: false))
        draw(rig, [f1])
        #expect(try scene(f1).clockWarning == "time not synchronised")
        #expect(try f1.manager.screenshotPNG() != synced, "the warning is not on screen")
        #expect(f1.clockAnswers(at: f1.manager.time.now())?.first?.warning?.contains("system clock of this kiosk ('f1') is not synchronised") == true)
        #expect(f1.warnings().contains { $0.contains("is not synchronised") })
        #expect(try scene(f2).clockWarning == nil && p.warnings().isEmpty)

        // Synchronised again: the time is back, the same as the primary's.
        f1.applyTimeSync(TimeSyncStatus(kernel: true, timesyncd: false))
        rig.loop.advance(by: Self.s)
        draw(rig, [p, f1])
        #expect(try scene(f1).clockWarning == nil && remainingMs(f1) == remainingMs(p))
        #expect(try f1.manager.screenshotPNG() == p.manager.screenshotPNG())

        // The primary's clock not synchronised: every follower says so in place of the time.
        p.applyTimeSync(TimeSyncStatus(kernel: false, timesyncd: false))
        rig.settle()
        #expect(try retained(rig).synced == false)
        #expect(try [f1, f2].map { try scene($0).clockWarning } == ["primary's time not synchronised", "primary's time not synchronised"])
        #expect(try scene(p).clockWarning == nil)
    }

    @Test func aFollowerFollowsItsRealtimeClockAtEachFrame() throws {
        let rig = FleetRig()
        let (p, f1, _, t1) = try fleet(rig)
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: 10 * Self.s)
        #expect(remainingMs(f1) == 590_000)
        // The follower's realtime clock is stepped 1.5 s ahead (NTP): the next frame places the
        // primary's "running since" again on its monotonic clock.
        t1.realShiftNs = 1_500_000_000
        f1.manager.tick()
        #expect(remainingMs(f1) == 588_500 && remainingMs(p) == 590_000)
        t1.realShiftNs = 0
        f1.manager.tick()
        #expect(remainingMs(f1) == 590_000)
    }

    @Test func aFollowerThatJoinsOrReturnsGetsTheRetainedClock() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p", clock: true)
        rig.settle()
        clock(p, .set(ms: 65_000), Answers())
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: 4 * Self.s)
        // Joins late, its monotonic clock an hour ahead: the retained state places it.
        let f = try rig.daemon(role: .follower, id: "f", clock: true, time: ShiftedTime(rig.loop, monoShiftNs: 3600 * Self.s))
        rig.settle()
        #expect(remainingMs(f) == 61_000 && running(f) == true)

        // Away while the primary stops and restarts the clock: back, it shows the primary's.
        let ft = try #require(rig.transports["f"])
        ft.setConnected(false)
        rig.loop.advance(by: Self.s)
        clock(p, .stop, Answers())
        rig.settle()
        rig.loop.advance(by: 2 * Self.s)
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: Self.s)
        #expect(remainingMs(f) == 57_000, "the follower runs on alone while away")
        ft.setConnected(true)
        rig.settle()
        #expect(remainingMs(f) == 59_000 && remainingMs(p) == 59_000)
    }

    @Test func aStateFromAnotherKioskOrWithAnOlderSeqIsNotShown() throws {
        let rig = FleetRig()
        let (p, f1, _, _) = try fleet(rig)
        clock(p, .start, Answers())
        rig.settle()
        let good = try retained(rig)
        var forged = good
        forged.seq = good.seq + 20_000
        forged.clock.game.remainingMs = 1_000
        rig.broker.publish(topic, Array(try JSONEncoder().encode(forged)), retain: false)
        var older = good
        older.seq = 0
        older.clock.game.remainingMs = 2_000
        rig.broker.publish(topic, Array(try JSONEncoder().encode(older)), retain: false)
        rig.settle()
        #expect(remainingMs(f1) == 600_000 && f1.fleet?.refusedStates == 1)
    }

    @Test func eachKioskReachesZeroAtItsOwnFrameAndALateRecordSoundsNoHorn() throws {
        let rig = FleetRig()
        let (p, f1, _, _) = try fleet(rig)
        var zeros: [String: [Int64]] = [:]
        for (d, id) in [(p, "p"), (f1, "f1")] { d.onClockEvent = { e in zeros[id, default: []].append(e.frameNs) } }
        clock(p, .set(ms: 2_000), Answers())
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: 2 * Self.s)
        draw(rig, [p, f1])
        // Each at the frame showing 0.0 on its own monotonic clock (the follower's an hour ahead).
        #expect(zeros["p"] == [rig.loop.now().monotonicNs] && zeros["f1"] == [rig.loop.now().monotonicNs + 3600 * Self.s])
        rig.loop.advance(by: Self.s)
        draw(rig, [p, f1])
        #expect(zeros.values.map(\.count) == [1, 1], "reported once")

        // A follower that joins after the period ended shows 0.0 and sounds nothing.
        let late = try rig.daemon(role: .follower, id: "f3", clock: true, time: ShiftedTime(rig.loop, monoShiftNs: 60 * Self.s))
        var lateZeros = 0
        late.onClockEvent = { _ in lateZeros += 1 }
        rig.settle()
        draw(rig, [late])
        #expect(remainingMs(late) == 0 && lateZeros == 0)
    }

    @Test func aFollowersNewScenesAfterAReloadShowThePrimarysClock() throws {
        let rig = FleetRig()
        let (p, f1, _, _) = try fleet(rig)
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: 3 * Self.s)
        #expect(throws: Never.self) { try f1.reload().get() }
        rig.settle()
        rig.loop.advance(by: Self.s)
        #expect(try scene(f1).clockFollowsFleet && remainingMs(f1) == 596_000 && remainingMs(p) == 596_000)
        // The new scene's controls still go to the primary.
        let answers = Answers()
        clock(f1, .stop, answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200] && running(p) == false && running(f1) == false)
    }

    @Test func aRestartedFollowerFollowsThePrimarysRecordAgainWithoutANewChange() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p", clock: true)
        let store = MemoryStateStore()
        let time = ShiftedTime(rig.loop, monoShiftNs: 3600 * Self.s)
        _ = try rig.daemon(role: .follower, id: "f", clock: true, time: time, store: store)
        clock(p, .start, Answers())
        rig.settle()
        rig.loop.advance(by: 2 * Self.s)
        // Restarted on the state it kept; the broker hands it the same state (seq 1) again.
        try #require(rig.transports["f"]).setConnected(false)
        let f = try rig.daemon(role: .follower, id: "f", clock: true, time: time, store: store)
        rig.settle()
        #expect(try scene(f).clockFollowsFleet && remainingMs(f) == 598_000)
        // It follows its realtime clock and its time truth as before.
        f.applyTimeSync(TimeSyncStatus(kernel: false, timesyncd: false))
        #expect(try scene(f).clockWarning == "time not synchronised")
    }
}
