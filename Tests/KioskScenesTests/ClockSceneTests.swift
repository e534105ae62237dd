import Foundation
import KioskCore
import KioskRender
import KioskScenes
import KioskTesting
import Logging
import Testing

/// 2024-01-01 13:35:16 UTC.
private let t133516: Int64 = 1_704_067_200 + 13 * 3600 + 35 * 60 + 16
private let utc = LocalZone.fixed(0)

private func at(_ epochSecond: Int64, ns: Int64 = 0, mono: Int64 = 5_000_000_000) -> WallTime {
    WallTime(realtimeNs: epochSecond * 1_000_000_000 + ns, monotonicNs: mono)
}

private func clock(_ mode: ClockColorMode = .scaled, background: ClockBackground = .time, theme: Theme = .default,
                   size: Size = Size(width: 480, height: 270), now: WallTime) throws -> (ClockScene, Canvas, Damage) {
    let scene = ClockScene(name: "wall", colorMode: mode, background: background, timeZone: utc)
    let canvas = try Canvas(size: size)
    scene.layout(size: size)
    scene.apply(theme: theme)
    scene.didAppear(now: now)
    let damage = scene.draw(into: canvas)
    return (scene, canvas, damage)
}

private func loc(_ line: Int) -> KioskCore.SourceLocation { KioskCore.SourceLocation(file: "wall.toml", line: line) }

private func clockTable(_ entries: [(String, ConfigValue)]) -> ConfigTable {
    ConfigTable(path: "scene.wall", location: loc(3),
                entries: entries.enumerated().map { ($0.element.0, ConfigNode($0.element.1, at: loc(4 + $0.offset))) })
}

private func context() -> SceneContext {
    SceneContext(name: "wall", stored: { _ in nil }, counterIntents: { _ in }, logger: Logger(label: "test"), dataDirectory: "/tmp")
}

@Suite struct ClockModelTests {
    @Test func readingAndColoursAt133516() {
        let r = ClockModel.reading(realtimeNs: t133516 * 1_000_000_000 + 999_999_999, in: utc)
        #expect(r == ClockReading(hours: 13, minutes: 35, seconds: 16, epochSecond: t133516))
        #expect(r.text(hourFormat: .h24) == "13:35:16")
        #expect(r.text(hourFormat: .h12) == "01:35:16 PM")
        #expect(ClockColorMode.scaled.color(for: r).hexString == "#8A9544")
        #expect(ClockColorMode.literal.color(for: r).hexString == "#133516")
    }

    @Test func scaledColourRoundsHalvesAwayFromZero() {
        // 23:59:59 → 23·255/24 = 244.375 → 244, 59·255/60 = 250.75 → 251.
        let r = ClockReading(hours: 23, minutes: 59, seconds: 59)
        #expect(ClockColorMode.scaled.color(for: r).hexString == "#F4FBFB")
        #expect(ClockColorMode.literal.color(for: r).hexString == "#235959")
        #expect(ClockColorMode.scaled.color(for: ClockReading(hours: 0, minutes: 0, seconds: 0)).hexString == "#000000")
        // 2·255/60 = 8.5 rounds away from zero to 9 (C's round()).
        #expect(ClockColorMode.scaled.color(for: ClockReading(hours: 0, minutes: 2, seconds: 2)).hexString == "#000909")
    }

    @Test func timeZonesShiftTheReading() throws {
        let berlin = try #require(LocalZone.named("Europe/Berlin"))
        #expect(ClockModel.reading(realtimeNs: t133516 * 1_000_000_000, in: berlin).description == "14:35:16")
        let kolkata = try #require(LocalZone.named("Asia/Kolkata"))
        #expect(ClockModel.reading(realtimeNs: t133516 * 1_000_000_000, in: kolkata).description == "19:05:16")
        // Before the epoch the second is floored, not truncated.
        #expect(ClockModel.reading(realtimeNs: -1, in: utc).description == "23:59:59")
    }

