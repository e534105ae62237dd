import KioskCore
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import Logging
import Testing

private let size = Size(width: 480, height: 270)

/// One frame at 60 Hz, in nanoseconds (1/60 s, rounded).
private let sixtyHz: Int64 = 16_666_667

/// A moment `ms` milliseconds into the test's monotonic timeline.
private func t(_ ms: Int64) -> WallTime {
    WallTime(realtimeNs: 1_704_067_200_000_000_000 + ms * 1_000_000, monotonicNs: 10_000_000_000 + ms * 1_000_000)
}

private func loc(_ line: Int) -> KioskCore.SourceLocation { KioskCore.SourceLocation(file: "score.toml", line: line) }

/// A scene showing `value` (its first counter), drawn once in full at t(0); it hands its
/// intents to `intents`.
private func scene(_ value: Int? = nil, digits: Int = 4, counters: [CounterScene.CounterSpec] = [.init(name: "home", label: "")],
                   minimum: Int = 0, intents: @escaping (CounterIntent) -> Void = { _ in }, theme: Theme = .default,
                   shading: Bool = true) throws -> (CounterScene, Canvas) {
    let s = try CounterScene(name: "score", counters: counters, digits: digits, minimum: minimum, rollMs: 500,
                             shading: shading, values: value.map { [counters[0].name: $0] } ?? [:], intents: intents)
    let canvas = try Canvas(size: size)
    s.layout(size: size)
    s.apply(theme: theme)
    s.didAppear(now: t(0))
    #expect(s.draw(into: canvas) == Damage.full(size))
    return (s, canvas)
}

private func snapshot(_ c: Canvas) -> Canvas {
    let copy = try! Canvas(size: c.size)
    copy.draw(c)
    return copy
}

/// True when a block of `a` at (ax, ay) equals the block of `b` at (bx, by), pixel for pixel.
private func same(_ a: Canvas, _ ax: Int, _ ay: Int, _ b: Canvas, _ bx: Int, _ by: Int, width: Int, height: Int) -> Bool {
    let pa = a.pixels, pb = b.pixels
    for y in 0..<height {
        for x in 0..<width where (pa.pixel(x: ax + x, y: ay + y) & 0xFFFFFF) != (pb.pixel(x: bx + x, y: by + y) & 0xFFFFFF) {
            return false
        }
    }
    return true
}
private func same(_ a: Canvas, _ ra: Rect, _ b: Canvas, _ rb: Rect) -> Bool {
    same(a, ra.x, ra.y, b, rb.x, rb.y, width: ra.width, height: ra.height)
}

/// How many rows at the top of digit window `window` the edge shading reaches, measured from
/// pixels: one more than the last row of the window's upper half where a shaded drawing of
/// `value` differs from an unshaded one.
private func shadedRows(_ value: Int, window: Int) throws -> Int {
    let (s, shaded) = try scene(value)
    let (_, plain) = try scene(value, shading: false)
    let r = try s.digitWindows(of: "home")[window]
    var last = -1
    for y in 0..<(r.height / 2) where !same(shaded, r.x, r.y + y, plain, r.x, r.y + y, width: r.width, height: 1) { last = y }
    return last + 1
}

/// Pixels of a block that are far from the digit window's colour (glyph ink).
private func ink(_ c: Canvas, x: Int, y: Int, width: Int, height: Int, theme: Theme = .default) -> Int {
    width * height - Pixels.count(theme.palette.primary, in: c, rect: Rect(x: x, y: y, width: width, height: height), tolerance: 60)
}

@Suite struct OdometerTests {
    @Test func digitsChangesAndWrap() {
        #expect(Odometer.digits(of: 234, count: 4) == [0, 2, 3, 4])
        #expect(Odometer.padded(234, count: 4) == "0234")
        #expect(Odometer.maxValue(digits: 4) == 9999)
        #expect(Odometer.maxValue(digits: 9) == 999_999_999)
        #expect(Odometer.changedPositions(from: 234, to: 235, count: 4) == [3])
        #expect(Odometer.changedPositions(from: 239, to: 240, count: 4) == [2, 3])
        #expect(Odometer.changedPositions(from: 9999, to: 0, count: 4) == [0, 1, 2, 3])
        #expect(Odometer.incremented(9999, digits: 4) == 0)
        #expect(Odometer.incremented(9999, digits: 4, minimum: 5) == 5)
        #expect(Odometer.incremented(41, digits: 2) == 42)
    }

