import KioskCore

extension GameClockRules {
    /// Reads `[scene.NAME.clock.keys]` (`KEY_SPACE = "toggle"`, `KEY_S = "reset --shot"`: an
    /// evdev key name and the words of `kioskctl clock`); nil when absent (space toggles). A key
    /// already bound to a counter (`counterKeys`) is refused, naming it.
    public static func readKeys(_ clock: ConfigTable, counterKeys: [UInt16]) throws -> [UInt16: ClockIntent]? {
        guard let keys = try clock.table("keys") else { return nil }
        var out: [UInt16: ClockIntent] = [:]
        for k in keys.keys {
            guard let text = try keys.string(k) else { continue }
            guard let code = KeyCode.code(named: k) else {
                throw keys.error(k, "unknown key name \"\(k)\" (expected an evdev name such as KEY_SPACE, KEY_KP_ENTER or KEY_S)")
            }
            if counterKeys.contains(code) { throw keys.error(k, "key \"\(k)\" is also bound to a counter in the scene's [keys] table") }
            do {
                out[code] = try ClockIntent.parse(text.split(whereSeparator: { $0.isWhitespace }).map(String.init))
            } catch let e as KioskError {
                throw keys.error(k, e.message + " (expected the words of kioskctl clock, e.g. \"toggle\", \"adjust +1\" or \"reset --shot\")")
            }
        }
        try keys.finish()
        return out
    }

    /// Reads a counter scene's `[scene.NAME.clock]` table (docs/config-counter.md): every key,
    /// then unknown keys; a broken rule is reported at the key that breaks it, with file:line.
    public static func read(_ table: ConfigTable) throws -> GameClockRules {
        func time(_ key: String, default d: String) throws -> Int {
            let text = try table.string(key, default: d)
            do { return try ClockIntent.parseMinutesSeconds(text, what: nil) } catch let e as KioskError {
                throw table.error(key, e.message + ", e.g. \"10:00\" or \"0:45.5\"")
            }
        }
        let length = try time("period_length", default: "10:00")
        let periods = try table.int("periods", default: 4)
        let direction = try table.choice("direction", default: ClockDirection.down)
        let tenthsBelow = try time("tenths_below", default: "1:00")
        let shot: Int? = try table.has("shot_clock") ? table.int("shot_clock", default: 0, range: 1...99) * 1000 : nil
        let showsGame = try table.bool("show_game_clock", default: true)
        try table.finish()
        do {
            return try GameClockRules(periodLengthMs: length, periods: periods, direction: direction, tenthsBelowMs: tenthsBelow,
                                      shotClockMs: shot, showsGameClock: showsGame)
        } catch let e as Invalid {
            switch e.setting {
            case .periodLength: throw table.error("period_length", e.message)
            case .periods: throw table.error("periods", e.message)
            case .tenthsBelow: throw table.error("tenths_below", e.message)
            case .shotClock: throw table.error("shot_clock", e.message)
            case .showGameClock: throw table.error("show_game_clock", e.message)
            }
        }
    }
}