    @Test func daylightSavingChangeIsFollowedOnTheNextSecond() throws {
        let berlin = try #require(LocalZone.named("Europe/Berlin"))
        // 2024-03-31 00:59:59 UTC is 01:59:59 CET; one second later it is 03:00:00 CEST.
        let before: Int64 = 1_711_846_799
        #expect(ClockModel.reading(realtimeNs: before * 1_000_000_000, in: berlin).description == "01:59:59")
        #expect(ClockModel.reading(realtimeNs: (before + 1) * 1_000_000_000, in: berlin).description == "03:00:00")
        // 2024-10-27 00:59:59 UTC is 02:59:59 CEST; one second later it is 02:00:00 CET again.
        let autumn: Int64 = 1_729_990_799
        #expect(ClockModel.reading(realtimeNs: autumn * 1_000_000_000, in: berlin).description == "02:59:59")
        #expect(ClockModel.reading(realtimeNs: (autumn + 1) * 1_000_000_000, in: berlin).description == "02:00:00")
    }

    @Test func observersAreToldOnlyWhenTheShownSecondChanges() {
        final class Counter: ClockModelObserver {
            var seen: [String] = []
            func clockDidUpdate(_ clock: ClockModel) { seen.append(clock.reading!.description) }
        }
        let model = ClockModel(timeZone: utc)
        let o = Counter()
        model.addObserver(o)
        #expect(model.update(now: at(t133516)))
        #expect(!model.update(now: at(t133516, ns: 500_000_000)))
        #expect(!model.update(now: at(t133516, ns: 999_999_999)))
        #expect(model.update(now: at(t133516 + 1)))
        #expect(model.update(now: at(t133516 - 3600)))  // a jump backwards is a change too
        #expect(o.seen == ["13:35:16", "13:35:17", "12:35:16"])
    }

    @Test func nextSecondBoundaryIsExact() {
        let base = t133516 * 1_000_000_000
        for (ns, expected) in [(0, base + 1_000_000_000), (1, base + 1_000_000_000), (500_000_000, base + 1_000_000_000),
                               (999_999_999, base + 1_000_000_000), (1_000_000_000, base + 2_000_000_000)] as [(Int64, Int64)] {
            #expect(ClockModel.nextSecondBoundary(after: base + ns) == expected)
        }
        #expect(ClockModel.nextSecondBoundary(after: -1) == 0)
        #expect(ClockModel.nextSecondBoundary(after: -1_000_000_000) == 0)
    }
}

@Suite struct ClockSceneTests {
    @Test func scaledBackgroundPixelIsTheTimesColour() throws {
        let (scene, canvas, damage) = try clock(.scaled, now: at(t133516))
        #expect(canvas.color(x: 2, y: 2).hexString == "#8A9544")
        #expect(canvas.color(x: 477, y: 267).hexString == "#8A9544")
        #expect(damage == Damage.full(canvas.size))
        #expect(scene.statusSummary == "13:35:16 #8A9544")
    }

    @Test func literalBackgroundPixelIsTheDigitsAsHex() throws {
        let (_, canvas, _) = try clock(.literal, now: at(t133516))
        #expect(canvas.color(x: 2, y: 2).hexString == "#133516")
        #expect(canvas.color(x: 240, y: 5).hexString == "#133516")
    }

    @Test func timeAndLabelAreDrawnAndDifferentLabelsGiveDifferentPixels() throws {
        let (scene, a, _) = try clock(.scaled, background: .theme, now: at(t133516))
        let fg = scene.textColor
        #expect(!scene.timeRect.isEmpty && !scene.labelRect.isEmpty)
        #expect(!scene.timeRect.intersects(scene.labelRect))
        // Text-coloured pixels inside each run's rectangle, none outside them (theme background elsewhere).
        #expect(Pixels.count(fg, in: a, rect: scene.timeRect, tolerance: 8) > 200)
        #expect(Pixels.count(fg, in: a, rect: scene.labelRect, tolerance: 8) > 50)
        #expect(Pixels.count(fg, in: a, rect: Rect(x: 0, y: 0, width: 480, height: scene.timeRect.y), tolerance: 8) == 0)
        let labelAt16 = scene.labelRect
        // One second later: the label (#8A9544 → #8A9548) and the seconds change.
        let (scene2, b, _) = try clock(.scaled, background: .theme, now: at(t133516 + 1))
        #expect(scene2.labelRect == labelAt16)
        #expect(Pixels.differingPixels(a, b, in: labelAt16) > 20)
        // The hours and minutes are the same pixels; only the seconds differ.
        let left = Rect(x: scene.timeRect.x, y: scene.timeRect.y, width: scene.timeRect.width / 2, height: scene.timeRect.height)
        #expect(Pixels.differingPixels(a, b, in: left) == 0)
        #expect(Pixels.differingPixels(a, b, in: scene.timeRect) > 20)
    }