    @Test func easingIsSymmetricAndBounded() {
        #expect(easeInOutCubic(0) == 0 && easeInOutCubic(1) == 1 && easeInOutCubic(0.5) == 0.5)
        #expect(easeInOutCubic(-1) == 0 && easeInOutCubic(2) == 1)
        #expect(abs(easeInOutCubic(0.2) + easeInOutCubic(0.8) - 1) < 1e-12)
        #expect(easeInOutCubic(0.1) < 0.1)  // starts slowly
        let roll = DigitRoll(from: 4, to: 5, direction: .up, startNs: 1000, durationNs: 500)
        #expect(roll.progress(at: 1250) == 0.5 && !roll.isFinished(at: 1499) && roll.isFinished(at: 1500))
    }
}

@Suite struct CounterSceneTests {
    @Test func digitsAtRestMatchTheSameGlyphDrawnElsewhere() throws {
        let (a, ca) = try scene(234)
        let (_, zero) = try scene(0)
        let (_, shifted) = try scene(2340)
        let w = try a.digitWindows(of: "home")
        #expect(w.count == 4 && w[0].height.isMultiple(of: 2))
        #expect(same(ca, w[0], zero, w[0]))  // 0 == 0
        for i in 1...3 { #expect(!same(ca, w[i], zero, w[i])) }  // 2, 3, 4 differ from 0
        for i in 1...3 { #expect(same(ca, w[i], shifted, w[i - 1])) }  // the same digit one window to the left
        #expect(!same(ca, w[1], ca, w[2]))
        #expect(ink(ca, x: w[3].x, y: w[3].y, width: w[3].width, height: w[3].height) > 100)
        #expect(a.statusSummary == "0234")
        // At rest nothing is redrawn and nothing is scheduled.
        #expect(a.draw(into: ca).isEmpty)
        #expect(a.nextDeadline(now: t(0)) == nil)
        #expect(!a.update(now: t(1000)))
    }

    @Test func onlyTheChangedDigitRollsUpwardAndMidRollShowsBothDigits() throws {
        let (s, c) = try scene(234)
        let rest234 = snapshot(c)
        let (_, ref235) = try scene(235)
        let w = try s.digitWindows(of: "home")
        try s.showEdit(.increment, "home", now: t(0))
        #expect(try s.value(of: "home") == 235)
        // The next frame is the next instant of a fixed 60 Hz grid: after now, at most one frame away.
        guard case .monotonic(let due)? = s.nextDeadline(now: t(0)) else { Issue.record("no frame deadline while rolling"); return }
        #expect(due > t(0).monotonicNs && due <= t(0).monotonicNs + sixtyHz)
        #expect(due % sixtyHz == 0)
        // A late frame does not shift the grid: 5 ms late, the next frame is still on it.
        let lateNow = t(0).advanced(byNs: sixtyHz + 5_000_000)
        guard case .monotonic(let late)? = s.nextDeadline(now: lateNow) else { Issue.record("no frame deadline"); return }
        #expect(late % sixtyHz == 0)
        #expect(late > lateNow.monotonicNs && late - lateNow.monotonicNs <= sixtyHz)
        #expect(s.update(now: t(250)))
        let damage = s.draw(into: c)
        #expect(damage == Damage([w[3]]))
        let mid = snapshot(c)
        for i in 0...2 { #expect(same(mid, w[i], rest234, w[i])) }
        #expect(!same(mid, w[3], rest234, w[3]) && !same(mid, w[3], ref235, w[3]))
        // Halfway up: the old 4 has moved up by half a window, the new 5 fills the lower half.
        // Rows within the shaded edges (and a row more) are left out of the comparisons.
        let r = w[3], h = r.height, band = try shadedRows(234, window: 3) + 1, rows = h / 2 - 2 * band
        #expect(rows > 5)
        #expect(same(mid, r.x, r.y + band, rest234, r.x, r.y + h / 2 + band, width: r.width, height: rows))
        #expect(same(mid, r.x, r.y + h / 2 + band, ref235, r.x, r.y + band, width: r.width, height: rows))
        #expect(ink(mid, x: r.x, y: r.y + band, width: r.width, height: rows) > 20)
        #expect(ink(mid, x: r.x, y: r.y + h / 2 + band, width: r.width, height: rows) > 20)
        // Not the downward picture.
        #expect(!same(mid, r.x, r.y + band, ref235, r.x, r.y + h / 2 + band, width: r.width, height: rows))
        // The roll ends at rest on exactly the reference 5, then stops asking for frames.
        #expect(s.update(now: t(500)))
        #expect(s.draw(into: c) == Damage([w[3]]))
        #expect(!s.isRolling && s.nextDeadline(now: t(500)) == nil)
        #expect(Pixels.differingPixels(c, ref235) == 0)
        #expect(s.draw(into: c).isEmpty)
    }

    @Test func shadingBlendsOnlyTheWindowEdgesTowardsTheBackground() throws {
        let (s, shaded) = try scene(1234)
        let (_, plain) = try scene(1234, shading: false)
        let r = try s.digitWindows(of: "home")[0]
        let band = try shadedRows(1234, window: 0)
        #expect(band > 0 && band < r.height / 4, "shaded rows: \(band) of \(r.height)")
        // Between the shaded edges nothing changes.
        #expect(same(shaded, r.x, r.y + band + 1, plain, r.x, r.y + band + 1, width: r.width, height: r.height - 2 * band - 2))
        // The top and bottom rows (above and below the glyph) lie between the window's colour
        // (cyan) and the background (white), the same at both edges.
        let cx = r.x + r.width / 2
        #expect(plain.color(x: cx, y: r.y) == Theme.default.palette.primary)
        let top = shaded.color(x: cx, y: r.y).rgb8, bottom = shaded.color(x: cx, y: r.maxY - 1).rgb8
        #expect(top.r > 0 && top.r < 255 && top.g == 255 && top.b == 255, "\(top)")
        #expect(abs(top.r - bottom.r) <= 1 && bottom.g == 255 && bottom.b == 255, "\(bottom)")
    }

    @Test func decrementRollsDownward() throws {
        let (s, c) = try scene(235)
        let rest235 = snapshot(c)
        let (_, ref234) = try scene(234)
        try s.showEdit(.decrement, "home", now: t(0))
        #expect(s.update(now: t(250)))
        _ = s.draw(into: c)
        let r = try s.digitWindows(of: "home")[3], h = r.height
        let band = try shadedRows(235, window: 3) + 1, rows = h / 2 - 2 * band
        #expect(rows > 5)
        // The new 4 comes in from above (its lower half in the window's upper half), the old 5 leaves downward.
        #expect(same(c, r.x, r.y + band, ref234, r.x, r.y + h / 2 + band, width: r.width, height: rows))
        #expect(same(c, r.x, r.y + h / 2 + band, rest235, r.x, r.y + band, width: r.width, height: rows))
        #expect(!same(c, r.x, r.y + h / 2 + band, ref234, r.x, r.y + band, width: r.width, height: rows))
    }

    @Test func damageDuringARollCoversOnlyTheChangedDigits() throws {
        let (s, c) = try scene(239)
        let w = try s.digitWindows(of: "home")
        try s.showEdit(.increment, "home", now: t(0))
        for ms in stride(from: Int64(16), through: 500, by: 97) {
            #expect(s.update(now: t(ms)))
            let d = s.draw(into: c)
            #expect(d.area == w[2].area + w[3].area)
            for r in d.rects {
                #expect(w[2].contains(r) || w[3].contains(r))
                #expect(!r.intersects(w[0]) && !r.intersects(w[1]))
            }
        }
    }

    @Test func wrapsFrom9999To0000RollingForward() throws {
        let (s, c) = try scene(9999)
        let (_, ref0) = try scene(0)
        let w = try s.digitWindows(of: "home")
        try s.showEdit(.increment, "home", now: t(0))
        #expect(try s.value(of: "home") == 0)
        #expect(s.update(now: t(250)))
        #expect(s.draw(into: c).area == w.reduce(0) { $0 + $1.area })
        // Every wheel turns up: the new 0 enters from below.
        let r = w[0], band = try shadedRows(9999, window: 0) + 1, rows = r.height / 2 - 2 * band
        #expect(rows > 5)
        #expect(same(c, r.x, r.y + r.height / 2 + band, ref0, r.x, r.y + band, width: r.width, height: rows))
        #expect(s.update(now: t(600)))
        _ = s.draw(into: c)
        #expect(Pixels.differingPixels(c, ref0) == 0)
    }

    /// A value its digits cannot show is not shown (the pipeline's rules refuse it before; a
    /// value that reaches the scene anyway changes nothing on screen).
    @Test func aValueTheDigitsCannotShowChangesNothing() throws {
        let (s, c) = try scene(9999)
        let before = snapshot(c)
        #expect {
            try s.showEdit(.set(10_000), "home", now: t(0))
        } throws: { e in
            let m = "\(e)"
            return m.contains("'home'") && m.contains("10000") && m.contains("9999") && (e as? KioskError)?.kind == .outOfRange
        }
        s.showCommitted("home", value: 10_000, up: true, now: t(0))
        s.showCommitted("home", value: -1, up: false, now: t(0))
        s.showCommitted("nobody", value: 1, up: true, now: t(0))
        #expect(try s.value(of: "home") == 9999)
        #expect(!s.update(now: t(100)))
        #expect(s.draw(into: c).isEmpty)
        #expect(Pixels.differingPixels(c, before) == 0)
        #expect(s.nextDeadline(now: t(100)) == nil)
        #expect(throws: KioskError.self) { try s.value(of: "nobody") }
    }

    @Test func theRulesTheSceneGivesEnforceTheMinimum() throws {
        let (s, _) = try scene(5, minimum: 5)
        #expect(try s.rules(of: "home") == CounterRules(counter: "home", digits: 4, minimum: 5))
        #expect { try s.showEdit(.set(4), "home", now: t(0)) } throws: { "\($0)".contains("minimum 5") }
        #expect { try s.showEdit(.decrement, "home", now: t(0)) } throws: { "\($0)".contains("minimum 5") }
        #expect(try s.value(of: "home") == 5)
        try s.showEdit(.set(9), "home", now: t(0))
        try s.showEdit(.reset, "home", now: t(0))
        #expect(try s.value(of: "home") == 5)
    }

    /// The scene keeps nothing: it starts with the values it is given, a touch becomes an
    /// intent handed to the entrance (nothing changes until a value is shown), and a value
    /// shown is what it shows.
    @Test func aTouchIsHandedToTheEntranceAndOnlyAShownValueChangesTheScreen() throws {
        var handed: [CounterIntent] = []
        let specs: [CounterScene.CounterSpec] = [.init(name: "home", label: "HOME"), .init(name: "away", label: "AWAY")]
        let s = try CounterScene(name: "score", counters: specs, digits: 3, values: ["home": 1, "away": 42], intents: { handed.append($0) })
        #expect(s.statusSummary == "HOME 001 AWAY 042")
        s.layout(size: size)
        #expect(!s.handle(.gesture(.tap(x: 0.25, y: 0.5)), now: t(0)))
        #expect(handed == [CounterIntent(scene: "score", counter: "home", edit: .increment)])
        #expect(try s.value(of: "home") == 1 && !s.isRolling)
        s.showCommitted("home", value: 2, up: true, now: t(0))
        #expect(try s.value(of: "home") == 2 && s.isRolling)
    }

    @Test func unusableStoredValuesFallBackToTheMinimum() throws {
        let store = MemoryStateStore(["counter.score.home": "abc", "counter.score.away": "123456", "counter.score.extra": " 42\n"])
        let settings = try CounterSettings(scene: "score", counters: [.init(name: "home", label: ""), .init(name: "away", label: ""),
                                                                     .init(name: "extra", label: "")], digits: 4, minimum: 3)
        let values = CounterScene.storedValues(scene: "score", settings: settings, stored: store.load, logger: Logger(label: "test"))
        #expect(values == ["extra": 42])
        let s = CounterScene(name: "score", settings: settings, values: values, intents: { _ in })
        #expect(try s.value(of: "home") == 3 && s.value(of: "away") == 3 && s.value(of: "extra") == 42)
    }

    @Test func themeSwitchChangesPixels() throws {
        let (s, c) = try scene(1234)
        let w = try s.digitWindows(of: "home")
        #expect(c.color(x: 1, y: 1) == Theme.default.palette.background)
        s.apply(theme: .alternative)
        #expect(s.draw(into: c) == Damage.full(size))
        #expect(c.color(x: 1, y: 1) == Theme.alternative.palette.background)
        #expect(c.color(x: w[0].x + w[0].width / 2, y: w[0].y + w[0].height / 2 + w[0].height / 3) != Theme.default.palette.primary)
        #expect(Pixels.count(Theme.alternative.palette.primary, in: c, rect: w[0], tolerance: 2) > w[0].area / 4)
    }
}

@Suite struct CounterConfigAndInputTests {
    private func node(_ v: ConfigValue, _ line: Int) -> ConfigNode { ConfigNode(v, at: loc(line)) }

    private func table(scene extra: [(String, ConfigValue)] = [], keys: [(String, String)]? = nil,
                       counters: [[(String, ConfigValue)]] = [[("name", .string("home")), ("label", .string("HOME"))],
                                                              [("name", .string("away")), ("label", .string("AWAY"))]]) -> ConfigTable {
        var entries: [(String, ConfigNode)] = []
        var line = 2
        for (k, v) in extra { entries.append((k, node(v, line))); line += 1 }
        var tables: [ConfigNode] = []
        for (i, c) in counters.enumerated() {
            line += 1
            let start = line
            let t = ConfigTable(path: "scene.score.counter[\(i)]", location: loc(start),
                                entries: c.map { kv in line += 1; return (kv.0, node(kv.1, line)) })
            tables.append(node(.table(t), start))
        }
        entries.append(("counter", node(.array(tables), 2)))
        if let keys {
            line += 1
            let start = line
            let k = ConfigTable(path: "scene.score.keys", location: loc(start),
                                entries: keys.map { kv in line += 1; return (kv.0, node(.string(kv.1), line)) })
            entries.append(("keys", node(.table(k), start)))
        }
        return ConfigTable(path: "scene.score", location: loc(1), entries: entries)
    }

    /// The scene of table `t`, handing its intents to `recorder` (which shows them on it).
    private func make(_ t: ConfigTable, store: MemoryStateStore = MemoryStateStore(), recorder: IntentRecorder? = nil) throws -> CounterScene {
        let sink = recorder?.sink ?? { _ in }
        let context = SceneContext(name: "score", stored: store.load, counterIntents: sink, logger: Logger(label: "test"), dataDirectory: "/tmp")
        let s = try #require(try CounterScene.make(t, context) as? CounterScene)
        recorder?.showsOn = s
        return s
    }

    private func failure(_ t: ConfigTable) -> String {
        do { _ = try make(t); return "no error" } catch { return "\(error)" }
    }

    @Test func makeReadsScalarsCountersAndKeys() throws {
        let s = try make(table(scene: [("digits", .int(3)), ("min", .int(0)), ("roll_ms", .int(300)), ("shading", .bool(false)),
                                       ("tap", .string("decrement")), ("long_press", .string("none")),
                                       ("swipe_down", .string("reset")), ("swipe_up", .string("increment")),
                                       ("reset_hold_ms", .int(1000))],
                               keys: [("KEY_UP", "increment home"), ("KEY_KP_PLUS", "increment away"), ("R", "reset all")]))
        #expect(s.digits == 3 && s.rollNs == 300_000_000 && !s.shading && s.resetHoldNs == 1_000_000_000)
        #expect(s.gestures == CounterGestureActions(tap: .decrement, longPress: .none, swipeDown: .reset, swipeUp: .increment))
        #expect(s.counterNames == ["home", "away"])
        #expect(s.keyBindings == [CounterKeyBinding(code: 103, action: .increment, target: .counter("home")),
                                  CounterKeyBinding(code: 78, action: .increment, target: .counter("away")),
                                  CounterKeyBinding(code: 19, action: .reset, target: .all)])
        let single = try make(table(counters: [[("name", .string("laps"))]]))
        #expect(single.counterNames == ["laps"])
    }

