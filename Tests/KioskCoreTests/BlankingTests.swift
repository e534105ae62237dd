import Testing
@testable import KioskCore

/// 2026-01-10 00:00:00 UTC.
private let day0: Int64 = 1_768_003_200
private func at(_ h: Int, _ m: Int, _ s: Int = 0, day: Int64 = 0) -> Int64 { day0 + day * 86_400 + Int64(h * 3600 + m * 60 + s) }

@Suite struct BlankingTests {
    @Test func parsesTimesAndSchedules() throws {
        let s = try BlankSchedule(parsing: "23:00-07:00")
        #expect(s.off == (try TimeOfDay(hour: 23, minute: 0)))
        #expect(s.on == (try TimeOfDay(hour: 7, minute: 0)))
        #expect(s.description == "23:00-07:00")
        #expect(try BlankSchedule(parsing: " 9:05 – 17:30 ").description == "09:05-17:30")
    }

    @Test(arguments: ["23:00", "23:00-", "25:00-07:00", "23:60-07:00", "ab:cd-07:00", "07:00-07:00", "7-8", "23:00-07:00-08:00"])
    func rejectsBadSchedules(_ text: String) {
        #expect {
            _ = try BlankSchedule(parsing: text)
        } throws: { e in
            guard let k = e as? KioskError else { return false }
            return k.kind == .config && k.message.contains("blank schedule \"\(text)\"")
        }
    }

    @Test func blankAcrossMidnight() throws {
        let s = try BlankSchedule(parsing: "23:00-07:00")
        #expect(!s.isBlank(at: at(22, 59, 59), zone: .fixed(0)))
        #expect(s.isBlank(at: at(23, 0), zone: .fixed(0)))
        #expect(s.isBlank(at: at(0, 0), zone: .fixed(0)))
        #expect(s.isBlank(at: at(6, 59, 59), zone: .fixed(0)))
        #expect(!s.isBlank(at: at(7, 0), zone: .fixed(0)))
        #expect(!s.isBlank(at: at(12, 0), zone: .fixed(0)))
    }

    @Test func blankWithinOneDay() throws {
        let s = try BlankSchedule(parsing: "12:30-13:00")
        #expect(!s.isBlank(at: at(12, 29), zone: .fixed(0)))
        #expect(s.isBlank(at: at(12, 30), zone: .fixed(0)))
        #expect(!s.isBlank(at: at(13, 0), zone: .fixed(0)))
        #expect(!s.isBlank(at: at(23, 30), zone: .fixed(0)))
    }

    @Test func localOffsetIsApplied() throws {
        let s = try BlankSchedule(parsing: "23:00-07:00")
        // 21:30 UTC is 23:30 at UTC+2: blank there, not in UTC.
        #expect(s.isBlank(at: at(21, 30), zone: .fixed(7200)))
        #expect(!s.isBlank(at: at(21, 30), zone: .fixed(0)))
    }

    @Test func nextTransitions() throws {
        let s = try BlankSchedule(parsing: "23:00-07:00")
        #expect(s.nextTransition(after: at(12, 0), zone: .fixed(0)) == at(23, 0))
        #expect(s.nextTransition(after: at(23, 0), zone: .fixed(0)) == at(7, 0, day: 1))
        #expect(s.nextTransition(after: at(3, 0), zone: .fixed(0)) == at(7, 0))
        #expect(s.nextTransition(after: at(7, 0), zone: .fixed(0)) == at(23, 0))
        // UTC+2: 23:00 local is 21:00 UTC.
        #expect(s.nextTransition(after: at(12, 0), zone: .fixed(7200)) == at(21, 0))
    }

    @Test func nextTransitionAcrossDaylightSaving() throws {
        // A zone at UTC+1 that moves to UTC+2 at 01:00 UTC on day 0 (02:00 local → 03:00).
        let switchAt = at(1, 0)
        let zone = LocalZone.custom { $0 < switchAt ? 3600 : 7200 }
        let s = try BlankSchedule(parsing: "23:00-07:00")
        // At 22:00 UTC the day before (23:00 local, blank), the panel comes on at 07:00 local = 05:00 UTC.
        let t = s.nextTransition(after: at(22, 0, day: -1), zone: zone)
        #expect(t == at(5, 0))
        #expect(!s.isBlank(at: t, zone: zone))
        #expect(s.isBlank(at: t - 1, zone: zone))
    }

    @Test func wakeOnTouch() throws {
        var p = BlankPolicy(schedule: try BlankSchedule(parsing: "23:00-07:00"), wakeSeconds: 30, zone: .fixed(0))
        #expect(!p.shouldBlank(at: at(22, 0)))
        #expect(p.touched(at: at(22, 0)) == false)       // lit anyway: nothing to wake
        #expect(p.shouldBlank(at: at(23, 30)))
        #expect(p.touched(at: at(23, 30)) == true)
        #expect(!p.shouldBlank(at: at(23, 30, 29)))
        #expect(p.shouldBlank(at: at(23, 30, 30)))
        #expect(p.nextChange(after: at(23, 30, 10)) == at(23, 30, 30))
        #expect(p.touched(at: at(23, 30, 20)) == true)   // another touch restarts the time
        #expect(!p.shouldBlank(at: at(23, 30, 45)))
        #expect(p.shouldBlank(at: at(23, 30, 50)))
        #expect(p.nextChange(after: at(23, 31)) == at(7, 0, day: 1))
    }

    @Test func noWakeWhenDisabledAndNoSchedule() throws {
        var p = BlankPolicy(schedule: try BlankSchedule(parsing: "23:00-07:00"), wakeSeconds: 0, zone: .fixed(0))
        #expect(p.touched(at: at(23, 30)) == false)
        #expect(p.shouldBlank(at: at(23, 30, 1)))
        let none = BlankPolicy(schedule: nil, wakeSeconds: 30, zone: .fixed(0))
        #expect(!none.shouldBlank(at: at(23, 30)))
        #expect(none.nextChange(after: at(23, 30)) == nil)
    }

    @Test func systemZoneMatchesLocaltime() throws {
        let s = try BlankSchedule(parsing: "00:00-12:00")
        let now = nowNanos(.realtime) / 1_000_000_000
        let sod = LocalZone.system.secondsSinceMidnight(at: now)
        #expect(s.isBlank(at: now) == (sod < 12 * 3600))
    }
}
