import Testing
import Foundation
@testable import KioskCore

/// 2026-01-10 00:00:00 UTC.
private let day0: Int64 = 1_768_003_200
private func at(_ h: Int, _ m: Int, _ s: Int = 0, day: Int64 = 0) -> Int64 { day0 + day * 86_400 + Int64(h * 3600 + m * 60 + s) }
private let ns: Int64 = 1_000_000_000

/// Europe/Berlin from the system's zone database (CET/CEST).
private let berlin = LocalZone.custom { t in
    TimeZone(identifier: "Europe/Berlin")!.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(t)))
}
/// 2026-03-29 00:00:00 UTC (daylight saving starts at 01:00 UTC: 02:00 CET → 03:00 CEST).
private let springDay: Int64 = 1_774_742_400
/// 2026-10-25 00:00:00 UTC (daylight saving ends at 01:00 UTC: 03:00 CEST → 02:00 CET).
private let autumnDay: Int64 = 1_792_886_400

private func schedule(_ texts: [String], fade: Int = 0) throws -> BrightnessSchedule {
    try BrightnessSchedule(parsing: texts, fadeSeconds: fade)
}

@Suite struct WallBrightnessScheduleTests {
    @Test func parsesPeriodsAndLevels() throws {
        #expect(try BrightnessPeriod(parsing: "22:00 20%") == BrightnessPeriod(start: try TimeOfDay(hour: 22, minute: 0), level: .percent(20)))
        #expect(try BrightnessPeriod(parsing: " 1:00  off ").level == .off)
        #expect(try BrightnessPeriod(parsing: "07:00=100").description == "07:00 100%")
        #expect(try BrightnessPeriod(parsing: "07:00 12.5%").description == "07:00 12.5%")
        let s = try schedule(["22:00 20%", "07:00 100%", "01:00 off"])
        #expect(s.description == "01:00 off, 07:00 100%, 22:00 20%")
    }

    @Test(arguments: [
        ("22:00", "brightness period \"22:00\" is not \"HH:MM LEVEL\" (e.g. \"22:00 20%\" or \"01:00 off\")"),
        ("25:00 20%", "brightness period \"25:00 20%\": time \"25:00\": hour 25 is not in 0…23"),
        ("22:00 0%", "brightness period \"22:00 0%\": brightness \"0%\" is not in 1…100 % (use \"off\" to blank the panel)"),
        ("22:00 150", "brightness period \"22:00 150\": brightness \"150\" is not in 1…100 % (use \"off\" to blank the panel)"),
        ("22:00 dim", "brightness period \"22:00 dim\": brightness \"dim\" is not a percentage (e.g. \"40%\") or \"off\""),
    ])
    func rejectsBadPeriods(_ text: String, _ message: String) {
        #expect(throws: KioskError.config(message)) { _ = try BrightnessPeriod(parsing: text) }
    }

