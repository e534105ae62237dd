import KioskCore
import KioskRender
import KioskState
import Logging

/// What a key binding acts on: one counter or all of them.
public enum CounterTarget: Sendable, Equatable {
    case all
    case counter(String)
}

/// A key bound to a counter action (`[scene.NAME.keys]`, e.g. `KEY_UP = "increment home"`).
public struct CounterKeyBinding: Sendable, Equatable {
    public var code: UInt16
    public var action: CounterAction
    public var target: CounterTarget
    public init(code: UInt16, action: CounterAction, target: CounterTarget) {
        self.code = code; self.action = action; self.target = target
    }
}

/// What a counter scene does on touch gestures over a counter.
public struct CounterGestureActions: Sendable, Equatable {
    public var tap: CounterAction
    public var longPress: CounterAction
    public var swipeDown: CounterAction
    public var swipeUp: CounterAction
    public init(tap: CounterAction = .increment, longPress: CounterAction = .reset,
                swipeDown: CounterAction = .decrement, swipeUp: CounterAction = .increment) {
        self.tap = tap; self.longPress = longPress; self.swipeDown = swipeDown; self.swipeUp = swipeUp
    }
}

/// The mechanical counter: one or more labelled N-digit odometers whose changed digits roll to
/// their new value, driven by touch gestures, keys and the control interface.
/// Every change is saved through the scene's `StateStore` before it is acknowledged.
public final class CounterScene: Scene, CounterControl {
    /// One counter's definition (`[[scene.NAME.counter]]`).
    public struct CounterSpec: Sendable, Equatable {
        public var name: String
        public var label: String
        public init(name: String, label: String) { self.name = name; self.label = label }
    }

    private struct Counter {
        var spec: CounterSpec
        var value: Int
        /// Wheels turning, by digit position (0 = most significant).
        var rolls: [Int: DigitRoll] = [:]
        var area = Rect(x: 0, y: 0, width: 0, height: 0)
        var labelBox = Rect(x: 0, y: 0, width: 0, height: 0)
        var windows: [Rect] = []
    }

    public let name: String
    public var kind: String { "counter" }
    /// The settings, checked when they were made.
    public let settings: CounterSettings
    public let digits: Int
    public let minimum: Int
    public let rollNs: Int64
    public let shading: Bool
    public let gestures: CounterGestureActions
    public let keyBindings: [CounterKeyBinding]
    /// A reset bound to a key happens only after the key is held this long (0: on press).
    public let resetHoldNs: Int64
    /// The largest value shown (10^digits − 1).
    public var maxValue: Int { Odometer.maxValue(digits: digits) }
    /// Takes a touch or key action on a counter instead of the scene (returns true when it took
    /// it): a counter shared by a fleet is changed by the group's primary, not here. Nil: the
    /// scene changes its counters itself.
    public var changeRouter: ((_ counter: String, _ action: CounterAction) -> Bool)?
    /// The other instances of this scene (the same scene shown on other outputs): every value
    /// this one saves or is shown is shown by them too, so a counter shows one value everywhere.
    public var siblings: [CounterScene] {
        get { siblingRefs.compactMap(\.scene) }
        set { siblingRefs = newValue.filter { $0 !== self }.map(WeakCounterScene.init) }
    }
    private var siblingRefs: [WeakCounterScene] = []

    private var counters: [Counter]
    private let state: StateStore
    private let logger: Logger
    private var theme: Theme = .default
    private var size = Size(width: 1, height: 1)
    private var needsFull = true
    /// Monotonic time of the frame to draw (from the last update, input or control call).
    private var frameNs: Int64 = 0
    /// Keys held for a reset that needs holding: key code → monotonic due time.
    private var pendingHolds: [UInt16: Int64] = [:]
    private var digitPx = 10.0
    /// The ten digits, rendered once per font and size.
    private let stamps = TextStamps(limit: 64)
    private var labelPx = 10.0
    private var fontsFor: Size?

