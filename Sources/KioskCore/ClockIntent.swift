/// A change of a game clock asked for by a key, a tap or a command (`kioskctl clock …`): what
/// the command pipeline carries to the clock's owner, which applies it with
/// `GameClock.applying(_:at:)` at the instant it is decided.
public enum ClockIntent: Sendable, Equatable, Codable {
    case start
    case stop
    /// Start when stopped, stop when running (a key or a tap on the clock).
    case toggle
    /// Show exactly this many milliseconds (`set 7:30.5`).
    case set(ms: Int)
    /// Move what is shown by this many milliseconds (`adjust +1`, `adjust -60`).
    case adjust(ms: Int)
    /// Go to period N, both clocks stopped and full.
    case period(Int)
    case nextPeriod
    /// Back to the first period, both clocks stopped and full.
    case reset
    /// The shot clock back to its length, or to this many milliseconds (`reset --shot 14`).
    case shotReset(ms: Int?)

    /// The words `parse` reads back into this intent (what a client sends).
    public var words: [String] {
        switch self {
        case .start: return ["start"]
        case .stop: return ["stop"]
        case .toggle: return ["toggle"]
        case .set(let ms): return ["set", Self.minutesSecondsText(ms)]
        case .adjust(let ms): return ["adjust", (ms < 0 ? "-" : "+") + ClockText.seconds(abs(ms))]
        case .period(let n): return ["period", "\(n)"]
        case .nextPeriod: return ["period", "next"]
        case .reset: return ["reset"]
        case .shotReset(let ms): return ["reset", "--shot"] + (ms.map { [ClockText.seconds($0)] } ?? [])
        }
    }

    /// `MM:SS[.t]` as `parseMinutesSeconds` reads it (two digits of seconds, a tenth when there is one).
    static func minutesSecondsText(_ ms: Int) -> String {
        let s = ms / 1000, t = ms % 1000 / 100
        return "\(s / 60):" + (s % 60 < 10 ? "0" : "") + "\(s % 60)" + (t > 0 ? ".\(t)" : "")
    }

    /// The usage line of `kioskctl clock`.
    public static let usage = "clock start|stop|toggle|set MM:SS[.t]|adjust ±SECONDS|period N|period next|reset [--shot [SECONDS]]"

    /// Parses the words after `kioskctl clock`; the error names the bad word and what was expected.
    public static func parse(_ words: [String]) throws -> ClockIntent {
        guard let verb = words.first else { throw KioskError.control("clock: expected \(usage)") }
        let rest = Array(words.dropFirst())
        func noMore() throws {
            if !rest.isEmpty { throw KioskError.control("\(verb): takes no value, got '\(rest.joined(separator: " "))'") }
        }
        func one(_ what: String) throws -> String {
            guard let v = rest.first else { throw KioskError.control("\(verb): needs \(what)") }
            guard rest.count == 1 else { throw KioskError.control("\(verb): takes one value (\(what)), got '\(rest.joined(separator: " "))'") }
            return v
        }
        switch verb {
        case "start": try noMore(); return .start
        case "stop": try noMore(); return .stop
        case "toggle": try noMore(); return .toggle
        case "set":
            let v = try one("a time MM:SS[.t], e.g. 7:30 or 0:45.5")
            return .set(ms: try parseMinutesSeconds(v, what: "set"))
        case "adjust":
            let v = try one("±SECONDS, e.g. +1, -60 or +0.5")
            return .adjust(ms: try parseSignedSeconds(v, what: "adjust"))
        case "period":
            let v = try one("a period number or next")
            if v == "next" { return .nextPeriod }
            guard let n = Int(v), n >= 1 else { throw KioskError.control("period: '\(v)' is not a period number (1, 2, …) or next") }
            return .period(n)
        case "reset":
            if rest.isEmpty { return .reset }
            guard rest[0] == "--shot" else { throw KioskError.control("reset: unknown option '\(rest[0])' (expected --shot)") }
            guard rest.count <= 2 else { throw KioskError.control("reset --shot: takes at most one value (SECONDS), got '\(rest.dropFirst().joined(separator: " "))'") }
            guard rest.count == 2 else { return .shotReset(ms: nil) }
            let ms = try parseSignedSeconds(rest[1], what: "reset --shot", signed: false)
            guard ms > 0 else { throw KioskError.control("reset --shot: '\(rest[1])' is not a number of seconds above zero") }
            return .shotReset(ms: ms)
        default:
            throw KioskError.control("clock: unknown action '\(verb)' (expected \(usage))")
        }
    }

    /// `M:SS`, `MM:SS` or `MM:SS.t` (minutes 0–99, seconds 0–59, one digit of tenths) in
    /// milliseconds; `what` starts the error ("set: '7:75' is not MM:SS[.t] (seconds 0–59)").
    public static func parseMinutesSeconds(_ text: String, what: String?) throws -> Int {
        func bad(_ why: String) -> KioskError { .control((what.map { "\($0): " } ?? "") + "'\(text)' is not MM:SS[.t] (\(why))") }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw bad("minutes, a colon, seconds: 7:30, 0:45.5") }
        let (mText, sAll) = (parts[0], parts[1])
        let sParts = sAll.split(separator: ".", omittingEmptySubsequences: false)
        guard sParts.count <= 2 else { throw bad("one dot before the tenth") }
        let sText = sParts[0]
        guard (1...2).contains(mText.count), mText.allSatisfy(\.isASCIIDigit), let m = Int(mText) else { throw bad("minutes 0–99") }
        guard sText.count == 2, sText.allSatisfy(\.isASCIIDigit), let s = Int(sText), s <= 59 else { throw bad("seconds 0–59") }
        var tenths = 0
        if sParts.count == 2 {
            let t = sParts[1]
            guard t.count == 1, let d = t.first?.wholeNumberValue, t.allSatisfy(\.isASCIIDigit) else { throw bad("one digit of tenths") }
            tenths = d
        }
        return (m * 60 + s) * 1000 + tenths * 100
    }

    /// `+1`, `-60`, `+0.5` (and `5` when not `signed`-only): seconds with at most one decimal, in
    /// milliseconds; at most 99:59.9 either way.
    public static func parseSignedSeconds(_ text: String, what: String, signed: Bool = true) throws -> Int {
        func bad() -> KioskError {
            .control("\(what): '\(text)' is not \(signed ? "±" : "")SECONDS (a whole number of seconds or one decimal, e.g. \(signed ? "+1, -60 or +0.5" : "14 or 4.5"))")
        }
        var body = Substring(text)
        var sign = 1
        if let f = body.first, f == "+" || f == "-" {
            guard signed else { throw bad() }
            sign = f == "-" ? -1 : 1
            body = body.dropFirst()
        }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), (1...4).contains(parts[0].count), parts[0].allSatisfy(\.isASCIIDigit),
              let whole = Int(parts[0]) else { throw bad() }
        var tenths = 0
        if parts.count == 2 {
            guard parts[1].count == 1, parts[1].allSatisfy(\.isASCIIDigit), let d = Int(parts[1]) else { throw bad() }
            tenths = d
        }
        let ms = whole * 1000 + tenths * 100
        guard ms <= 5_999_900 else { throw KioskError.control("\(what): '\(text)' is more than 5999.9 s (99:59.9)") }
        return sign * ms
    }
}

extension Character {
    /// 0–9 only (not other scripts' digits, which `Int(_:)` would refuse anyway).
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