    @Test func rejectsBadSchedules() {
        #expect(throws: KioskError.config("brightness schedule has no periods")) { _ = try schedule([]) }
        #expect(throws: KioskError.config("brightness schedule has two periods starting at 07:00 (\"07:00 100%\" and \"07:00 off\")")) {
            _ = try schedule(["07:00 100%", "07:00 off"])
        }
        #expect(throws: KioskError.config("display.brightness.schedule[1]: brightness period \"23:00 loud\": brightness \"loud\" is not a percentage (e.g. \"40%\") or \"off\"")) {
            _ = try BrightnessSettingsParser.schedule(["07:00 100%", "23:00 loud"], fadeSeconds: 0)
        }
        #expect(throws: KioskError.config("display.brightness.fade_seconds: brightness fade -5 s is not in 0…86400")) {
            _ = try BrightnessSettingsParser.schedule(["07:00 100%"], fadeSeconds: -5)
        }
    }

    @Test func levelsAcrossMidnightWithoutFades() throws {
        let s = try schedule(["07:00 100%", "22:00 20%", "01:00 off"])
        let z = LocalZone.fixed(0)
        #expect(s.percent(atNanos: at(12, 0) * ns, zone: z) == 100)
        #expect(s.percent(atNanos: at(21, 59, 59) * ns, zone: z) == 100)
        #expect(s.percent(atNanos: at(22, 0) * ns, zone: z) == 20)
        #expect(s.percent(atNanos: at(0, 30, day: 1) * ns, zone: z) == 20)
        #expect(s.percent(atNanos: at(1, 0, day: 1) * ns, zone: z) == nil)
        #expect(s.percent(atNanos: at(6, 59, 59, day: 1) * ns, zone: z) == nil)
        #expect(s.percent(atNanos: at(7, 0, day: 1) * ns, zone: z) == 100)
        // Before the first period of the day: the last one of the day before is in force.
        #expect(try schedule(["07:00 100%", "22:00 20%"]).percent(atNanos: at(3, 0) * ns, zone: z) == 20)
    }

    @Test func fadesAreSmoothAndMonotoneAndSkipOff() throws {
        let s = try schedule(["07:00 100%", "22:00 20%", "01:00 off"], fade: 600)
        let z = LocalZone.fixed(0)
        #expect(s.percent(atNanos: at(22, 0) * ns, zone: z) == 100)
        #expect(s.percent(atNanos: at(22, 5) * ns, zone: z) == 60)
        #expect(s.percent(atNanos: at(22, 10) * ns, zone: z) == 20)
        var last = 101.0
        var distinct = Set<Double>()
        for sec in stride(from: 0, through: 600, by: 1) {
            let p = try #require(s.percent(atNanos: at(22, 0, sec) * ns, zone: z))
            #expect(p <= last)
            last = p
            distinct.insert(p)
        }
        #expect(distinct.count == 601, "a new level every second")
        // Sub-second: the level moves between whole seconds too.
        let a = try #require(s.percent(atNanos: at(22, 1) * ns, zone: z))
        let b = try #require(s.percent(atNanos: at(22, 1) * ns + ns / 2, zone: z))
        #expect(b < a)
        #expect(s.isFading(secondsSinceMidnight: 22 * 3600 + 1))
        #expect(!s.isFading(secondsSinceMidnight: 22 * 3600 + 600))
        // Into and out of off: at once.
        #expect(s.percent(atNanos: at(0, 59, 59, day: 1) * ns, zone: z) == 20)
        #expect(s.percent(atNanos: at(1, 0, day: 1) * ns, zone: z) == nil)
        #expect(s.percent(atNanos: at(7, 0, day: 1) * ns, zone: z) == 100)
        #expect(!s.isFading(secondsSinceMidnight: 7 * 3600 + 1))
    }

    @Test func fadeCrossingMidnight() throws {
        let s = try schedule(["08:00 100%", "23:55 10%"], fade: 600)
        let z = LocalZone.fixed(0)
        #expect(s.percent(atNanos: at(23, 55) * ns, zone: z) == 100)
        #expect(s.percent(atNanos: at(0, 0, day: 1) * ns, zone: z) == 55)
        #expect(s.percent(atNanos: at(0, 5, day: 1) * ns, zone: z) == 10)
        #expect(s.nextBoundary(after: at(23, 56), zone: z) == at(0, 5, day: 1))
    }

    @Test func fadeNeverOutlastsItsPeriod() throws {
        let s = try schedule(["08:00 100%", "08:02 10%"], fade: 600)
        let z = LocalZone.fixed(0)
        // 08:00–08:02 fades from 10 % to 100 % in its two minutes.
        #expect(s.percent(atNanos: at(8, 1) * ns, zone: z) == 55)
        #expect(s.percent(atNanos: at(8, 2) * ns, zone: z) == 100)
    }

    @Test func boundaries() throws {
        let s = try schedule(["07:00 100%", "22:00 20%", "01:00 off"], fade: 600)
        let z = LocalZone.fixed(0)
        #expect(s.nextBoundary(after: at(12, 0), zone: z) == at(22, 0))
        #expect(s.nextBoundary(after: at(22, 0), zone: z) == at(22, 10))
        #expect(s.nextBoundary(after: at(22, 10), zone: z) == at(1, 0, day: 1))
        #expect(s.nextBoundary(after: at(1, 0), zone: z) == at(1, 10)) // the off period's fade mark: harmless
        #expect(s.nextBoundary(after: at(12, 0), zone: .fixed(7200)) == at(20, 0))
    }

    @Test func berlinSpringForward() throws {
        let s = try schedule(["07:00 100%", "22:00 20%", "01:00 off", "02:30 50%"])
        // 00:30 UTC is 01:30 CET: off. At 01:00 UTC the clock jumps from 02:00 to 03:00 CEST,
        // over 02:30: the 50 % period starts then.
        #expect(s.percent(atNanos: (springDay + 1800) * ns, zone: berlin) == nil)
        #expect(s.nextBoundary(after: springDay + 1800, zone: berlin) == springDay + 3600)
        #expect(s.percent(atNanos: (springDay + 3599) * ns, zone: berlin) == nil)
        #expect(s.percent(atNanos: (springDay + 3600) * ns, zone: berlin) == 50)
        // 07:00 CEST is 05:00 UTC.
        #expect(s.nextBoundary(after: springDay + 3600, zone: berlin) == springDay + 5 * 3600)
        #expect(s.percent(atNanos: (springDay + 5 * 3600 - 1) * ns, zone: berlin) == 50)
        #expect(s.percent(atNanos: (springDay + 5 * 3600) * ns, zone: berlin) == 100)
        // 22:00 CEST is 20:00 UTC.
        #expect(s.nextBoundary(after: springDay + 12 * 3600, zone: berlin) == springDay + 20 * 3600)
        // The day before (CET): 01:00 local was 00:00 UTC.
        #expect(s.nextBoundary(after: springDay - 3600, zone: berlin) == springDay)
    }

    @Test func berlinFallBack() throws {
        let s = try schedule(["07:00 100%", "22:00 20%", "02:30 off"])
        // 02:30 CEST (the first of the two) is 00:30 UTC; the boundary is the first occurrence.
        #expect(s.nextBoundary(after: autumnDay - 3600, zone: berlin) == autumnDay + 1800)
        #expect(s.percent(atNanos: (autumnDay + 1799) * ns, zone: berlin) == 20)
        #expect(s.percent(atNanos: (autumnDay + 1800) * ns, zone: berlin) == nil)
        // 07:00 CET is 06:00 UTC (the day has 25 hours).
        #expect(s.nextBoundary(after: autumnDay + 1800, zone: berlin) == autumnDay + 6 * 3600)
        #expect(s.percent(atNanos: (autumnDay + 6 * 3600) * ns, zone: berlin) == 100)
        // 22:00 CET is 21:00 UTC.
        #expect(s.nextBoundary(after: autumnDay + 12 * 3600, zone: berlin) == autumnDay + 21 * 3600)
    }
}

