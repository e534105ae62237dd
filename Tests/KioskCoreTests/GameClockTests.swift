import Foundation
import Testing
import KioskTesting
@testable import KioskCore

/// Instants on a virtual timeline: `t(ms)` is `ms` milliseconds after an arbitrary origin
/// (the realtime clock far from the monotonic one, so a mix-up of the two shows).
private let realOrigin: Int64 = 1_790_000_000_000_000_000
private let monoOrigin: Int64 = 7_000_000_000
private func t(_ ms: Int64) -> WallTime { tNs(ms * 1_000_000) }
private func tNs(_ ns: Int64) -> WallTime { WallTime(realtimeNs: realOrigin + ns, monotonicNs: monoOrigin + ns) }
private func rules(_ length: Int = 600_000, periods: Int = 4, direction: ClockDirection = .down, tenthsBelow: Int = 60_000,
                   shot: Int? = nil, showsGame: Bool = true) -> GameClockRules {
    try! GameClockRules(periodLengthMs: length, periods: periods, direction: direction, tenthsBelowMs: min(tenthsBelow, length),
                        shotClockMs: shot, showsGameClock: showsGame)
}

@Suite struct GameClockStateTests {
    @Test func aStoppedClockKeepsItsTimeAndARunningOneCountsFromItsStart() {
        var c = GameClock(rules: rules())
        #expect(c.remainingMs(at: t(0)) == 600_000)
        #expect(c.remainingMs(at: t(90_000)) == 600_000)
        c = c.start(at: t(1_000)).0
        #expect(c.isRunning)
        #expect(c.remainingMs(at: t(1_000)) == 600_000)
        #expect(c.remainingMs(at: t(31_000)) == 570_000)
        c = c.stop(at: t(31_250)).0
        #expect(!c.isRunning)
        #expect(c.game == .stopped(remainingMs: 569_750))
        #expect(c.remainingMs(at: t(500_000)) == 569_750)
        c = c.start(at: t(40_000)).0
        #expect(c.remainingMs(at: t(40_750)) == 569_000)
    }

    @Test func stoppingBetweenTwoMillisecondsKeepsTheLaterOne() {
        let c = GameClock(rules: rules()).start(at: t(0)).0.stop(at: tNs(1_500_000)).0
        // 1.5 ms run: 599 998.5 ms left, kept as 599 999 (never less than was left).
        #expect(c.game == .stopped(remainingMs: 599_999))
    }

    @Test func thePeriodEndsAtTheExactInstantTimeRunsOutAndTheClockStopsThere() {
        let c = GameClock(rules: rules(60_000)).start(at: t(5_000)).0
        #expect(c.upcomingEvents == [GameClock.Event(.periodEnded(period: 1), monotonicNs: monoOrigin + 65_000_000_000)])
        // One nanosecond before: nothing yet.
        let (before, none) = c.advanced(to: tNs(64_999_999_999))
        #expect(none.isEmpty)
        #expect(before.isRunning)
        // A frame 7 ms late learns the exact instant it happened.
        let (after, events) = c.advanced(to: t(65_007))
        #expect(events == [GameClock.Event(.periodEnded(period: 1), monotonicNs: monoOrigin + 65_000_000_000)])
        #expect(after.game == .stopped(remainingMs: 0))
        #expect(after.advanced(to: t(70_000)).1.isEmpty, "the event is reported once")
        // Starting at zero does nothing.
        #expect(!after.start(at: t(70_000)).0.isRunning)
    }

    @Test func anOperationAfterTheEndStillReportsTheEndFirst() throws {
        let c = GameClock(rules: rules(10_000)).start(at: t(0)).0
        let (stopped, events) = c.stop(at: t(12_000))
        #expect(events.map(\.monotonicNs) == [monoOrigin + 10_000_000_000])
        #expect(stopped.game == .stopped(remainingMs: 0))
        let (next, moreEvents) = try stopped.nextPeriod(at: t(13_000))
        #expect(moreEvents.isEmpty)
        #expect(next.period == 2)
        #expect(next.game == .stopped(remainingMs: 10_000))
    }