    @Test func badConfigNamesFileLineAndKey() {
        let key = failure(table(keys: [("KEY_UP", "increment home"), ("KEY_FOO", "increment home")]))
        #expect(key.contains("score.toml:") && key.contains("scene.score.keys.KEY_FOO") && key.contains("unknown key name"))
        let action = failure(table(keys: [("KEY_UP", "explode home")]))
        #expect(action.contains("scene.score.keys.KEY_UP") && action.contains("\"increment\"") && action.contains("explode"))
        let who = failure(table(keys: [("KEY_UP", "increment visitors")]))
        #expect(who.contains("scene.score.keys.KEY_UP") && who.contains("visitors") && who.contains("home, away"))
        let ambiguous = failure(table(keys: [("KEY_UP", "increment")]))
        #expect(ambiguous.contains("name the counter"))
        let twice = failure(table(keys: [("KEY_UP", "increment home"), ("UP", "increment away")]))
        #expect(twice.contains("scene.score.keys.UP") && twice.contains("twice"))
        let digits = failure(table(scene: [("digits", .int(10))]))
        #expect(digits.contains("score.toml:2") && digits.contains("scene.score.digits") && digits.contains("1…9"))
        let min = failure(table(scene: [("digits", .int(2)), ("min", .int(100))]))
        #expect(min.contains("scene.score.min") && min.contains("0…99"))
        let unknown = failure(table(scene: [("rol_ms", .int(3))]))
        #expect(unknown.contains("score.toml:2") && unknown.contains("scene.score.rol_ms") && unknown.contains("unknown key"))
        let tap = failure(table(scene: [("tap", .string("bump"))]))
        #expect(tap.contains("scene.score.tap") && tap.contains("\"increment\""))
        let lable = failure(table(counters: [[("name", .string("home")), ("lable", .string("HOME"))]]))
        #expect(lable.contains("scene.score.counter[0].lable") && lable.contains("unknown key"))
        let dup = failure(table(counters: [[("name", .string("home"))], [("name", .string("home"))]]))
        #expect(dup.contains("scene.score.counter[1].name") && dup.contains("twice"))
        let all = failure(table(counters: [[("name", .string("all"))]]))
        #expect(all.contains("scene.score.counter[0].name"))
    }

