import KioskCore
import KioskRender
import KioskScenes
import Testing

private let size = Size(width: 480, height: 270)

/// A moment `ms` milliseconds into the test's monotonic timeline.
private func t(_ ms: Int64) -> WallTime {
    WallTime(realtimeNs: 1_704_067_200_000_000_000 + ms * 1_000_000, monotonicNs: 10_000_000_000 + ms * 1_000_000)
}

private func rgb(_ c: Color) -> [Int] { let v = c.rgb8; return [v.r, v.g, v.b] }

/// True when the block of `a` under `ra` equals the block of `b` under `rb` (same size), pixel for pixel.
private func same(_ a: Canvas, _ ra: Rect, _ b: Canvas, _ rb: Rect) -> Bool {
    let pa = a.pixels, pb = b.pixels
    for y in 0..<ra.height {
        for x in 0..<ra.width where (pa.pixel(x: ra.x + x, y: ra.y + y) & 0xFFFFFF) != (pb.pixel(x: rb.x + x, y: rb.y + y) & 0xFFFFFF) {
            return false
        }
    }
    return true
}

private func copy(_ c: Canvas) -> Canvas {
    let out = try! Canvas(size: c.size)
    out.draw(c)
    return out
}

/// How many pixels of `r` are not `color`.
private func ink(_ c: Canvas, _ r: Rect, besides color: Color) -> Int {
    var n = 0
    for y in r.y..<r.maxY { for x in r.x..<r.maxX where rgb(c.color(x: x, y: y)) != rgb(color) { n += 1 } }
    return n
}

/// The counter scene's game clock drawn: real pixels of its digit windows at `MM:SS` and `SS.t`.
@Suite struct GameClockSceneTests {
    let theme = Theme.default

    func scene(_ rules: GameClockRules, intents: @escaping (GameClockIntent) -> Void = { _ in }) throws -> (CounterScene, Canvas) {
        let settings = try CounterSettings(scene: "board", counters: [.init(name: "HOME", label: "HOME"), .init(name: "AWAY", label: "AWAY")],
                                           digits: 2, clock: rules)
        let s = CounterScene(name: "board", settings: settings, intents: { _ in })
        s.clockIntents = intents
        let canvas = try Canvas(size: size)
        s.layout(size: size)
        s.apply(theme: theme)
        s.didAppear(now: t(0))
        _ = s.update(now: t(0))
        #expect(s.draw(into: canvas) == Damage.full(size))
        return (s, canvas)
    }

    @Test func minutesAndSecondsAreDrawnInDigitWindowsAndOnlyChangedDigitsRedrawn() throws {
        let rules = try GameClockRules(periodLengthMs: 600_000, shotClockMs: 24_000)
        let (s, canvas) = try scene(rules)
        // 10:00: four windows; the three zeros are the same picture, the one is another.
        let w = s.gameClockWindows
        try #require(w.count == 4)
        #expect(same(canvas, w[1], canvas, w[2]) && same(canvas, w[1], canvas, w[3]))
        #expect(!same(canvas, w[0], canvas, w[1]))
        // The window colour (left edge, middle) is the counters' (primary); the digit has ink.
        #expect(rgb(canvas.color(x: w[0].x + 2, y: w[0].y + w[0].height / 2)) == rgb(theme.palette.primary))
        #expect(ink(canvas, w[1], besides: theme.palette.primary) > w[1].width * w[1].height / 20)
        // The colon between the minutes and the seconds is drawn.
        let colon = Rect(x: w[1].maxX, y: w[1].y, width: w[2].x - w[1].maxX, height: w[1].height)
        #expect(ink(canvas, colon, besides: theme.palette.background) > 0)
        // The shot clock beside it: "24", two windows.
        #expect(s.shotClockWindows.count == 2)
        #expect(!same(canvas, s.shotClockWindows[0], canvas, s.shotClockWindows[1]))
        let zero = copy(canvas)
        let zeroWindow = w[1]

        // Stopped: no frame is asked for.
        #expect(s.nextDeadline(now: t(10)) == nil)
        // Running: one frame a second.
        s.showCommittedClock(GameClock(rules: rules).start(at: t(0)).0, now: t(0))
        #expect(s.nextDeadline(now: t(0)) == .monotonic(t(1000).monotonicNs))
        #expect(s.update(now: t(1000)))
        _ = s.draw(into: canvas)
        // 09:59: the first window now shows the zero the 10:00 showed.
        #expect(same(canvas, s.gameClockWindows[0], zero, zeroWindow))
        #expect(same(canvas, s.gameClockWindows[1], canvas, s.gameClockWindows[3]))  // 9 and 9
        // 09:58: only the last window is drawn and damaged (the shot clock's last digit too).
        #expect(s.update(now: t(2000)))
        let damage = s.draw(into: canvas)
        #expect(damage.rects.contains(s.gameClockWindows[3]))
        #expect(!damage.rects.contains(s.gameClockWindows[2]) && !damage.rects.contains(s.gameClockWindows[0]))
        #expect(damage.rects.allSatisfy { $0 == s.gameClockWindows[3] || s.shotClockWindows.contains($0) }, "\(damage)")
    }