    @Test func setAdjustAndTheirLimits() throws {
        var c = GameClock(rules: rules()).start(at: t(0)).0
        c = try c.set(shownMs: 450_500, at: t(10_000)).0
        #expect(c.isRunning, "set keeps a running clock running")
        #expect(c.remainingMs(at: t(11_000)) == 449_500)
        c = c.adjusted(byMs: 1_000, at: t(11_000)).0
        #expect(c.remainingMs(at: t(11_000)) == 450_500)
        c = c.adjusted(byMs: -60_000, at: t(11_000)).0
        #expect(c.remainingMs(at: t(11_000)) == 390_500)
        // Above the period: kept at its length.
        #expect(c.adjusted(byMs: 600_000, at: t(11_000)).0.remainingMs(at: t(11_000)) == 600_000)
        #expect(throws: KioskError.self) { try c.set(shownMs: 600_100, at: t(11_000)) }
        do {
            _ = try c.set(shownMs: 720_000, at: t(11_000))
        } catch let e as KioskError {
            #expect(e.message.contains("12:00"), "\(e.message)")
            #expect(e.message.contains("10:00"), "\(e.message)")
        }
        // Adjusting a running clock down to zero ends the period now.
        let (ended, events) = c.adjusted(byMs: -500_000, at: t(12_000))
        #expect(events == [GameClock.Event(.periodEnded(period: 1), monotonicNs: monoOrigin + 12_000_000_000)])
        #expect(ended.game == .stopped(remainingMs: 0))
    }

    @Test func periodsAndReset() throws {
        var c = GameClock(rules: rules(periods: 2)).start(at: t(0)).0
        c = try c.nextPeriod(at: t(5_000)).0
        #expect(c.period == 2)
        #expect(c.game == .stopped(remainingMs: 600_000))
        #expect(throws: KioskError.self) { try c.nextPeriod(at: t(6_000)) }
        #expect(throws: KioskError.self) { try c.period(3, at: t(6_000)) }
        #expect(throws: KioskError.self) { try c.period(0, at: t(6_000)) }
        c = try c.period(1, at: t(6_000)).0
        #expect(c.period == 1)
        c = c.start(at: t(7_000)).0.reset(at: t(9_000)).0
        #expect(c == GameClock(rules: rules(periods: 2)))
    }

    @Test func countingUpShowsTimePlayedAndAdjustMovesWhatIsShown() throws {
        var c = GameClock(rules: rules(45 * 60_000, direction: .up)).start(at: t(0)).0
        #expect(c.shownMs(at: t(61_000)) == 61_000)
        #expect(c.face(at: t(61_000)).text == "1:01")
        c = try c.set(shownMs: 10 * 60_000, at: t(61_000)).0
        #expect(c.face(at: t(61_000)).text == "10:00")
        c = c.adjusted(byMs: 1_000, at: t(61_000)).0
        #expect(c.face(at: t(61_000)).text == "10:01")
        // The half ends at 45:00 shown.
        let end = c.upcomingEvents.first?.monotonicNs
        #expect(end == monoOrigin + (61_000 + 35 * 60_000 - 1_000) * 1_000_000)
    }
}

@Suite struct ShotClockTests {
    @Test func theShotClockRunsWithTheGameClockAndResetsOnItsOwn() throws {
        var c = GameClock(rules: rules(shot: 24_000))
        #expect(c.shotFace(at: t(0))?.text == "24")
        c = c.start(at: t(0)).0
        #expect(c.shotRemainingMs(at: t(10_000)) == 14_000)
        c = try c.shotReset(at: t(10_000)).0
        #expect(c.shot?.isRunning == true, "a reset while running keeps it running")
        #expect(c.shotRemainingMs(at: t(11_000)) == 23_000)
        c = try c.shotReset(toMs: 14_000, at: t(11_000)).0
        #expect(c.shotRemainingMs(at: t(11_000)) == 14_000)
        #expect(throws: KioskError.self) { try c.shotReset(toMs: 25_000, at: t(11_000)) }
        c = c.stop(at: t(12_000)).0
        #expect(c.shot == .stopped(remainingMs: 13_000), "it stops when the game clock stops")
    }

