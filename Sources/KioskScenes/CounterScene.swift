import KioskCore
import KioskRender
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
/// their new value. The scene decides and keeps nothing: a touch or key on a counter becomes a
/// `CounterIntent` handed to the one entrance it was given when made (`SceneContext`), and a
/// value reaches the screen only when the scene is told to show it (`showCommitted`), after it
/// was kept.
public final class CounterScene: Scene, CounterControl {
    /// One counter's definition (`[[scene.NAME.counter]]`).
    public struct CounterSpec: Sendable, Equatable {
        public var name: String
        public var label: String
        /// The team's colour (`color`): its digit windows, with digits in the colour that reads
        /// best on it; nil: the theme's.
        public var color: Color?
        public init(name: String, label: String, color: Color? = nil) { self.name = name; self.label = label; self.color = color }
    }

    struct Counter {
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
    /// The other instances of this scene (the same scene shown on other outputs): every value
    /// this one saves or is shown is shown by them too, so a counter shows one value everywhere.
    public var siblings: [CounterScene] {
        get { siblingRefs.compactMap(\.scene) }
        set { siblingRefs = newValue.filter { $0 !== self }.map(WeakCounterScene.init) }
    }
    private var siblingRefs: [WeakCounterScene] = []

    /// Where a touch or key on a counter goes (the daemon's one entrance).
    private let intents: (CounterIntent) -> Void
    private let logger: Logger
    // Shared with the drawing (CounterScene+Drawing.swift).
    var counters: [Counter]
    var theme: Theme = .default
    var size = Size(width: 1, height: 1)
    var needsFull = true
    /// Monotonic time of the frame to draw (from the last update, input or shown value).
    var frameNs: Int64 = 0
    /// Keys held for a reset that needs holding: key code → monotonic due time.
    private var pendingHolds: [UInt16: Int64] = [:]
    var digitPx = 10.0
    /// The ten digits, rendered once per font and size.
    let stamps = TextStamps(limit: 64)
    var labelPx = 10.0
    var fontsFor: Size?
    /// The digit pictures made (`DigitTiles`), at most four sizes.
    var digitTiles: [DigitTiles] = []
    /// Whether windows are copied from `DigitTiles` (else drawn with cairo each frame, as the
    /// tests' reference).
    var usesDigitTiles = true
    /// How many sets of digit pictures were rendered.
    var digitTilesMade = 0
    var shadeCache: (width: Int, band: Int, color: Color, top: Canvas, bottom: Canvas)?
    /// The game clock (`[scene.NAME.clock]`; nil: none), CounterScene+Clock.swift.
    let clockPanel: ClockPanel?
    /// Where a key bound to `undo` goes, with the scene's name (the daemon's undo of the last
    /// counter change; nil: nowhere).
    public var undoRequests: ((String) -> Void)?

    /// Time between animation frames while a digit rolls (60 Hz).
    public static let frameIntervalNs: Int64 = 16_666_667

    /// A counter scene with settings checked when they were made (`CounterSettings`), showing
    /// `values` (by counter name; the minimum for a counter not given, or given a value its
    /// digits cannot show), handing touches and keys on a counter to `intents`.
    public init(name: String, settings: CounterSettings, values: [String: Int] = [:],
                intents: @escaping (CounterIntent) -> Void, logger: Logger = Logger(label: "kioskd.counter")) {
        self.name = name
        self.settings = settings
        self.digits = settings.digits
        self.minimum = settings.minimum
        self.rollNs = Int64(settings.rollMs) * 1_000_000
        self.shading = settings.shading
        self.gestures = settings.gestures
        self.keyBindings = settings.keyBindings
        self.resetHoldNs = Int64(settings.resetHoldMs) * 1_000_000
        self.intents = intents
        self.logger = logger
        self.clockPanel = settings.clock.map { ClockPanel(rules: $0, keys: settings.clockKeys) }
        let maxValue = Odometer.maxValue(digits: settings.digits)
        self.counters = settings.counters.map { spec in
            let v = values[spec.name].flatMap { (settings.minimum...maxValue).contains($0) ? $0 : nil } ?? settings.minimum
            return Counter(spec: spec, value: v)
        }
    }

    /// A counter scene from settings given one by one; a broken rule (`CounterSettings`) is a
    /// config error naming the scene.
    public convenience init(name: String, counters: [CounterSpec], digits: Int = 4, minimum: Int = 0, rollMs: Int = 500,
                            shading: Bool = true, gestures: CounterGestureActions = CounterGestureActions(),
                            keyBindings: [CounterKeyBinding] = [], resetHoldMs: Int = 0, values: [String: Int] = [:],
                            intents: @escaping (CounterIntent) -> Void, logger: Logger = Logger(label: "kioskd.counter")) throws {
        let settings: CounterSettings
        do {
            settings = try CounterSettings(scene: name, counters: counters, digits: digits, minimum: minimum, rollMs: rollMs,
                                           shading: shading, gestures: gestures, keyBindings: keyBindings, resetHoldMs: resetHoldMs)
        } catch let e as CounterSettings.Invalid {
            throw KioskError.config("scene '\(name)': \(e.message)")
        }
        self.init(name: name, settings: settings, values: values, intents: intents, logger: logger)
    }

    // MARK: config