    /// Time between animation frames while a digit rolls (60 Hz).
    public static let frameIntervalNs: Int64 = 16_666_667

    /// A counter scene with settings checked when they were made (`CounterSettings`).
    public init(name: String, settings: CounterSettings, state: StateStore, logger: Logger = Logger(label: "kioskd.counter")) {
        self.name = name
        self.settings = settings
        self.digits = settings.digits
        self.minimum = settings.minimum
        self.rollNs = Int64(settings.rollMs) * 1_000_000
        self.shading = settings.shading
        self.gestures = settings.gestures
        self.keyBindings = settings.keyBindings
        self.resetHoldNs = Int64(settings.resetHoldMs) * 1_000_000
        self.state = state
        self.logger = logger
        self.counters = settings.counters.map { Counter(spec: $0, value: settings.minimum) }
        for i in self.counters.indices { self.counters[i].value = loadValue(self.counters[i].spec.name) }
    }

    /// A counter scene from settings given one by one; a broken rule (`CounterSettings`) is a
    /// config error naming the scene.
    public convenience init(name: String, counters: [CounterSpec], digits: Int = 4, minimum: Int = 0, rollMs: Int = 500,
                            shading: Bool = true, gestures: CounterGestureActions = CounterGestureActions(),
                            keyBindings: [CounterKeyBinding] = [], resetHoldMs: Int = 0,
                            state: StateStore, logger: Logger = Logger(label: "kioskd.counter")) throws {
        let settings: CounterSettings
        do {
            settings = try CounterSettings(scene: name, counters: counters, digits: digits, minimum: minimum, rollMs: rollMs,
                                           shading: shading, gestures: gestures, keyBindings: keyBindings, resetHoldMs: resetHoldMs)
        } catch let e as CounterSettings.Invalid {
            throw KioskError.config("scene '\(name)': \(e.message)")
        }
        self.init(name: name, settings: settings, state: state, logger: logger)
    }

    // MARK: config

    /// Makes a counter scene from `[scene.NAME]` (`kind = "counter"` already read by the manager).
    public static func make(_ table: ConfigTable, _ context: SceneContext) throws -> Scene {
        let settings = try CounterSettings.read(table, scene: context.name)
        var logger = context.logger
        logger[metadataKey: "scene"] = "\(context.name)"
        return CounterScene(name: context.name, settings: settings, state: context.state, logger: logger)
    }

    // MARK: persistence

    /// The state key of a counter's value: "counter", the scene's and the counter's names joined
    /// so that no two (scene, counter) pairs share a key (`StateKey.join`).
    public func stateKey(_ counter: String) -> String { Self.stateKey(scene: name, counter: counter) }
    public static func stateKey(scene: String, counter: String) -> String { StateKey.join(["counter", scene, counter]) }

    /// The key earlier versions used ("counter.SCENE.COUNTER" as written; ambiguous when a name
    /// holds a "."), read once to move a saved value to `stateKey`.
    public func legacyStateKey(_ counter: String) -> String { Self.legacyStateKey(scene: name, counter: counter) }
    public static func legacyStateKey(scene: String, counter: String) -> String { "counter.\(scene).\(counter)" }

    /// Shows a value saved elsewhere (under an earlier key), checked like a loaded one.
    public func restoreValue(_ raw: String, of counter: String) {
        guard let i = counters.firstIndex(where: { $0.spec.name == counter }) else { return }
        counters[i].value = parseValue(raw, key: legacyStateKey(counter))
        needsFull = true
    }

    private func loadValue(_ counter: String) -> Int {
        let key = stateKey(counter)
        guard let raw = state.load(key) else { return minimum }
        return parseValue(raw, key: key)
    }