    @Test func itExpiresAtItsExactInstantAndTheGameClockRunsOn() {
        let c = GameClock(rules: rules(shot: 24_000)).start(at: t(1_000)).0
        let (after, events) = c.advanced(to: t(25_033))
        #expect(events == [GameClock.Event(.shotClockExpired, monotonicNs: monoOrigin + 25_000_000_000)])
        #expect(after.shot == .stopped(remainingMs: 0))
        #expect(after.game.isRunning)
        #expect(after.shotFace(at: t(25_033))?.text == "0.0")
    }

    @Test func whenThePeriodEndsFirstTheShotClockStopsAtThatInstant() {
        let c = GameClock(rules: rules(10_000, shot: 24_000)).start(at: t(0)).0
        let (after, events) = c.advanced(to: t(30_000))
        #expect(events == [GameClock.Event(.periodEnded(period: 1), monotonicNs: monoOrigin + 10_000_000_000)])
        #expect(after.shot == .stopped(remainingMs: 14_000))
    }

    @Test func bothEndingInOneFrameAreReportedInOrder() {
        let c = GameClock(rules: rules(20_000, shot: 19_000)).start(at: t(0)).0
        let (_, events) = c.advanced(to: t(21_000))
        #expect(events.map(\.kind) == [.shotClockExpired, .periodEnded(period: 1)])
    }

    @Test func withoutAGameClockStartAndStopRunOnlyTheShotClock() throws {
        var c = GameClock(rules: rules(shot: 30_000, showsGame: false)).start(at: t(0)).0
        #expect(c.isRunning)
        #expect(!c.game.isRunning)
        #expect(c.shotRemainingMs(at: t(5_000)) == 25_000)
        c = try c.applying(.toggle, at: t(5_000)).0
        #expect(!c.isRunning)
        #expect(c.nextChangeNs(after: t(5_000)) == nil)
    }

    @Test func noShotClockWithoutOne() {
        let c = GameClock(rules: rules())
        #expect(c.shotFace(at: t(0)) == nil)
        #expect(throws: KioskError.self) { try c.shotReset(at: t(0)) }
    }
}

@Suite struct GameClockFaceTests {
    private func face(_ c: GameClock, _ ms: Int64) -> String { c.face(at: t(ms)).text }

    @Test func stoppedAtTheStartItShowsTheWholePeriod() {
        let c = GameClock(rules: rules())
        #expect(face(c, 0) == "10:00")
        #expect(c.nextChangeNs(after: t(0)) == nil, "a stopped clock needs no frame")
    }

    @Test func theFirstSecondShowsTheFullTimeAndTheNextSecondOnTheBoundary() {
        let c = GameClock(rules: rules()).start(at: t(0)).0
        #expect(face(c, 0) == "10:00")
        #expect(c.face(at: tNs(999_999_999)).text == "10:00")
        #expect(face(c, 1_000) == "9:59")
        #expect(c.nextChangeNs(after: t(0)) == monoOrigin + 1_000_000_000)
        #expect(c.nextChangeNs(after: t(1_000)) == monoOrigin + 2_000_000_000)
        #expect(c.nextChangeNs(after: t(1_500)) == monoOrigin + 2_000_000_000)
    }