    /// Makes a counter scene from `[scene.NAME]` (`kind = "counter"` already read by the
    /// manager), showing the values kept for its counters (`context.stored`).
    public static func make(_ table: ConfigTable, _ context: SceneContext) throws -> Scene {
        let settings = try CounterSettings.read(table, scene: context.name)
        var logger = context.logger
        logger[metadataKey: "scene"] = "\(context.name)"
        let values = storedValues(scene: context.name, settings: settings, stored: context.stored, logger: logger)
        let scene = CounterScene(name: context.name, settings: settings, values: values, intents: context.counterIntents, logger: logger)
        scene.clockPanel?.keep(context.stored(GameClockRecord.stateKey(scene: context.name)), logger: logger)
        return scene
    }

    // MARK: persistence

    /// The state key of a counter's value: "counter", the scene's and the counter's names joined
    /// so that no two (scene, counter) pairs share a key (`StateKey.join`).
    public func stateKey(_ counter: String) -> String { Self.stateKey(scene: name, counter: counter) }
    public static func stateKey(scene: String, counter: String) -> String { StateKey.join(["counter", scene, counter]) }

    /// The key earlier versions used ("counter.SCENE.COUNTER" as written; ambiguous when a name
    /// holds a "."), read once to move a saved value to `stateKey` (`StateMigration`).
    public static func legacyStateKey(scene: String, counter: String) -> String { "counter.\(scene).\(counter)" }

    /// The values kept for `settings`' counters (`stored` by state key); a kept value the
    /// digits cannot show is logged and left out (the counter starts at the minimum).
    public static func storedValues(scene: String, settings: CounterSettings, stored: (String) -> String?, logger: Logger) -> [String: Int] {
        let maxValue = Odometer.maxValue(digits: settings.digits)
        var values: [String: Int] = [:]
        for c in settings.counters {
            let key = stateKey(scene: scene, counter: c.name)
            guard let raw = stored(key) else { continue }
            let trimmed = String(raw.drop(while: { $0.isWhitespace }).reversed().drop(while: { $0.isWhitespace }).reversed())
            if let v = Int(trimmed), v >= settings.minimum, v <= maxValue {
                values[c.name] = v
                continue
            }
            logger.error("stored counter value is not usable; starting at the minimum", metadata: [
                "state.key": "\(key)", "stored": "\(raw)", "expected": "a whole number in \(settings.minimum)…\(maxValue)",
                "using": "\(settings.minimum)"])
        }
        return values
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

    /// Hands an action on its target to the one entrance, one intent per counter; nothing
    /// changes here until a value is shown (so nothing visible changed yet: false).
    private func perform(_ action: CounterAction, on target: CounterTarget) -> Bool {
        guard let edit = action.edit else {
            if action == .undo { undoRequests?(name) }
            return false
        }
        let names: [String]
        switch target {
        case .all: names = counterNames
        case .counter(let n): names = [n]
        }
        for n in names { intents(CounterIntent(scene: name, counter: n, edit: edit)) }
        return false
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

    public func apply(theme: Theme) {
        self.theme = theme
        fontsFor = nil
        stamps.removeAll()
        digitTiles.removeAll()
        needsFull = true
    }

    public func didAppear(now: WallTime) {
        frameNs = now.monotonicNs
        clockPanel?.needsFull = true
        _ = clockPanel?.clock(at: now)
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
                changed = perform(b.action, on: b.target) || changed
            }
        }
        return advanceClock(now: now) || changed || isRolling
    }

    public func handle(_ event: InputEvent, now: WallTime) -> Bool {
        switch event {
        case .key(let code, let keyState, let timeUsec):
            if keyState == .pressed, clockKey(code, now: now) { return false }
            guard let b = keyBindings.first(where: { $0.code == code }) else { return false }
            switch keyState {
            case .pressed:
                if b.action == .reset && resetHoldNs > 0 {
                    let start = timeUsec > 0 ? Int64(timeUsec) * 1000 : now.monotonicNs
                    pendingHolds[code] = start + resetHoldNs
                    return false
                }
                frameNs = now.monotonicNs
                return perform(b.action, on: b.target)
            case .released:
                pendingHolds[code] = nil
                return false
            case .repeated:
                return false
            }
        case .gesture(let g):
            frameNs = now.monotonicNs
            switch g {
            case .tap(let x, let y): return clockTap(x: x, y: y, now: now) ? false : gesture(gestures.tap, x: x, y: y, now: now)
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
        return perform(action, on: .counter(n))
    }

    /// The next animation frame while a wheel turns, a held key's due time, or nil at rest.
    public func nextDeadline(now: WallTime) -> Deadline? {
        var due: Int64? = pendingHolds.values.min()
        if isRolling {
            // The next instant of a fixed 60 Hz grid, so late frames do not push the rest back.
            let frame = (now.monotonicNs / CounterScene.frameIntervalNs + 1) * CounterScene.frameIntervalNs
            due = min(due ?? frame, frame)
        }
        if clockPanel?.warning == nil, let c = clockPanel?.clock(at: now).nextChangeNs(after: now) { due = min(due ?? c, c) }
        return due.map { .monotonic($0) }
    }
}

/// A counter scene held without keeping it alive (siblings refer to each other).
private struct WeakCounterScene {
    weak var scene: CounterScene?
}
