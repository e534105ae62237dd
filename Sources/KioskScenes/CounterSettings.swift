import KioskCore

/// A counter scene's settings (`[scene.NAME]` with `kind = "counter"`). Every rule is checked
/// once, when a value is made (`init` or `read`), so a `CounterSettings` always holds: 1…9
/// digits, a minimum that fits in them, roll and hold times in range, at least one counter,
/// counter names that are valid, unique within the scene and can be saved as state keys.
public struct CounterSettings: Sendable, Equatable {
    public let counters: [CounterScene.CounterSpec]
    public let digits: Int
    public let minimum: Int
    public let rollMs: Int
    public let shading: Bool
    public let gestures: CounterGestureActions
    public let keyBindings: [CounterKeyBinding]
    /// A reset bound to a key happens only after the key is held this long (0: on press).
    public let resetHoldMs: Int
    /// Where each counter's name was written (by index), for errors that must name it; nil for
    /// counters not read from a config.
    public let namePlaces: [CounterNamePlace?]
    /// The scene's game clock (`[scene.NAME.clock]`; nil: none).
    public let clock: GameClockRules?
    /// What each key does to the game clock (`[scene.NAME.clock.keys]`; default: space starts and stops it).
    public let clockKeys: [UInt16: ClockIntent]

    public static let digitRange = 1...9
    public static let rollMsRange = 0...10_000
    public static let resetHoldMsRange = 0...60_000
    /// Longest counter label.
    public static let maxLabelCharacters = 64

    /// The setting a rule is broken by, and how.
    public struct Invalid: Error, Equatable {
        public enum Setting: Equatable, Sendable { case digits, minimum, rollMs, resetHoldMs, counters, counterName(Int) }
        public let setting: Setting
        public let message: String
        public init(setting: Setting, message: String) { self.setting = setting; self.message = message }
    }

    /// Checks every rule; throws `Invalid` naming the first setting that breaks one.
    /// `scene` is the scene's name (counter values are saved under keys made of both names).
    public init(scene: String, counters: [CounterScene.CounterSpec], digits: Int = 4, minimum: Int = 0, rollMs: Int = 500,
                shading: Bool = true, gestures: CounterGestureActions = CounterGestureActions(),
                keyBindings: [CounterKeyBinding] = [], resetHoldMs: Int = 0, namePlaces: [CounterNamePlace?] = [],
                clock: GameClockRules? = nil, clockKeys: [UInt16: ClockIntent]? = nil) throws {
        func outOfRange(_ v: Int, _ r: ClosedRange<Int>) -> String { "\(v) is out of range, expected \(r.lowerBound)…\(r.upperBound)" }
        guard Self.digitRange.contains(digits) else { throw Invalid(setting: .digits, message: outOfRange(digits, Self.digitRange)) }
        let minimumRange = 0...Odometer.maxValue(digits: digits)
        guard minimumRange.contains(minimum) else { throw Invalid(setting: .minimum, message: outOfRange(minimum, minimumRange)) }
        guard Self.rollMsRange.contains(rollMs) else { throw Invalid(setting: .rollMs, message: outOfRange(rollMs, Self.rollMsRange)) }
        guard Self.resetHoldMsRange.contains(resetHoldMs) else {
            throw Invalid(setting: .resetHoldMs, message: outOfRange(resetHoldMs, Self.resetHoldMsRange))
        }
        guard !counters.isEmpty else { throw Invalid(setting: .counters, message: "a counter scene needs at least one counter") }
        for (i, spec) in counters.enumerated() {
            let n = spec.name
            // The name is typed in commands and names the counter's state file.
            guard ConfigTable.isName(n), n != "all" else {
                throw Invalid(setting: .counterName(i), message: "a counter name has \(ConfigTable.nameRule) and is not \"all\", got \(ConfigTable.quoted(n))")
            }
            guard !counters[..<i].contains(where: { $0.name == n }) else {
                throw Invalid(setting: .counterName(i), message: "counter \"\(n)\" is defined twice")
            }
            if let why = StateKey.problem(StateKey.join(["counter", scene, n])) {
                throw Invalid(setting: .counterName(i), message: "counter \"\(n)\" of scene \"\(scene)\" cannot be saved: \(why); use shorter scene and counter names")
            }
        }
        self.counters = counters
        self.digits = digits
        self.minimum = minimum
        self.rollMs = rollMs
        self.shading = shading
        self.gestures = gestures
        self.keyBindings = keyBindings
        self.resetHoldMs = resetHoldMs
        self.namePlaces = counters.indices.map { $0 < namePlaces.count ? namePlaces[$0] : nil }
        self.clock = clock
        self.clockKeys = clock == nil ? [:] : clockKeys ?? [KeyCode.code(named: "KEY_SPACE") ?? 57: .toggle]
    }