    @Test func underTheThresholdTenthsAppearAfterOneMinute() {
        // 1:00.5 left at t = 0.
        let c = GameClock(rules: rules()).start(at: t(0)).0
        let at60_5 = c.set(shownMsUnchecked: 60_500, at: t(0))
        #expect(face(at60_5, 0) == "1:01")
        #expect(face(at60_5, 500) == "1:00")
        #expect(at60_5.nextChangeNs(after: t(0)) == monoOrigin + 500_000_000)
        #expect(face(at60_5, 599) == "1:00")
        // 59.9 left: tenths.
        #expect(face(at60_5, 600) == "59.9")
        #expect(at60_5.nextChangeNs(after: t(500)) == monoOrigin + 600_000_000)
        #expect(at60_5.nextChangeNs(after: t(600)) == monoOrigin + 700_000_000)
        #expect(face(at60_5, 51_450) == "9.1")
        #expect(face(at60_5, 60_400) == "0.1")
        #expect(c.set(shownMsUnchecked: 60_500, at: t(0)).face(at: tNs(60_499_999_999)).text == "0.1")
        #expect(face(at60_5, 60_500) == "0.0")
        #expect(at60_5.nextChangeNs(after: t(60_400)) == monoOrigin + 60_500_000_000)
        #expect(at60_5.nextChangeNs(after: t(60_500)) == nil)
    }

    @Test func aStoppedClockUnderTheThresholdShowsItsTenth() throws {
        let c = try GameClock(rules: rules()).set(shownMs: 12_340, at: t(0)).0
        // 12.34 s left is shown as 12.4: rounded up, like every moment between 12.3 and 12.4.
        #expect(face(c, 0) == "12.4")
        #expect(c.nextChangeNs(after: t(0)) == nil)
    }

    @Test func aThresholdOfZeroNeverShowsTenths() {
        let c = GameClock(rules: rules(tenthsBelow: 0)).start(at: t(0)).0
        #expect(face(c, 599_100) == "0:01")
        #expect(face(c, 600_000) == "0:00")
        #expect(c.nextChangeNs(after: t(599_100)) == monoOrigin + 600_000_000_000)
    }

    @Test func countingUpRoundsDownAndReachesTheLengthAtTheEnd() {
        let c = GameClock(rules: rules(90_000, direction: .up)).start(at: t(0)).0
        #expect(face(c, 0) == "0:00")
        #expect(face(c, 999) == "0:00")
        #expect(face(c, 1_000) == "0:01")
        #expect(face(c, 89_999) == "1:29")
        #expect(face(c, 90_000) == "1:30")
        #expect(face(c, 95_000) == "1:30")
        #expect(c.nextChangeNs(after: t(89_500)) == monoOrigin + 90_000_000_000)
        #expect(c.nextChangeNs(after: t(90_000)) == nil)
    }

    @Test func theShotClockShowsSecondsThenTenthsUnderFive() {
        let c = GameClock(rules: rules(shot: 24_000)).start(at: t(0)).0
        #expect(c.shotFace(at: t(0))?.text == "24")
        #expect(c.shotFace(at: t(18_999))?.text == "6")
        #expect(c.shotFace(at: t(19_000))?.text == "5")
        #expect(c.shotFace(at: t(19_100))?.text == "4.9")
        // The next change is the earlier of the two clocks' (here the shot clock's tenths).
        #expect(c.nextChangeNs(after: t(19_100)) == monoOrigin + 19_200_000_000)
    }

    @Test func framesWhileRunningAreOneASecondAboveTheThresholdAndTenUnderIt() {
        var c = GameClock(rules: rules(120_000)).start(at: t(0)).0
        var wakes = 0
        var now = t(0)
        while let next = c.nextChangeNs(after: now) {
            now = WallTime(realtimeNs: now.realtimeNs + next - now.monotonicNs, monotonicNs: next)
            c = c.advanced(to: now).0
            wakes += 1
        }
        // 60 whole seconds (2:00 → 1:00), then 600 tenths (59.9 → 0.0).
        #expect(wakes == 60 + 600)
        #expect(c.face(at: now).text == "0.0")
    }