    /// Each rule is checked in one place (`CounterSettings`): a scene read from a config and a
    /// scene made in code break it with the same words, placed at the key or at the scene.
    @Test func aRuleReadsTheSameFromConfigAndFromCode() throws {
        let home = CounterScene.CounterSpec(name: "home", label: "")
        #expect(failure(table(scene: [("digits", .int(2)), ("min", .int(100))]))
                == "score.toml:3: key 'scene.score.min': 100 is out of range, expected 0…99")
        #expect(throws: CounterSettings.Invalid(setting: .minimum, message: "100 is out of range, expected 0…99")) {
            _ = try CounterSettings(scene: "score", counters: [home], digits: 2, minimum: 100)
        }
        #expect(throws: KioskError.config("scene 'score': 100 is out of range, expected 0…99")) {
            _ = try CounterScene(name: "score", counters: [home], digits: 2, minimum: 100, intents: { _ in })
        }
        // Counter names follow the config's rules in code too.
        #expect(throws: CounterSettings.Invalid(setting: .counterName(1), message: "counter \"home\" is defined twice")) {
            _ = try CounterSettings(scene: "score", counters: [home, home])
        }
        #expect(throws: CounterSettings.Invalid(setting: .counterName(0), message: "a counter name has \(ConfigTable.nameRule) and is not \"all\", got \"all\"")) {
            _ = try CounterSettings(scene: "score", counters: [.init(name: "all", label: "")])
        }
        #expect(throws: CounterSettings.Invalid(setting: .rollMs, message: "-1 is out of range, expected 0…10000")) {
            _ = try CounterSettings(scene: "score", counters: [home], rollMs: -1)
        }
        #expect(throws: CounterSettings.Invalid(setting: .counters, message: "a counter scene needs at least one counter")) {
            _ = try CounterSettings(scene: "score", counters: [])
        }
        // Read from a config, the settings keep where each name was written.
        let s = try make(table())
        #expect(s.settings.namePlaces == [CounterNamePlace(location: loc(4), key: "scene.score.counter[0].name"),
                                          CounterNamePlace(location: loc(7), key: "scene.score.counter[1].name")])
        let single = try make(ConfigTable(path: "scene.score", location: loc(1)))
        #expect(single.settings.namePlaces == [CounterNamePlace(location: loc(1), key: "scene.score.counter", isDefault: true)])
    }

    @Test func keyBindingsTriggerActionsAndResetNeedsAHold() throws {
        var clock = t(0)
        let recorder = IntentRecorder { clock }
        let s = try make(table(scene: [("digits", .int(3)), ("reset_hold_ms", .int(1000))],
                               keys: [("KEY_UP", "increment home"), ("KEY_KP_PLUS", "increment away"),
                                      ("KEY_DOWN", "decrement home"), ("KEY_R", "reset all")]), recorder: recorder)
        let canvas = try Canvas(size: size)
        s.layout(size: size); s.apply(theme: .dark); s.didAppear(now: t(0)); _ = s.draw(into: canvas)
        // A key hands an intent (nothing visible changes until it is shown: false).
        func key(_ name: String, _ state: KeyState, at ms: Int64) -> Bool {
            clock = t(ms)
            return s.handle(.key(code: KeyCode.code(named: name)!, state: state, timeUsec: t(ms).monotonicUsec), now: t(ms))
        }
        #expect(!key("KEY_UP", .pressed, at: 0))
        #expect(!key("KEY_UP", .repeated, at: 10) && !key("KEY_UP", .released, at: 20))
        #expect(!key("KEY_KP_PLUS", .pressed, at: 30))
        #expect(!key("KEY_UP", .pressed, at: 40))
        #expect(recorder.intents.map(\.counter) == ["home", "away", "home"])
        #expect(try s.value(of: "home") == 2 && s.value(of: "away") == 1)
        #expect(!key("KEY_DOWN", .pressed, at: 50))
        #expect(try s.value(of: "home") == 1)
        #expect(!key("KEY_A", .pressed, at: 60))  // not bound
        _ = s.update(now: t(700)); _ = s.draw(into: canvas)
        #expect(s.nextDeadline(now: t(700)) == nil)

        // A short press of the reset key does nothing.
        #expect(!key("KEY_R", .pressed, at: 1000))
        #expect(s.nextDeadline(now: t(1000)) == .monotonic(t(2000).monotonicNs))
        #expect(!s.update(now: t(1500)))
        #expect(!key("KEY_R", .released, at: 1600))
        #expect(s.nextDeadline(now: t(1600)) == nil)
        #expect(!s.update(now: t(2500)))
        #expect(try s.value(of: "home") == 1 && s.value(of: "away") == 1)
        // Held for the full second it resets every counter.
        #expect(!key("KEY_R", .pressed, at: 3000))
        #expect(!s.update(now: t(3999)))
        clock = t(4000)
        #expect(s.update(now: t(4000)))  // the shown resets roll
        #expect(recorder.intents.suffix(2) == [CounterIntent(scene: "score", counter: "home", edit: .reset),
                                               CounterIntent(scene: "score", counter: "away", edit: .reset)])
        #expect(try s.value(of: "home") == 0 && s.value(of: "away") == 0)
        #expect(!key("KEY_R", .released, at: 4100))
        // Decrement at the minimum: handed on, refused by the rules, nothing changes.
        #expect(!key("KEY_DOWN", .pressed, at: 5000))
        #expect(recorder.refusals.count == 1 && recorder.refusals[0].contains("minimum 0"))
        #expect(try s.value(of: "home") == 0)
    }

    @Test func gesturesActOnTheCounterUnderTheFinger() throws {
        let recorder = IntentRecorder { t(0) }
        let s = try make(table(), recorder: recorder)
        s.layout(size: size)
        #expect(s.counter(atNormalized: 0.25, 0.5) == "home" && s.counter(atNormalized: 0.75, 0.5) == "away")
        _ = s.handle(.gesture(.tap(x: 0.25, y: 0.5)), now: t(0))
        _ = s.handle(.gesture(.tap(x: 0.25, y: 0.6)), now: t(10))
        _ = s.handle(.gesture(.tap(x: 0.75, y: 0.4)), now: t(20))
        #expect(try s.value(of: "home") == 2 && s.value(of: "away") == 1)
        _ = s.handle(.gesture(.swipe(.down, x: 0.2, y: 0.3)), now: t(30))
        #expect(try s.value(of: "home") == 1)
        _ = s.handle(.gesture(.swipe(.up, x: 0.8, y: 0.7)), now: t(40))
        #expect(try s.value(of: "away") == 2)
        _ = s.handle(.gesture(.swipe(.left, x: 0.8, y: 0.7)), now: t(50))
        _ = s.handle(.gesture(.longPress(x: 0.7, y: 0.5)), now: t(60))
        #expect(try s.value(of: "away") == 0 && s.value(of: "home") == 1)
        #expect(recorder.intents.map(\.edit) == [.increment, .increment, .increment, .decrement, .increment, .reset])
        // Raw touches are left to the gesture recogniser.
        #expect(!s.handle(.touch(TouchEvent(.down, slot: 0, x: 0.25, y: 0.5)), now: t(70)))
    }

    @Test func labelsAreDrawnAboveTheirDigits() throws {
        let s = try make(table())
        let canvas = try Canvas(size: size)
        s.layout(size: size); s.apply(theme: .default); s.didAppear(now: t(0))
        _ = s.draw(into: canvas)
        let home = try s.area(of: "home"), windows = try s.digitWindows(of: "home")
        let labelBand = Rect(x: home.x, y: home.y, width: home.width, height: windows[0].y - home.y)
        #expect(Pixels.count(Theme.default.palette.text, in: canvas, rect: labelBand, tolerance: 20) > 30)
        let away = try s.area(of: "away")
        #expect(!home.intersects(away))
        for w in windows { #expect(home.contains(w)) }
    }
}