    @Test func darkBackgroundGetsLightTextAndLightBackgroundDarkText() throws {
        // 00:00:00 scaled is black; the default theme's text is black, so it switches to its white background colour.
        let midnight = Int64(1_704_067_200)
        let (dark, c1, _) = try clock(.scaled, theme: .default, now: at(midnight))
        #expect(c1.color(x: 1, y: 1).hexString == "#000000")
        #expect(dark.textColor == .white)
        #expect(Pixels.count(.white, in: c1, rect: dark.timeRect, tolerance: 10) > 200)
        #expect(Pixels.count(.white, in: c1, rect: dark.labelRect, tolerance: 10) > 30)
        // 23:59:59 scaled is #F4FBFB; the alternative theme's text is white, so it switches to black.
        let (light, c2, _) = try clock(.scaled, theme: .alternative, now: at(midnight + 86_399))
        #expect(c2.color(x: 1, y: 1).hexString == "#F4FBFB")
        #expect(light.textColor == .black)
        #expect(Pixels.count(.black, in: c2, rect: light.timeRect, tolerance: 10) > 200)
        #expect(Pixels.count(.white, in: c2, rect: light.timeRect, tolerance: 3) == 0)
        // Where the theme's text is readable it is kept: white on 13:35:16's #8A9544 is only 3.3:1, black is 6.5:1.
        let (mid, c3, _) = try clock(.scaled, theme: .default, now: at(t133516))
        #expect(mid.textColor == .black)
        #expect(Pixels.count(.black, in: c3, rect: mid.timeRect, tolerance: 10) > 200)
    }

    @Test func textColourRuleReachesTheWCAGMinimumEverywhere() {
        for theme in Theme.builtIn.values {
            for h in stride(from: 0, to: 24, by: 3) {
                for m in stride(from: 0, to: 60, by: 7) {
                    for mode in ClockColorMode.allCases {
                        let bg = mode.color(for: ClockReading(hours: h, minutes: m, seconds: m))
                        let fg = theme.palette.readableText(on: bg)
                        #expect(fg.contrastRatio(with: bg) >= 4.5, "\(theme.name) \(bg)")
                    }
                }
            }
        }
    }

    @Test func deadlineIsTheNextWholeSecondAndUpdateReportsOnlyNewSeconds() throws {
        let (scene, canvas, _) = try clock(now: at(t133516))
        for ns in [0, 1, 123_456_789, 999_999_999] as [Int64] {
            #expect(scene.nextDeadline(now: at(t133516, ns: ns)) == .realtime((t133516 + 1) * 1_000_000_000))
        }
        #expect(!scene.update(now: at(t133516, ns: 999_999_999)))
        #expect(scene.draw(into: canvas).isEmpty)  // nothing changed: no damage
        #expect(scene.update(now: at(t133516 + 1)))
        #expect(scene.nextDeadline(now: at(t133516 + 1)) == .realtime((t133516 + 2) * 1_000_000_000))
        #expect(scene.draw(into: canvas) == Damage.full(canvas.size))
        #expect(canvas.color(x: 1, y: 1).hexString == "#8A9548")
        #expect(!scene.update(now: at(t133516 + 1, ns: 10)))
    }