    @Test func messageTexts() {
        #expect(ClockText.minutesSeconds(600_000) == "10:00")
        #expect(ClockText.minutesSeconds(45_500) == "0:45.5")
        #expect(ClockText.seconds(14_000) == "14")
        #expect(ClockText.seconds(4_500) == "4.5")
        #expect(GameClock(rules: rules()).periodText == "P1")
    }
}

@Suite struct GameClockDriftTests {
    @Test func twentyMinutesOfJitteryFramesLandExactlyOnTheTruth() {
        var rng = SeededRandom(seed: 20)
        let start: Int64 = 123_456_789  // in odd nanoseconds
        var c = GameClock(rules: rules(20 * 60_000)).start(at: tNs(start)).0
        var nowNs = start
        var ended: [GameClock.Event] = []
        while ended.isEmpty {
            nowNs += Int64.random(in: 8_000_000...25_000_000, using: &rng)
            let (next, events) = c.advanced(to: tNs(nowNs))
            c = next
            ended += events
            if ended.isEmpty {
                // The truth: 20:00 less the time since the start, as the test counts it.
                #expect(c.game.remainingNs(at: monoOrigin + nowNs) == 1_200_000_000_000 - (nowNs - start))
            }
        }
        #expect(ended == [GameClock.Event(.periodEnded(period: 1), monotonicNs: monoOrigin + start + 1_200_000_000_000)])
    }

    @Test func twentyMinutesOfJitteryFramesWithStopsLandExactlyOnTheTruth() {
        var rng = SeededRandom(seed: 32)
        var c = GameClock(rules: rules(20 * 60_000)).start(at: tNs(0)).0
        var nowNs: Int64 = 0
        // The truth, kept by the test itself: nanoseconds run, summed over the running stretches.
        var runNs: Int64 = 0
        var running = true
        var ended: [GameClock.Event] = []
        var frames = 0
        var stops: Int64 = 0
        while ended.isEmpty {
            // A frame 8…25 ms after the last (60 Hz with heavy jitter), in odd nanoseconds.
            let step = Int64.random(in: 8_000_000...25_000_000, using: &rng)
            if running { runNs += step }
            nowNs += step
            frames += 1
            // Now and then the operator stops for a while, then starts again.
            if frames % 2_000 == 0 {
                c = c.stop(at: tNs(nowNs)).0
                running = false
                stops += 1
            } else if frames % 2_000 == 300 {
                c = c.start(at: tNs(nowNs)).0
                running = true
            }
            let (next, events) = c.advanced(to: tNs(nowNs))
            c = next
            ended += events
            if ended.isEmpty {
                let truthNs = 20 * 60_000_000_000 - runNs
                let shown = c.game.remainingNs(at: monoOrigin + nowNs)
                // Stopping keeps whole milliseconds (rounded up), so each stop may keep up to
                // 1 ms more than the truth; the clock never shows less.
                #expect(shown >= truthNs && shown - truthNs < (stops + 1) * 1_000_000, "frame \(frames)")
            }
        }
        // The end lands on the instant the running stretches add up to 20:00 (within the
        // sub-millisecond kept at each stop).
        #expect(ended.count == 1)
        let overshoot = runNs - 20 * 60_000_000_000  // how far past the truth's end this frame is
        let truthEnd = monoOrigin + nowNs - overshoot
        #expect(ended[0].monotonicNs >= truthEnd && ended[0].monotonicNs - truthEnd < (stops + 1) * 1_000_000)
        #expect(stops > 30, "the run had its stops")
        #expect(c.face(at: tNs(nowNs)).text == "0.0")
    }
}

