import Testing

@testable import KioskPosix
import KioskCore
import KioskTesting

/// 2026-01-10 00:00:00 UTC.
private let day0: Int64 = 1_768_003_200
private let ns: Int64 = 1_000_000_000
private func at(_ h: Int, _ m: Int, _ s: Int = 0, day: Int64 = 0) -> Int64 { (day0 + day * 86_400 + Int64(h * 3600 + m * 60 + s)) * ns }

@Suite struct BacklightScheduleTests {
    private func policy(wake: Int = 30) throws -> BrightnessPolicy {
        BrightnessPolicy(blankSchedule: nil,
                         brightness: try BrightnessSchedule(parsing: ["07:00 100%", "22:00 20%", "01:00 off"], fadeSeconds: 600),
                         wakeSeconds: wake, zone: .fixed(0))
    }

    @Test func followsTheDayWithFadesOffAndTouch() throws {
        let loop = ManualEventLoop(monotonic: ns, realtime: at(12, 0))
        var applied: [(Int64, PanelState)] = []
        let c = BacklightScheduleController(scheduler: loop, policy: try policy()) { applied.append((loop.now(.realtime), $0)) }
        c.start()
        #expect(applied.map(\.1) == [.lit(percent: 100)])
        #expect(loop.pendingTimers == 1)
        #expect(loop.nextDeadline(.realtime) == at(22, 0))
        // The fade: one step a second from 22:00 to 22:10, monotone, ending at 20 %.
        loop.advance(by: at(22, 10) - at(12, 0))
        let fade = applied.dropFirst().map(\.1)
        #expect(fade.count == 600)
        let levels = fade.compactMap { if case .lit(let p) = $0 { return p } else { return nil } }
        #expect(levels == levels.sorted(by: >))
        #expect(levels.last == 20)
        #expect(applied[300].0 == at(22, 5) && applied[300].1 == .lit(percent: 60))
        // Quiet until 01:00: off.
        let count = applied.count
        loop.advance(by: at(1, 0, day: 1) - at(22, 10))
        #expect(applied.count == count + 1)
        #expect(applied.last?.0 == at(1, 0, day: 1))
        #expect(applied.last?.1 == .blank)
        // A touch wakes to the last lit level for 30 s.
        loop.advance(by: 30 * 60 * ns)
        #expect(c.touched())
        #expect(c.current == .lit(percent: 20))
        loop.advance(by: 30 * ns)
        #expect(c.current == .blank)
        #expect(applied.last?.0 == at(1, 30, 30, day: 1))
        // 07:00: lit at once (no fade out of off).
        loop.advance(by: at(7, 0, day: 1) - at(1, 30, 30, day: 1))
        #expect(c.current == .lit(percent: 100))
        #expect(applied.last?.0 == at(7, 0, day: 1))
        #expect(loop.pendingTimers == 1)
    }

    @Test func wallClockStepReevaluatesAtOnce() throws {
        let loop = ManualEventLoop(monotonic: ns, realtime: at(12, 0))
        var applied: [PanelState] = []
        let c = BacklightScheduleController(scheduler: loop, policy: try policy()) { applied.append($0) }
        c.start()
        // NTP sets the clock from 12:00 to 02:00: the off period.
        loop.setWallClock(at(2, 0, day: 1))
        #expect(applied == [.lit(percent: 100), .blank])
        #expect(loop.nextDeadline(.realtime) == at(7, 0, day: 1))
        #expect(loop.pendingTimers == 1)
    }

    @Test func touchWhileLitDoesNothingAndStopCancels() throws {
        let loop = ManualEventLoop(monotonic: ns, realtime: at(12, 0))
        var applied: [PanelState] = []
        let c = BacklightScheduleController(scheduler: loop, policy: try policy()) { applied.append($0) }
        c.start()
        #expect(!c.touched())
        c.stop()
        #expect(loop.pendingTimers == 0)
        loop.advance(by: 86_400 * ns)
        #expect(applied == [.lit(percent: 100)])
    }
}