    @Test func clockJumpsShowTheRightTimeOnTheNextUpdate() throws {
        let time = ManualTimeSource(at(t133516))
        let (scene, canvas, _) = try clock(.literal, now: time.now())
        time.jumpWallClock(bySeconds: -3600)  // NTP step back one hour
        #expect(scene.update(now: time.now()))
        #expect(scene.reading?.description == "12:35:16")
        _ = scene.draw(into: canvas)
        #expect(canvas.color(x: 3, y: 3).hexString == "#123516")
        #expect(scene.nextDeadline(now: time.now()) == .realtime((t133516 - 3600 + 1) * 1_000_000_000))
        time.jumpWallClock(bySeconds: 7200 + 0.25)  // forward two hours and a quarter second
        #expect(scene.update(now: time.now()))
        _ = scene.draw(into: canvas)
        #expect(scene.reading?.description == "14:35:16")
        #expect(canvas.color(x: 3, y: 3).hexString == "#143516")
        #expect(scene.nextDeadline(now: time.now()) == .realtime((t133516 + 3600 + 1) * 1_000_000_000))
    }

    @Test func themeSwitchChangesPixels() throws {
        let (scene, canvas, _) = try clock(.scaled, background: .theme, theme: .default, now: at(t133516))
        #expect(canvas.color(x: 1, y: 1) == Theme.default.palette.background)
        #expect(Pixels.count(.black, in: canvas, rect: scene.timeRect, tolerance: 10) > 200)
        scene.apply(theme: .alternative)
        #expect(scene.draw(into: canvas) == Damage.full(canvas.size))
        #expect(canvas.color(x: 1, y: 1) == Theme.alternative.palette.background)
        #expect(Pixels.count(.white, in: canvas, rect: scene.timeRect, tolerance: 10) > 200)
        #expect(Pixels.count(.black, in: canvas, rect: scene.timeRect, tolerance: 10) > 1000)
    }

    @Test func themeBackgroundDamagesOnlyTheText() throws {
        let (scene, canvas, _) = try clock(.scaled, background: .theme, now: at(t133516))
        let before = scene.timeRect.union(scene.labelRect)
        #expect(scene.update(now: at(t133516 + 1)))
        let damage = scene.draw(into: canvas)
        #expect(!damage.isEmpty)
        #expect(damage.area < canvas.size.area / 2)
        #expect(!damage.rects.contains { $0.contains(Rect(x: 0, y: 0, width: 2, height: 2)) })
        for r in damage.rects { #expect(before.union(scene.timeRect).union(scene.labelRect).contains(r)) }
        // The result equals a full redraw at the same second.
        let (_, fresh, _) = try clock(.scaled, background: .theme, now: at(t133516 + 1))
        #expect(Pixels.differingPixels(canvas, fresh) == 0)
    }

    @Test func makeReadsEveryKeyAndReportsBadOnes() throws {
        let ok = try ClockScene.make(clockTable([("color_mode", .string("literal")), ("time_zone", .string("UTC")),
                                                 ("hour_format", .int(12)), ("background", .string("theme")),
                                                 ("show_label", .bool(false))]), context())
        let c = try #require(ok as? ClockScene)
        #expect(c.colorMode == .literal && c.hourFormat == .h12 && c.backgroundMode == .theme && !c.showLabel)
        #expect(c.model.timeZone.offset(at: 1_720_000_000) == 0)

        func failure(_ entries: [(String, ConfigValue)]) -> String {
            do { _ = try ClockScene.make(clockTable(entries), context()); return "no error" } catch { return "\(error)" }
        }
        let tz = failure([("time_zone", .string("Mars/Olympus_Mons"))])
        #expect(tz.contains("wall.toml:4") && tz.contains("scene.wall.time_zone") && tz.contains("Mars/Olympus_Mons"))
        let mode = failure([("color_mode", .string("rainbow"))])
        #expect(mode.contains("wall.toml:4") && mode.contains("scene.wall.color_mode") && mode.contains("\"scaled\""))
        let hf = failure([("hour_format", .int(13))])
        #expect(hf.contains("wall.toml:4") && hf.contains("hour_format") && hf.contains("12 or 24"))
        let unknown = failure([("color_mode", .string("scaled")), ("colour_mode", .string("scaled"))])
        #expect(unknown.contains("wall.toml:5") && unknown.contains("scene.wall.colour_mode") && unknown.contains("unknown key"))
        let type = failure([("show_label", .string("yes"))])
        #expect(type.contains("wall.toml:4") && type.contains("true or false"))
    }
}

@Suite struct ClockWithSceneManagerTests {
    /// Through the manager on virtual time: its CLOCK_REALTIME timer wakes the clock on the next
    /// second boundary (not a nanosecond before it), the frame presented then shows the new
    /// second in its colour, and a wall-clock step is followed at once.
    @Test func ticksOnTheSecondBoundaryThroughTheManager() throws {
        // 13:35:16.400 UTC on 2023-11-14.
        let start: Int64 = 1_699_968_916_400_000_000
        let loop = ManualEventLoop(realtime: start)
        let display = try HeadlessDisplay(size: Size(width: 64, height: 36))
        let scene = ClockScene(name: "wall", colorMode: .literal, timeZone: utc)
        let m = SceneManager(scenes: [scene], theme: .default, display: display, loop: loop, logger: Logger(label: "test"))
        m.start()
        loop.runDeferred()
        #expect(display.presentCount == 1)
        #expect(scene.reading == ClockReading(hours: 13, minutes: 35, seconds: 16, epochSecond: 1_699_968_916))
        #expect(loop.nextDeadline(.realtime) == 1_699_968_917_000_000_000)
        loop.advance(by: 599_999_999)
        #expect(display.presentCount == 1, "drawn before the second changed")
        loop.advance(by: 1)
        #expect(display.presentCount == 2)
        let shown = try #require(scene.reading)
        #expect(shown == ClockReading(hours: 13, minutes: 35, seconds: 17, epochSecond: 1_699_968_917))
        // Literal colour mode: 13:35:17 is #133517.
        #expect(display.framebuffer.color(x: 1, y: 1) == Color(r8: 0x13, g8: 0x35, b8: 0x17))
        #expect(display.damageHistory.last == Damage.full(Size(width: 64, height: 36)))
        // The wall clock is stepped to 20:08:08.900: redrawn at once, next tick on the new second.
        loop.setWallClock(1_699_992_488_900_000_000)
        #expect(display.presentCount == 3)
        #expect(scene.reading == ClockReading(hours: 20, minutes: 8, seconds: 8, epochSecond: 1_699_992_488))
        #expect(display.framebuffer.color(x: 1, y: 1) == Color(r8: 0x20, g8: 0x08, b8: 0x08))
        #expect(loop.nextDeadline(.realtime) == 1_699_992_489_000_000_000)
        m.stop()
        #expect(loop.pendingTimers == 0)
    }