@Suite struct ClockIntentTests {
    @Test func eachWordBecomesItsIntent() throws {
        #expect(try ClockIntent.parse(["start"]) == .start)
        #expect(try ClockIntent.parse(["stop"]) == .stop)
        #expect(try ClockIntent.parse(["toggle"]) == .toggle)
        #expect(try ClockIntent.parse(["set", "7:30"]) == .set(ms: 450_000))
        #expect(try ClockIntent.parse(["set", "0:45.5"]) == .set(ms: 45_500))
        #expect(try ClockIntent.parse(["set", "12:00"]) == .set(ms: 720_000))
        #expect(try ClockIntent.parse(["adjust", "+1"]) == .adjust(ms: 1_000))
        #expect(try ClockIntent.parse(["adjust", "-60"]) == .adjust(ms: -60_000))
        #expect(try ClockIntent.parse(["adjust", "+0.5"]) == .adjust(ms: 500))
        #expect(try ClockIntent.parse(["period", "3"]) == .period(3))
        #expect(try ClockIntent.parse(["period", "next"]) == .nextPeriod)
        #expect(try ClockIntent.parse(["reset"]) == .reset)
        #expect(try ClockIntent.parse(["reset", "--shot"]) == .shotReset(ms: nil))
        #expect(try ClockIntent.parse(["reset", "--shot", "14"]) == .shotReset(ms: 14_000))
    }

    private func message(_ words: [String]) -> String {
        do { _ = try ClockIntent.parse(words); return "parsed" } catch let e as KioskError { return e.message } catch { return "\(error)" }
    }

    @Test func errorsNameTheBadArgument() {
        #expect(message(["set", "7:75"]) == "set: '7:75' is not MM:SS[.t] (seconds 0–59)")
        #expect(message(["set", "7"]).hasPrefix("set: '7' is not MM:SS[.t] (minutes, a colon"))
        #expect(message(["set", "100:00"]) == "set: '100:00' is not MM:SS[.t] (minutes 0–99)")
        #expect(message(["set", "7:3"]) == "set: '7:3' is not MM:SS[.t] (seconds 0–59)")
        #expect(message(["set", "7:30.55"]) == "set: '7:30.55' is not MM:SS[.t] (one digit of tenths)")
        #expect(message(["set", "٧:30"]) == "set: '٧:30' is not MM:SS[.t] (minutes 0–99)")
        #expect(message(["set"]).hasPrefix("set: needs a time MM:SS[.t]"))
        #expect(message(["set", "1:00", "2:00"]).hasPrefix("set: takes one value"))
        #expect(message(["adjust", "one"]).hasPrefix("adjust: 'one' is not ±SECONDS"))
        #expect(message(["adjust", "+1.25"]).hasPrefix("adjust: '+1.25' is not ±SECONDS"))
        #expect(message(["adjust", "+9999"]) == "adjust: '+9999' is more than 5999.9 s (99:59.9)")
        #expect(message(["period", "0"]) == "period: '0' is not a period number (1, 2, …) or next")
        #expect(message(["reset", "--all"]) == "reset: unknown option '--all' (expected --shot)")
        #expect(message(["reset", "--shot", "-3"]).hasPrefix("reset --shot: '-3' is not SECONDS"))
        #expect(message(["reset", "--shot", "0"]) == "reset --shot: '0' is not a number of seconds above zero")
        #expect(message(["start", "now"]) == "start: takes no value, got 'now'")
        #expect(message(["go"]).hasPrefix("clock: unknown action 'go'"))
        #expect(message([]).hasPrefix("clock: expected clock start|stop"))
    }

    @Test func anIntentRoundTripsThroughJSON() throws {
        let all: [ClockIntent] = [.start, .stop, .toggle, .set(ms: 1), .adjust(ms: -1), .period(2), .nextPeriod, .reset, .shotReset(ms: nil), .shotReset(ms: 14_000)]
        for i in all {
            let data = try JSONEncoder().encode(i)
            #expect(try JSONDecoder().decode(ClockIntent.self, from: data) == i)
        }
    }
}

@Suite struct GameClockRecordTests {
    private func roundTrip(_ r: GameClockRecord) throws -> GameClockRecord {
        try JSONDecoder().decode(GameClockRecord.self, from: JSONEncoder().encode(r))
    }