    private func parseValue(_ raw: String, key: String) -> Int {
        let trimmed = String(raw.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
        if let v = Int(trimmed), v >= minimum, v <= maxValue { return v }
        logger.error("stored counter value is not usable; starting at the minimum", metadata: [
            "state.key": "\(key)", "stored": "\(raw)", "expected": "a whole number in \(minimum)…\(maxValue)",
            "using": "\(minimum)"])
        return minimum
    }

    // MARK: CounterControl

    public var counterNames: [String] { counters.map(\.spec.name) }

    public var counterInfo: [CounterInfo] {
        counters.map { CounterInfo(name: $0.spec.name, label: $0.spec.label, value: $0.value, minimum: minimum, maximum: maxValue) }
    }

    private func index(_ counter: String) throws -> Int {
        guard let i = counters.firstIndex(where: { $0.spec.name == counter }) else {
            throw KioskError.notFound("scene '\(name)' has no counter '\(counter)' (counters: \(counterNames.joined(separator: ", ")))")
        }
        return i
    }

    public func value(of counter: String) throws -> Int { counters[try index(counter)].value }

    /// The limits of `counter` (for deciding a change outside the scene, in the command pipeline).
    public func rules(of counter: String) throws -> CounterRules {
        _ = try index(counter)
        return CounterRules(counter: counter, digits: digits, minimum: minimum)
    }

    /// Carries out `edit` on `counter`: decided by `CounterRules`, saved, then shown.
    public func edit(_ counter: String, _ edit: CounterEdit, now: WallTime) throws {
        let i = try index(counter)
        let old = counters[i].value
        let new = try CounterRules(counter: counter, digits: digits, minimum: minimum).apply(edit, to: old)
        let direction: RollDirection
        switch edit {
        case .set: direction = new >= old ? .up : .down
        case .increment: direction = .up
        case .decrement, .reset: direction = .down
        }
        try change(i, to: new, direction: direction, now: now)
    }

    public func set(_ counter: String, to value: Int, now: WallTime) throws { try edit(counter, .set(value), now: now) }

    public func increment(_ counter: String, now: WallTime) throws { try edit(counter, .increment, now: now) }

    public func decrement(_ counter: String, now: WallTime) throws { try edit(counter, .decrement, now: now) }

    public func reset(_ counter: String, now: WallTime) throws { try edit(counter, .reset, now: now) }

    /// Shows a value already made durable elsewhere (the command pipeline): nothing is saved, the
    /// wheels of the digits that changed start turning. A value the digits cannot show is ignored.
    public func showCommitted(_ counter: String, value new: Int, up: Bool, now: WallTime) {
        showHere(counter, value: new, up: up, now: now)
        for s in siblings { s.showHere(counter, value: new, up: up, now: now) }
    }

    private func showHere(_ counter: String, value new: Int, up: Bool, now: WallTime) {
        guard let i = counters.firstIndex(where: { $0.spec.name == counter }), new >= 0, new <= maxValue else { return }
        frameNs = now.monotonicNs
        startRolls(i, to: new, direction: up ? .up : .down, now: now)
    }

    /// Saves the new value durably, then starts the wheels of the digits that changed.
    private func change(_ i: Int, to new: Int, direction: RollDirection, now: WallTime) throws {
        frameNs = now.monotonicNs
        let old = counters[i].value
        guard new != old else { return }
        let key = stateKey(counters[i].spec.name)
        do {
            try state.save(key, String(new))
        } catch {
            throw KioskError.state("counter '\(counters[i].spec.name)': cannot save \(new) (state key \(key)): \(error); the value stays \(old)")
        }
        startRolls(i, to: new, direction: direction, now: now)
        for s in siblings { s.showHere(counters[i].spec.name, value: new, up: direction == .up, now: now) }
    }

    /// Sets the shown value and starts the wheels of the digits that changed.
    private func startRolls(_ i: Int, to new: Int, direction: RollDirection, now: WallTime) {
        let old = counters[i].value
        guard new != old else { return }
        counters[i].value = new
        let newDigits = Odometer.digits(of: new, count: digits)
        for p in Odometer.changedPositions(from: old, to: new, count: digits) {
            // A wheel already turning continues from the digit it was heading to.
            let from = counters[i].rolls[p]?.to ?? Odometer.digits(of: old, count: digits)[p]
            counters[i].rolls[p] = DigitRoll(from: from, to: newDigits[p], direction: direction,
                                             startNs: now.monotonicNs, durationNs: rollNs)
        }
    }

    /// Runs an action on its target; errors (a decrement at the minimum, a failed save) are logged.
    private func perform(_ action: CounterAction, on target: CounterTarget, now: WallTime) -> Bool {
        guard action != .none else { return false }
        let names: [String]
        switch target {
        case .all: names = counterNames
        case .counter(let n): names = [n]
        }
        var changed = false
        for n in names {
            if let route = changeRouter, route(n, action) { continue }
            let before = counters.firstIndex { $0.spec.name == n }.map { counters[$0].value }
            do {
                switch action {
                case .increment: try increment(n, now: now)
                case .decrement: try decrement(n, now: now)
                case .reset: try reset(n, now: now)
                case .none: break
                }
            } catch {
                logger.warning("counter action refused", metadata: ["counter": "\(n)", "action": "\(action.rawValue)", "error": "\(error)"])
            }
            if let b = before, (try? value(of: n)) != b { changed = true }
        }
        return changed
    }

    // MARK: Scene

    public var statusSummary: String {
        counters.map { c in
            let v = Odometer.padded(c.value, count: digits)
            return c.spec.label.isEmpty ? v : "\(c.spec.label) \(v)"
        }.joined(separator: " ")
    }

    /// True while a digit wheel is turning (or waiting for its last frame to be drawn).
    public var isRolling: Bool { counters.contains { !$0.rolls.isEmpty } }

    /// The rectangle of a counter (labels and digits) and its digit windows, in pixels.
    public func area(of counter: String) throws -> Rect { counters[try index(counter)].area }
    public func digitWindows(of counter: String) throws -> [Rect] { counters[try index(counter)].windows }

    public func layout(size: Size) {
        // A new layout at the same size (after unblanking, a hotplug, another VT) keeps the
        // rendered digits: they are keyed by window size, colours and font size.
        if size != self.size {
            stamps.removeAll()
            digitTiles.removeAll()
        }
        self.size = size
        let n = counters.count
        let sideBySide = size.width >= size.height
        let hasLabels = counters.contains { !$0.spec.label.isEmpty }
        for i in counters.indices {
            let area: Rect
            if sideBySide {
                let x0 = size.width * i / n, x1 = size.width * (i + 1) / n
                area = Rect(x: x0, y: 0, width: x1 - x0, height: size.height)
            } else {
                let y0 = size.height * i / n, y1 = size.height * (i + 1) / n
                area = Rect(x: 0, y: y0, width: size.width, height: y1 - y0)
            }
            counters[i].area = area
            let labelH = hasLabels ? area.height * 18 / 100 : 0
            counters[i].labelBox = Rect(x: area.x + area.width / 20, y: area.y + area.height / 10,
                                        width: area.width * 9 / 10, height: labelH)
            // Digit windows: aspect 0.62:1 with gaps of 0.08 of a window's height, centred below the label.
            let availW = Double(area.width) * 0.9
            let top = area.y + area.height / 10 + labelH + area.height / 30
            let availH = Double(area.maxY - area.height / 10 - top)
            let d = Double(digits)
            let h = max(4, Int(min(availH, availW / (d * 0.62 + (d - 1) * 0.08)).rounded(.down)) & ~1)
            let w = max(2, Int((Double(h) * 0.62).rounded()))
            let gap = Int((Double(h) * 0.08).rounded())
            let total = digits * w + (digits - 1) * gap
            let x0 = area.x + (area.width - total) / 2
            let y0 = top + (Int(availH) - h) / 2
            counters[i].windows = (0..<digits).map { Rect(x: x0 + $0 * (w + gap), y: y0, width: w, height: h) }
        }
        fontsFor = nil
        needsFull = true
    }

    public func apply(theme: Theme) {
        self.theme = theme
        fontsFor = nil
        stamps.removeAll()
        digitTiles.removeAll()
        needsFull = true
    }

    public func didAppear(now: WallTime) {
        frameNs = now.monotonicNs
        // A key held while another scene was on screen may have been released there.
        pendingHolds.removeAll()
        needsFull = true
    }

    /// Advances the animation clock and fires held-key resets; true while something must be drawn.
    public func update(now: WallTime) -> Bool {
        frameNs = now.monotonicNs
        var changed = false
        for (code, due) in pendingHolds.sorted(by: { $0.key < $1.key }) where due <= now.monotonicNs {
            pendingHolds[code] = nil
            if let b = keyBindings.first(where: { $0.code == code }) {
                changed = perform(b.action, on: b.target, now: now) || changed
            }
        }
        return changed || isRolling
    }

    public func handle(_ event: InputEvent, now: WallTime) -> Bool {
        switch event {
        case .key(let code, let keyState, let timeUsec):
            guard let b = keyBindings.first(where: { $0.code == code }) else { return false }
            switch keyState {
            case .pressed:
                if b.action == .reset && resetHoldNs > 0 {
                    let start = timeUsec > 0 ? Int64(timeUsec) * 1000 : now.monotonicNs
                    pendingHolds[code] = start + resetHoldNs
                    return false
                }
                frameNs = now.monotonicNs
                return perform(b.action, on: b.target, now: now)
            case .released:
                pendingHolds[code] = nil
                return false
            case .repeated:
                return false
            }
        case .gesture(let g):
            frameNs = now.monotonicNs
            switch g {
            case .tap(let x, let y): return gesture(gestures.tap, x: x, y: y, now: now)
            case .longPress(let x, let y): return gesture(gestures.longPress, x: x, y: y, now: now)
            case .swipe(.down, let x, let y): return gesture(gestures.swipeDown, x: x, y: y, now: now)
            case .swipe(.up, let x, let y): return gesture(gestures.swipeUp, x: x, y: y, now: now)
            case .swipe: return false
            }
        default:
            return false
        }
    }

    /// The counter under a normalised point, if any.
    public func counter(atNormalized x: Double, _ y: Double) -> String? {
        let p = Point(x: x * Double(size.width), y: y * Double(size.height))
        return counters.first { $0.area.contains(p) }?.spec.name
    }

    private func gesture(_ action: CounterAction, x: Double, y: Double, now: WallTime) -> Bool {
        guard let n = counter(atNormalized: x, y) else { return false }
        return perform(action, on: .counter(n), now: now)
    }

    /// The next animation frame while a wheel turns, a held key's due time, or nil at rest.
    public func nextDeadline(now: WallTime) -> Deadline? {
        var due: Int64? = pendingHolds.values.min()
        if isRolling {
            // The next instant of a fixed 60 Hz grid, so late frames do not push the rest back.
            let frame = (now.monotonicNs / CounterScene.frameIntervalNs + 1) * CounterScene.frameIntervalNs
            due = min(due ?? frame, frame)
        }
        return due.map { .monotonic($0) }
    }

    // MARK: drawing

    private var windowColor: Color { theme.palette.primary }
    private var digitColor: Color { theme.palette.readableText(on: windowColor) }
    private var labelColor: Color { theme.palette.readableText(on: theme.palette.background) }

    private func fitFonts(_ canvas: Canvas) {
        guard fontsFor != size, let c = counters.first, let w = c.windows.first else { return }
        digitPx = canvas.fittingSize("8", theme.fonts.heading, maxPx: Double(w.height) * 0.85,
                                     width: Double(w.width) * 0.85, height: Double(w.height) * 0.95)
        let lb = c.labelBox
        let longest = counters.map(\.spec.label).max { $0.count < $1.count } ?? ""
        labelPx = lb.height > 0 && !longest.isEmpty
            ? canvas.fittingSize(longest, theme.fonts.body, maxPx: Double(lb.height), width: Double(lb.width), height: Double(lb.height))
            : 10
        labelPx = min(labelPx, digitPx * 0.6)
        fontsFor = size
    }

    /// At rest nothing is drawn; while wheels turn only their windows are redrawn and damaged.
    public func draw(into canvas: Canvas) -> Damage {
        fitFonts(canvas)
        var damage = Damage()
        if needsFull {
            canvas.clear(theme.palette.background)
            for c in counters where !c.spec.label.isEmpty && !c.labelBox.isEmpty {
                let b = c.labelBox
                canvas.drawText(c.spec.label, theme.fonts.body, px: labelPx, color: labelColor,
                                in: (Double(b.x), Double(b.y), Double(b.width), Double(b.height)))
            }
            damage = Damage.full(canvas.size)
        }
        for i in counters.indices {
            let shown = Odometer.digits(of: counters[i].value, count: digits)
            for (p, window) in counters[i].windows.enumerated() {
                if let roll = counters[i].rolls[p] {
                    drawWindow(canvas, window, roll: roll, progress: roll.progress(at: frameNs))
                    damage.add(window)
                    if roll.isFinished(at: frameNs) { counters[i].rolls[p] = nil }
                } else if needsFull {
                    drawWindow(canvas, window, roll: DigitRoll(from: shown[p], to: shown[p], direction: .up, startNs: 0, durationNs: 0), progress: 1)
                }
            }
        }
        needsFull = false
        return damage.clipped(to: Rect(size: canvas.size))
    }

    /// One digit window: the old and new glyphs one window-height apart, moved by the eased
    /// progress, clipped to the window, with a shade at the top and bottom edges for depth.
    /// Each row is copied from the digits' pictures (`DigitTiles`, rendered once per size,
    /// colours and font size), the rounded corners go back over them, then the shades.
    private func drawWindow(_ canvas: Canvas, _ r: Rect, roll: DigitRoll, progress p: Double) {
        guard usesDigitTiles, let t = tiles(for: r, on: canvas) else { return drawWindowWithCairo(canvas, r, roll: roll, progress: p) }
        let h = r.height
        let offset = Int((p * Double(h)).rounded())
        let from = roll.from, to = roll.to
        t.draw(at: Point(x: Double(r.x), y: Double(r.y)), into: canvas.pixels, clip: r) { y in
            if p >= 1 || from == to { return (to, y) }
            if p <= 0 { return (from, y) }
            if roll.direction == .up { return y < h - offset ? (from, y + offset) : (to, y - h + offset) }
            return y >= offset ? (from, y - offset) : (to, y - offset + h)
        }
        canvas.markDirty(r)
        if shading, !t.shaded, let s = shades(width: r.width, height: r.height) {
            let x = Double(r.x), y = Double(r.y)
            canvas.composite(s.top, x: x, y: y)
            canvas.composite(s.bottom, x: x, y: y + Double(h - s.bottom.size.height))
        }
    }

    /// The digit pictures for windows of `r`'s size in the current colours and font size, made
    /// when first needed.
    private func tiles(for r: Rect, on canvas: Canvas) -> DigitTiles? {
        let key = DigitTiles.Key(size: Size(width: r.width, height: r.height), window: windowColor,
                                 background: theme.palette.background, digit: digitColor, px: digitPx)
        if let t = digitTiles.first(where: { $0.key == key }) { return t }
        guard let t = try? DigitTiles(key: key, radius: Double(r.width) * 0.12, shades: shading ? shades(width: r.width, height: r.height) : nil,
                                      drawDigit: { d, c in
            glyph(c, d, Rect(x: 0, y: 0, width: r.width, height: r.height), dy: 0)
        }) else { return nil }
        digitTilesMade += 1
        if digitTiles.count >= 4 { digitTiles.removeFirst() }
        digitTiles.append(t)
        return t
    }
    private var digitTiles: [DigitTiles] = []
    /// Whether windows are copied from `DigitTiles` (else drawn with cairo each frame, as the
    /// tests' reference).
    var usesDigitTiles = true
    /// How many sets of digit pictures were rendered.
    private(set) var digitTilesMade = 0

    /// The same window drawn with cairo (when the digit pictures cannot be made).
    private func drawWindowWithCairo(_ canvas: Canvas, _ r: Rect, roll: DigitRoll, progress p: Double) {
        canvas.withClip(r) {
            canvas.fill(r, theme.palette.background)
            let x = Double(r.x), y = Double(r.y), w = Double(r.width), h = Double(r.height)
            canvas.fillRoundedRect(x: x, y: y, width: w, height: h, radius: w * 0.12, windowColor)
            let offset = (p * h).rounded()
            if p >= 1 || roll.from == roll.to {
                glyph(canvas, roll.to, r, dy: 0)
            } else if p <= 0 {
                glyph(canvas, roll.from, r, dy: 0)
            } else if roll.direction == .up {
                glyph(canvas, roll.from, r, dy: -offset)
                glyph(canvas, roll.to, r, dy: h - offset)
            } else {
                glyph(canvas, roll.from, r, dy: offset)
                glyph(canvas, roll.to, r, dy: offset - h)
            }
            if shading, let s = shades(width: r.width, height: r.height) {
                canvas.composite(s.top, x: x, y: y)
                canvas.composite(s.bottom, x: x, y: y + h - Double(s.bottom.size.height))
            }
        }
    }

    /// The shades at the top and bottom edge of a window (the background colour fading out),
    /// rendered once per window size and theme and laid over each frame: a gradient costs more
    /// to compute than to copy.
    private func shades(width: Int, height: Int) -> (top: Canvas, bottom: Canvas)? {
        let band = Int((Double(height) * 0.18).rounded())
        let shade = theme.palette.background
        if let c = shadeCache, c.width == width, c.band == band, c.color == shade { return (c.top, c.bottom) }
        guard band > 0, let top = try? Canvas(transparentSize: Size(width: width, height: band)),
              let bottom = try? Canvas(transparentSize: Size(width: width, height: band)) else { return nil }
        let w = Double(width), b = Double(band)
        top.fillVerticalGradient(x: 0, y: 0, width: w, height: b, top: shade.withAlpha(0.55), bottom: shade.withAlpha(0))
        bottom.fillVerticalGradient(x: 0, y: 0, width: w, height: b, top: shade.withAlpha(0), bottom: shade.withAlpha(0.55))
        shadeCache = (width, band, shade, top, bottom)
        return (top, bottom)
    }
    private var shadeCache: (width: Int, band: Int, color: Color, top: Canvas, bottom: Canvas)?

    /// A digit centred in the window, at whole-pixel positions so a moved glyph keeps its shape.
    private func glyph(_ canvas: Canvas, _ d: Int, _ r: Rect, dy: Double) {
        // The digit's stamp: laid out and rendered once, then one image composite per frame.
        guard let stamp = stamps.stamp(String(d), theme.fonts.heading, px: digitPx) else { return }
        let m = stamp.metrics
        let tx = (Double(r.x) + (Double(r.width) - m.width) / 2).rounded()
        let ty = (Double(r.y) + (Double(r.height) - m.height) / 2).rounded() + dy
        stamps.draw(stamp, x: Int(tx), y: Int(ty), color: digitColor, on: canvas)
    }
}

extension CounterScene: PixelShiftable {
    /// Each counter's label and digit windows.
    public var shiftContentBoxes: [Rect] {
        counters.map { c in
            let label = c.spec.label.isEmpty ? Rect(x: 0, y: 0, width: 0, height: 0) : c.labelBox
            return c.windows.reduce(label) { $0.union($1) }
        }.filter { !$0.isEmpty }
    }
    public var shiftBackground: Color { theme.palette.background }
}

/// A counter scene held without keeping it alive (siblings refer to each other).
private struct WeakCounterScene {
    weak var scene: CounterScene?
}