@Suite struct WallBrightnessPolicyTests {
    @Test func withoutBrightnessItDecidesAsTheBlankPolicy() throws {
        let blank = try BlankSchedule(parsing: "23:00-07:00")
        var p = BrightnessPolicy(blankSchedule: blank, brightness: nil, wakeSeconds: 30, defaultPercent: 70, zone: .fixed(0))
        var b = BlankPolicy(schedule: blank, wakeSeconds: 30, zone: .fixed(0))
        for t in [at(22, 0), at(23, 0), at(23, 30), at(6, 59, 59, day: 1), at(7, 0, day: 1)] {
            #expect(p.state(atNanos: t * ns).isBlank == b.shouldBlank(at: t))
            #expect(p.nextChange(after: t) == b.nextChange(after: t))
        }
        #expect(p.state(atNanos: at(12, 0) * ns) == .lit(percent: 70))
        let wokeP = p.touched(at: at(23, 30)), wokeB = b.touched(at: at(23, 30))
        #expect(wokeP == wokeB && wokeP)
        #expect(p.state(atNanos: at(23, 30, 10) * ns) == .lit(percent: 70))
        #expect(p.state(atNanos: at(23, 30, 30) * ns) == .blank)
        #expect(p.nextChange(after: at(23, 30, 1)) == at(23, 30, 30))
    }

    @Test func offPeriodBlanksAndTouchWakesToThePeriodsLevel() throws {
        let s = try schedule(["07:00 100%", "22:00 20%", "01:00 off"], fade: 600)
        var p = BrightnessPolicy(blankSchedule: nil, brightness: s, wakeSeconds: 30, zone: .fixed(0))
        #expect(p.state(atNanos: at(12, 0) * ns) == .lit(percent: 100))
        #expect(p.state(atNanos: at(22, 5) * ns) == .lit(percent: 60))
        #expect(p.isFading(at: at(22, 5)))
        #expect(p.touched(at: at(22, 5)) == false) // lit anyway
        #expect(p.state(atNanos: at(1, 30, day: 1) * ns) == .blank)
        #expect(p.touched(at: at(1, 30, day: 1)) == true)
        // The off period's wake level is the last lit period's: 20 %, not 100 %.
        #expect(p.state(atNanos: at(1, 30, 29, day: 1) * ns) == .lit(percent: 20))
        #expect(p.state(atNanos: at(1, 30, 30, day: 1) * ns) == .blank)
        #expect(p.nextChange(after: at(1, 30, 1, day: 1)) == at(1, 30, 30, day: 1))
        #expect(p.wakePercent(at: at(1, 30, day: 1)) == 20)
    }