@Suite struct CounterWithSceneManagerTests {
    /// A key through the manager: the changed digit rolls on monotonic frame timers, every
    /// presented frame damages only that digit's window, and at rest the timers stop.
    @Test func keyRollsOnlyTheChangedDigitOnScreen() throws {
        let loop = ManualEventLoop()
        let display = try HeadlessDisplay(size: Size(width: 320, height: 180))
        let recorder = IntentRecorder { loop.now() }
        let scene = try CounterScene(name: "score", counters: [.init(name: "home", label: "HOME")], digits: 3, rollMs: 200,
                                     keyBindings: [CounterKeyBinding(code: 103, action: .increment, target: .counter("home"))],
                                     values: ["home": 41], intents: recorder.sink)
        recorder.showsOn = scene
        let m = SceneManager(scenes: [scene], theme: .default, display: display, loop: loop, logger: Logger(label: "test"))
        recorder.onShown = { m.sceneDidChange() }
        m.start()
        loop.runDeferred()
        #expect(display.presentCount == 1)
        let pressed = loop.now(.monotonic)
        m.input(.key(code: 103, state: .pressed, timeUsec: UInt64(pressed / 1000)))
        #expect(recorder.intents == [CounterIntent(scene: "score", counter: "home", edit: .increment)])
        #expect(try scene.value(of: "home") == 42)
        let window = try scene.digitWindows(of: "home")[2]
        // Frames come on a 60 Hz grid until the 200 ms roll is over; then nothing is armed.
        var frameTimes: [Int64] = []
        m.onFrame = { _ in frameTimes.append(loop.now(.monotonic)) }
        loop.advance(by: 1_000_000_000)
        #expect(!scene.isRolling)
        #expect(loop.pendingTimers == 0)
        #expect(scene.nextDeadline(now: loop.now()) == nil)
        // The frame of the key press itself, then one on each 1/60 s instant up to the first at
        // or after the end of the roll.
        let interval = sixtyHz
        let firstTick: Int64 = (pressed / interval + 1) * interval
        let rollEnd: Int64 = pressed + 200_000_000
        let lastTick: Int64 = ((rollEnd + interval - 1) / interval) * interval
        let grid: [Int64] = Array(stride(from: firstTick, through: lastTick, by: Int(interval)))
        #expect(frameTimes == [pressed] + grid)
        let rollFrames = display.damageHistory.dropFirst()
        #expect(rollFrames.count == frameTimes.count)
        for d in rollFrames { #expect(d == Damage([window])) }
        // The screen now shows the same pixels as a fresh full drawing of 042.
        let (_, fresh) = try { () throws -> (CounterScene, Canvas) in
            let s = try CounterScene(name: "score", counters: [.init(name: "home", label: "HOME")], digits: 3,
                                     values: ["home": 42], intents: { _ in })
            let c = try Canvas(size: Size(width: 320, height: 180))
            s.layout(size: c.size); s.apply(theme: .default); s.didAppear(now: loop.now()); _ = s.draw(into: c)
            return (s, c)
        }()
        #expect(Pixels.differingPixels(display.framebuffer, fresh) == 0)
        m.stop()
    }
}