    @Test func underTheThresholdTenthsAreShownInTheLowTimeLookTenFramesASecond() throws {
        let rules = try GameClockRules(periodLengthMs: 600_000, tenthsBelowMs: 60_000)
        let (s, canvas) = try scene(rules)
        let normal = s.gameClockWindows
        // Set to 0:30.0 and running: "30.0" in three windows, in the low-time colour.
        let clock = try GameClock(rules: rules).set(shownMs: 30_000, at: t(0)).0.start(at: t(0)).0
        s.showCommittedClock(clock, now: t(0))
        #expect(s.update(now: t(0)))
        _ = s.draw(into: canvas)
        let w = s.gameClockWindows
        try #require(w.count == 3)
        #expect(w != Array(normal.prefix(3)))
        #expect(rgb(canvas.color(x: w[0].x + 2, y: w[0].y + w[0].height / 2)) == rgb(theme.palette.highlight))
        #expect(rgb(theme.palette.highlight) != rgb(theme.palette.primary))
        #expect(same(canvas, w[1], canvas, w[2]))  // 0 and 0
        #expect(!same(canvas, w[0], canvas, w[1])) // 3 and 0
        // The dot before the tenth: ink in the lower half between the second and third windows only.
        let gap = Rect(x: w[1].maxX, y: w[1].y, width: w[2].x - w[1].maxX, height: w[1].height)
        let upper = Rect(x: gap.x, y: gap.y, width: gap.width, height: gap.height / 2)
        #expect(ink(canvas, gap, besides: theme.palette.background) > 0 && ink(canvas, upper, besides: theme.palette.background) == 0)
        // Ten frames a second while it runs: the next at 29.9.
        #expect(s.nextDeadline(now: t(0)) == .monotonic(t(100).monotonicNs))
        #expect(s.update(now: t(100)))
        let damage = s.draw(into: canvas)
        #expect(damage.rects == [w[2]] || damage.rects.contains(w[2]), "\(damage)")
    }

    @Test func theHornsHookGetsThePeriodsEndAtTheFrameThatShowsZero() throws {
        let rules = try GameClockRules(periodLengthMs: 2_000, tenthsBelowMs: 1_000)
        let (s, _) = try scene(rules)
        var events: [GameClockEvent] = []
        s.onClockEvent = { events.append($0) }
        s.showCommittedClock(GameClock(rules: rules).start(at: t(0)).0, now: t(0))
        var now = t(0)
        while let next = s.nextDeadline(now: now), events.isEmpty {
            guard case .monotonic(let ns) = next else { break }
            now = now.advanced(byNs: ns - now.monotonicNs)
            _ = s.update(now: now)
        }
        #expect(events == [GameClockEvent(scene: "board", event: GameClock.Event(.periodEnded(period: 1), monotonicNs: t(2000).monotonicNs),
                                          frameNs: t(2000).monotonicNs)])
        #expect(s.nextDeadline(now: now) == nil)
    }

    @Test func spaceAndATapOnTheClockToggleItATapOnACounterDoesNot() throws {
        var asked: [GameClockIntent] = []
        let (s, _) = try scene(try GameClockRules(), intents: { asked.append($0) })
        _ = s.handle(.key(code: 57, state: .pressed, timeUsec: 0), now: t(5))
        let band = try #require(s.clockBand)
        _ = s.handle(.gesture(.tap(x: 0.5, y: Double(band.height / 2) / Double(size.height))), now: t(6))
        _ = s.handle(.gesture(.tap(x: 0.25, y: 0.8)), now: t(7))
        #expect(asked == [GameClockIntent(scene: "board", intent: .toggle, at: t(5)), GameClockIntent(scene: "board", intent: .toggle, at: t(6))])
    }
}