    @Test func blankScheduleAndBrightnessTogether() throws {
        // Existing blanking 23:00–07:00 plus dimming at 21:00: blank wins; a touch wakes to 30 %.
        let s = try schedule(["07:00 100%", "21:00 30%"])
        var p = BrightnessPolicy(blankSchedule: try BlankSchedule(parsing: "23:00-07:00"), brightness: s, wakeSeconds: 60, zone: .fixed(0))
        #expect(p.state(atNanos: at(21, 30) * ns) == .lit(percent: 30))
        #expect(p.state(atNanos: at(23, 30) * ns) == .blank)
        #expect(p.touched(at: at(23, 30)) == true)
        #expect(p.state(atNanos: at(23, 30, 59) * ns) == .lit(percent: 30))
        #expect(p.state(atNanos: at(23, 31) * ns) == .blank)
        #expect(p.nextChange(after: at(12, 0)) == at(21, 0))
        #expect(p.nextChange(after: at(21, 0)) == at(23, 0))
        #expect(p.state(atNanos: at(7, 0, day: 1) * ns) == .lit(percent: 100))
    }

    @Test func noWakeWhenWakeSecondsIsZero() throws {
        var p = BrightnessPolicy(blankSchedule: nil, brightness: try schedule(["07:00 100%", "01:00 off"]), wakeSeconds: 0, zone: .fixed(0))
        #expect(p.touched(at: at(2, 0)) == false)
        #expect(p.state(atNanos: at(2, 0, 1) * ns) == .blank)
    }
}

@Suite struct WallPixelOrbitTests {
    @Test(arguments: [1, 2, 4, 7])
    func everyOffsetVisitedInOnePeriodWithUnitSteps(_ n: Int) throws {
        let period: Int64 = 180 * ns
        let orbit = PixelOrbit(pixels: n, periodNanos: period)
        let side = 2 * n + 1
        #expect(orbit.path.count == 2 * (side * side - 1))
        #expect(orbit.box == Rect(x: -n, y: -n, width: side, height: side))
        let start: Int64 = 12_345 * ns + 678 // any phase
        var t = start
        var previous = orbit.offset(atNanos: t)
        var visited: Set<PixelOffset> = [previous]
        var steps = 0
        while true {
            let next = orbit.nextStep(afterNanos: t)
            #expect(next > t)
            if next > start + period { break }
            #expect(orbit.offset(atNanos: next - 1) == orbit.offset(atNanos: t), "held until the step")
            t = next
            let o = orbit.offset(atNanos: t)
            #expect(abs(o.dx - previous.dx) + abs(o.dy - previous.dy) == 1, "one pixel along one axis: \(previous) → \(o)")
            #expect(abs(o.dx) <= n && abs(o.dy) <= n, "inside the box: \(o)")
            visited.insert(o)
            previous = o
            steps += 1
        }
        #expect(visited.count == side * side)
        #expect(steps == orbit.path.count)
        // Periodic.
        #expect(orbit.offset(atNanos: start) == orbit.offset(atNanos: start + period))
        #expect(orbit.offset(atNanos: 0) == .zero)
    }