    /// Work that runs after the second boundary but before the loop has run the clock's due
    /// timer (posted work comes first in an iteration: a batch of committed counter values, an
    /// MQTT packet) asks for a frame and a reschedule: the due timer is kept, so the clock still
    /// shows that second (re-armed for the next boundary, the second was skipped: a 2 s gap
    /// between frames, seen during MQTT bursts).
    @Test func aRescheduleAfterTheBoundaryKeepsTheDueTick() throws {
        final class Clock: TimeSource {
            var t: WallTime
            init(_ t: WallTime) { self.t = t }
            func now() -> WallTime { t }
        }
        let start: Int64 = 1_699_968_916_400_000_000
        let loop = ManualEventLoop(realtime: start)
        let time = Clock(loop.now())
        let display = try HeadlessDisplay(size: Size(width: 64, height: 36))
        let scene = ClockScene(name: "wall", colorMode: .literal, timeZone: utc)
        let m = SceneManager(scenes: [scene], theme: .default, display: display, loop: loop, time: time, logger: Logger(label: "test"))
        m.start()
        loop.runDeferred()
        #expect(loop.nextDeadline(.realtime) == 1_699_968_917_000_000_000)
        // 2 ms past the boundary; the loop has not fired the timer yet.
        time.t = time.t.advanced(byNs: 602_000_000)
        m.sceneDidChange()
        loop.runDeferred()
        #expect(loop.nextDeadline(.realtime) == 1_699_968_917_000_000_000, "the due tick was re-armed for the next second")
        loop.advance(by: 600_000_000)
        #expect(scene.reading?.seconds == 17, "the clock skipped 13:35:17")
        #expect(loop.nextDeadline(.realtime) == 1_699_968_918_000_000_000)
        m.stop()
    }
}