    @Test func aRunningClockResumesAfterAKillInTheSameBoot() throws {
        let r = rules(shot: 24_000)
        let c = GameClock(rules: r).start(at: t(10_000)).0
        let kept = try roundTrip(GameClockRecord(c, bootID: "boot-a"))
        #expect(kept.version == 1)
        // Restarted 3.5 s later (same boot); the realtime clock was stepped by an hour meanwhile,
        // which must not matter.
        let now = WallTime(realtimeNs: t(13_500).realtimeNs + 3_600_000_000_000, monotonicNs: t(13_500).monotonicNs)
        let back = try kept.clock(rules: r, now: now, bootID: "boot-a")
        #expect(back.remainingMs(at: now) == 596_500)
        #expect(back.shotRemainingMs(at: now) == 20_500)
        #expect(back.remainingMs(at: t(20_000)) == c.remainingMs(at: t(20_000)))
    }

    @Test func afterARebootTheRealtimeClockGivesTheTimeSince() throws {
        let r = rules()
        let c = GameClock(rules: r).start(at: t(10_000)).0
        let kept = GameClockRecord(c, bootID: "boot-a")
        // A new boot: the monotonic clock started again near zero; 40 s passed in real time.
        let now = WallTime(realtimeNs: t(50_000).realtimeNs, monotonicNs: 3_000_000_000)
        let back = try kept.clock(rules: r, now: now, bootID: "boot-b")
        #expect(back.remainingMs(at: now) == 560_000)
        let end = try #require(back.upcomingEvents.first)
        #expect(end.monotonicNs == Int64(563_000_000_000))
    }

    @Test func aStoppedClockComesBackAsItWasAndTheConfigsLimitsApply() throws {
        let c = try GameClock(rules: rules(periods: 4, shot: 24_000)).period(4, at: t(0)).0.set(shownMs: 300_000, at: t(0)).0
        let kept = GameClockRecord(c, bootID: "a")
        #expect(try kept.clock(rules: rules(periods: 4, shot: 24_000), now: t(99_000), bootID: "b") == c)
        // Fewer periods, a shorter period, no shot clock now.
        let smaller = try kept.clock(rules: rules(240_000, periods: 2), now: t(0), bootID: "a")
        #expect(smaller.period == 2)
        #expect(smaller.game == .stopped(remainingMs: 240_000))
        #expect(smaller.shot == nil)
    }

    @Test func aRecordItCannotReadIsRefusedNamingWhy() throws {
        var kept = GameClockRecord(GameClock(rules: rules()), bootID: "a")
        kept.version = 2
        #expect(throws: KioskError.state("game clock record: version 2 is not known (this kioskd reads version 1)")) {
            try kept.clock(rules: rules(), now: t(0), bootID: "a")
        }
        kept.version = 1
        kept.game = GameClockRecord.RunRecord(.running(since: t(0), remainingMs: 5))
        kept.game.sinceMonotonicNs = nil
        #expect(throws: KioskError.self) { try kept.clock(rules: rules(), now: t(0), bootID: "a") }
    }
}

@Suite struct GameClockRulesTests {
    @Test func rulesAreCheckedWhenMade() {
        #expect(throws: GameClockRules.Invalid.self) { try GameClockRules(periodLengthMs: 0) }
        #expect(throws: GameClockRules.Invalid.self) { try GameClockRules(periods: 0) }
        #expect(throws: GameClockRules.Invalid.self) { try GameClockRules(periodLengthMs: 30_000, tenthsBelowMs: 60_000) }
        #expect(throws: GameClockRules.Invalid.self) { try GameClockRules(shotClockMs: 100_000) }
        #expect(throws: GameClockRules.Invalid.self) { try GameClockRules(showsGameClock: false) }
        #expect((try? GameClockRules(shotClockMs: 24_000, showsGameClock: false)) != nil)
    }
}

extension GameClock {
    /// Test helper: set without the throwing check (the values used are in range).
    func set(shownMsUnchecked ms: Int, at now: WallTime) -> GameClock { try! set(shownMs: ms, at: now).0 }
}