    @Test func pathClosesWithAUnitStepAndStartsAtTheCentre() {
        let orbit = PixelOrbit(pixels: 3, periodNanos: 60 * ns)
        #expect(orbit.path.first == .zero)
        let pairs = zip(orbit.path, orbit.path.dropFirst() + [orbit.path[0]])
        for (a, b) in pairs { #expect(abs(a.dx - b.dx) + abs(a.dy - b.dy) == 1) }
        #expect(PixelOrbit(pixels: 0, periodNanos: ns).path == [.zero])
        #expect(PixelOrbit(pixels: 0, periodNanos: ns).nextStep(afterNanos: 5) == Int64.max)
    }

    @Test func damageIsBoundedToWhatMoved() {
        let label = Rect(x: 100, y: 50, width: 200, height: 40)
        let orbit = PixelOrbit(pixels: 4, periodNanos: 180 * ns)
        var t: Int64 = 0
        var reached = Set<Int>()
        for _ in 0..<orbit.path.count {
            let next = orbit.nextStep(afterNanos: t)
            let a = orbit.offset(atNanos: t), b = orbit.offset(atNanos: next)
            let d = PixelOrbit.damage(content: label, from: a, to: b)!
            // One step: the label's area plus one pixel row or column, inside the orbit's reach.
            #expect(d.width * d.height == label.width * label.height + (a.dx != b.dx ? label.height : label.width))
            #expect(orbit.reach(of: label).contains(d))
            reached.insert(d.x); reached.insert(d.maxX)
            t = next
        }
        #expect(reached.min() == 96 && reached.max() == 304)
        #expect(orbit.reach(of: label) == Rect(x: 96, y: 46, width: 208, height: 48))
        #expect(PixelOrbit.damage(content: label, from: .zero, to: .zero) == nil)
    }

    @Test func fromConfigValue() throws {
        let orbit = PixelOrbit(try PixelShift(pixels: 4, periodMinutes: 3))
        #expect(orbit.periodNanos == 180 * ns)
        #expect(orbit.path.count == 160)
        #expect(orbit.stepNanos == 1_125_000_000)
    }
}

@Suite struct WallSettingsTests {
    @Test func pixelShiftValidation() {
        #expect(throws: KioskError.config("display.pixel_shift.pixels = 0: must be 1…32 (a few pixels; leave pixel_shift out to turn it off)")) {
            _ = try PixelShift(pixels: 0, periodMinutes: 3)
        }
        #expect(throws: KioskError.config("display.pixel_shift.pixels = 40: must be 1…32 (a few pixels; leave pixel_shift out to turn it off)")) {
            _ = try PixelShift(pixels: 40, periodMinutes: 3)
        }
        #expect(throws: KioskError.config("display.pixel_shift.period_minutes = 0.0: must be 0.1…1440 minutes")) {
            _ = try PixelShift(pixels: 4, periodMinutes: 0)
        }
    }

    @Test func backlightChoice() throws {
        #expect(try BacklightChoice(parsing: "auto") == .auto)
        #expect(try BacklightChoice(parsing: "none") == .none)
        #expect(try BacklightChoice(parsing: "intel_backlight") == .named("intel_backlight"))
        for bad in ["", "../x", "a b", "x/y", ".."] {
            #expect(throws: KioskError.config("display.backlight = \"\(bad)\": not \"auto\", \"none\" or a device name from /sys/class/backlight")) {
                _ = try BacklightChoice(parsing: bad)
            }
        }
    }

    @Test func luxCurve() throws {
        let c = try LuxCurve(pairs: [[0, 5], [50, 30], [400, 100]])
        #expect(c.percent(lux: -1) == 5)
        #expect(c.percent(lux: 25) == 17.5)
        #expect(c.percent(lux: 50) == 30)
        #expect(c.percent(lux: 5000) == 100)
        #expect(throws: KioskError.config("display.ambient.curve[1] = [10.0, 30.0]: lux must increase (previous point is at 10.0 lx)")) {
            _ = try LuxCurve(pairs: [[10, 5], [10, 30]])
        }
        #expect(throws: KioskError.config("display.ambient.curve[0] = [0.0, 120.0]: percent must be 0…100")) {
            _ = try LuxCurve(pairs: [[0, 120]])
        }
        #expect(throws: KioskError.config("display.ambient.curve[0] = [1.0]: must be [lux, percent]")) {
            _ = try LuxCurve(pairs: [[1]])
        }
        #expect(throws: KioskError.config("display.ambient.curve = []: needs at least one [lux, percent] point")) {
            _ = try LuxCurve(pairs: [])
        }
        #expect(throws: KioskError.config("display.ambient.hysteresis = -1.0: must be a fraction 0…10 (0.2 = 20 % of the light level)")) {
            _ = try AmbientFollower(curve: c, hysteresis: -1)
        }
    }

    @Test func hysteresisHoldsSmallChanges() throws {
        var f = try AmbientFollower(curve: try LuxCurve(pairs: [[0, 0], [100, 100]]), hysteresis: 0.5, minimumLuxChange: 1)
        #expect(f.update(lux: 40) == 40)
        #expect(f.update(lux: 59) == nil)  // within 50 % of 40
        #expect(f.update(lux: 21) == nil)
        #expect(f.update(lux: 61) == 61)
        #expect(f.update(lux: .nan) == nil)
        #expect(f.settledLux == 61)
    }
}