    /// Reads every key of a `[scene.NAME]` table with `kind = "counter"` (its `[[…counter]]`
    /// tables, its `[…keys]` table and its `[…clock]` table), then reports unknown keys. A broken rule is reported at
    /// the key that breaks it, with file:line.
    public static func read(_ table: ConfigTable, scene: String) throws -> CounterSettings {
        let digits = try table.int("digits", default: 4)
        let minimum = try table.int("min", default: 0)
        let rollMs = try table.int("roll_ms", default: 500)
        let shading = try table.bool("shading", default: true)
        let gestures = CounterGestureActions(
            tap: try table.choice("tap", default: CounterAction.increment),
            longPress: try table.choice("long_press", default: CounterAction.reset),
            swipeDown: try table.choice("swipe_down", default: CounterAction.decrement),
            swipeUp: try table.choice("swipe_up", default: CounterAction.increment))
        for (key, action) in [("tap", gestures.tap), ("long_press", gestures.longPress), ("swipe_down", gestures.swipeDown), ("swipe_up", gestures.swipeUp)]
        where action == .undo {
            throw table.error(key, "\"undo\" is for keys only ([\(table.fullKey("keys"))]): a gesture acts on the counter it touches; expected \"increment\", \"decrement\", \"reset\" or \"none\"")
        }
        let holdMs = try table.int("reset_hold_ms", default: 0)

        var specs: [CounterScene.CounterSpec] = []
        var places: [CounterNamePlace?] = []
        var counterTables: [ConfigTable] = []
        if let tables = try table.tableArray("counter") {
            for t in tables {
                let n = try t.requiredString("name")
                // Without a label the name is shown (the name rule below keeps it short).
                let label = try t.has("label") ? t.text("label", default: n, maxCharacters: maxLabelCharacters) : t.string("label", default: n)
                let color = try t.color("color")
                try t.finish()
                specs.append(CounterScene.CounterSpec(name: n, label: label, color: color))
                places.append(t.entries["name"].map { CounterNamePlace(location: $0.location, key: t.fullKey("name")) })
                counterTables.append(t)
            }
        } else {
            specs = [CounterScene.CounterSpec(name: "count", label: "")]
            places = [CounterNamePlace(location: table.location, key: table.fullKey("counter"), isDefault: true)]
        }

        var bindings: [CounterKeyBinding] = []
        if let keys = try table.table("keys") {
            for k in keys.keys {
                guard let text = try keys.string(k) else { continue }
                guard let code = KeyCode.code(named: k) else {
                    throw keys.error(k, "unknown key name \"\(k)\" (expected an evdev name such as KEY_UP, KEY_KP_PLUS or KEY_R)")
                }
                if bindings.contains(where: { $0.code == code }) { throw keys.error(k, "key \"\(k)\" is bound twice") }
                bindings.append(try parseBinding(text, code: code, counters: specs.map(\.name), table: keys, key: k))
            }
            try keys.finish()
        }
        let clockTable = try table.table("clock")
        let clockKeys = try clockTable.flatMap { try GameClockRules.readKeys($0, counterKeys: bindings.map(\.code)) }
        let clock = try clockTable.map(GameClockRules.read)
        try table.finish()
        do {
            return try CounterSettings(scene: scene, counters: specs, digits: digits, minimum: minimum, rollMs: rollMs,
                                       shading: shading, gestures: gestures, keyBindings: bindings, resetHoldMs: holdMs,
                                       namePlaces: places, clock: clock, clockKeys: clockKeys)
        } catch let e as Invalid {
            switch e.setting {
            case .digits: throw table.error("digits", e.message)
            case .minimum: throw table.error("min", e.message)
            case .rollMs: throw table.error("roll_ms", e.message)
            case .resetHoldMs: throw table.error("reset_hold_ms", e.message)
            case .counters: throw table.error("counter", "needs at least one [[\(table.fullKey("counter"))]] table")
            case .counterName(let i):
                if i < counterTables.count { throw counterTables[i].error("name", e.message) }
                throw table.error("counter", e.message)
            }
        }
    }

    /// Parses `"increment home"`, `"reset all"`, `"none"`, `"undo"` (the counter may be left out when there is only one).
    static func parseBinding(_ text: String, code: UInt16, counters: [String], table: ConfigTable, key: String) throws -> CounterKeyBinding {
        let words = text.split(whereSeparator: { $0.isWhitespace }).map(String.init)
        let actions = CounterAction.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
        guard let first = words.first, let action = CounterAction(rawValue: first), words.count <= 2 else {
            throw table.error(key, "expected \"ACTION COUNTER\" with ACTION one of \(actions) and COUNTER one of \(counters.joined(separator: ", ")) or all, got \"\(text)\"")
        }
        let target: CounterTarget
        if action == .undo {
            guard words.count == 1 else {
                throw table.error(key, "\"undo\" takes no counter: it takes back the scene's last counter change, whichever counter it was; got \"\(text)\"")
            }
            target = .all
        } else if words.count == 2 {
            if words[1] == "all" { target = .all }
            else if counters.contains(words[1]) { target = .counter(words[1]) }
            else { throw table.error(key, "no counter named \"\(words[1])\" (counters: \(counters.joined(separator: ", ")), or all)") }
        } else if action == .none || counters.count == 1 {
            target = .all
        } else {
            throw table.error(key, "name the counter: \"\(first) COUNTER\" with COUNTER one of \(counters.joined(separator: ", ")) or all")
        }
        return CounterKeyBinding(code: code, action: action, target: target)
    }
}

/// Where a counter's name was written: the config file and line, and the full key.
public struct CounterNamePlace: Sendable, Equatable {
    public var location: SourceLocation
    public var key: String
    /// The scene has no `[[…counter]]` tables: the place is the scene's table, the name "count".
    public var isDefault: Bool
    public init(location: SourceLocation, key: String, isDefault: Bool = false) {
        self.location = location; self.key = key; self.isDefault = isDefault
    }
}
