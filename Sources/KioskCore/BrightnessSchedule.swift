/// A linear fade of a raw backlight value: `from` at elapsed 0, `to` at `durationNanos`, every
/// integer in between on the way (monotone, rounded to nearest).
public struct BrightnessFade: Sendable, Equatable {
    public let from: Int
    public let to: Int
    public let durationNanos: Int64

    public init(from: Int, to: Int, durationNanos: Int64) {
        self.from = from
        self.to = to
        self.durationNanos = max(0, durationNanos)
    }

    /// The raw value `t` nanoseconds after the start.
    public func value(atElapsed t: Int64) -> Int {
        if t <= 0 { return durationNanos == 0 ? to : from }
        if t >= durationNanos { return to }
        let f = Double(t) / Double(durationNanos)
        let v = Int((Double(from) + Double(to - from) * f).rounded(.toNearestOrAwayFromZero))
        return from <= to ? min(max(v, from), to) : max(min(v, from), to)
    }

    /// The first elapsed time after `t` at which `value` differs from `value(atElapsed: t)`; nil
    /// when it never does again.
    public func nextChange(afterElapsed t: Int64) -> Int64? {
        let v = value(atElapsed: t)
        guard t < durationNanos, v != to else { return nil }
        let sign = to > from ? 1 : -1
        let target = Double(v + sign - from) - 0.5 * Double(sign)
        var candidate = Int64((target * Double(durationNanos) / Double(to - from)).rounded(.down))
        candidate = min(max(candidate, t + 1), durationNanos)
        // Settle exactly on the first changed nanosecond (the estimate is within a few).
        while candidate > t + 1 && value(atElapsed: candidate - 1) != v { candidate -= 1 }
        while candidate < durationNanos && value(atElapsed: candidate) == v { candidate += 1 }
        return candidate
    }
}

/// A level of a brightness period: a percentage, or off (the panel blanked).
public enum BrightnessLevel: Sendable, Equatable, CustomStringConvertible {
    case off
    case percent(Double)

    /// Parses "off", "40", "40%" (0 < p ≤ 100; use "off" for a dark panel). Errors quote the text.
    public init(parsing text: String) throws {
        let t = text.trimmingSpaces()
        if t == "off" { self = .off; return }
        var number = t
        if number.hasSuffix("%") { number.removeLast() }
        guard let p = Double(number.trimmingSpaces()), p.isFinite else {
            throw KioskError.config("brightness \"\(text)\" is not a percentage (e.g. \"40%\") or \"off\"")
        }
        guard p > 0 && p <= 100 else {
            throw KioskError.config("brightness \"\(text)\" is not in 1…100 % (use \"off\" to blank the panel)")
        }
        self = .percent(p)
    }

    public var percentValue: Double? {
        if case .percent(let p) = self { return p }
        return nil
    }

    public var description: String {
        switch self {
        case .off: return "off"
        case .percent(let p): return (p == p.rounded() ? "\(Int(p))" : "\(p)") + "%"
        }
    }
}

/// One period of a brightness schedule: from `start` (local time) until the next period's start.
public struct BrightnessPeriod: Sendable, Equatable, CustomStringConvertible {
    public let start: TimeOfDay
    public let level: BrightnessLevel

    public init(start: TimeOfDay, level: BrightnessLevel) {
        self.start = start
        self.level = level
    }

    /// Parses "22:00 20%", "01:00 off", "07:00=100" (a space or "=" between). Errors quote the text.
    public init(parsing text: String) throws {
        let normalized = String(text.map { $0 == "=" || $0 == "\t" ? " " : $0 })
        let parts = normalized.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2 else {
            throw KioskError.config("brightness period \"\(text)\" is not \"HH:MM LEVEL\" (e.g. \"22:00 20%\" or \"01:00 off\")")
        }
        do {
            self.init(start: try TimeOfDay(parsing: String(parts[0])), level: try BrightnessLevel(parsing: String(parts[1])))
        } catch let e as KioskError {
            throw KioskError.config("brightness period \"\(text)\": \(e.message)")
        }
    }

    public var description: String { "\(start) \(level)" }
}

/// Brightness by time of day: a list of periods, each lasting until the next one starts (the
/// last until the first of the next day), with a fade of `fadeSeconds` at the start of each lit
/// period from the level before it. Off periods start and end without a fade (the panel blanks
/// at the period's start; it lights at the next period's level at once).
///
/// Times are local wall-clock times (`LocalZone`): on the day daylight saving starts, a period
/// starting inside the skipped hour begins when the clock jumps past it; on the day it ends,
/// the repeated hour repeats its levels.
public struct BrightnessSchedule: Sendable, Equatable, CustomStringConvertible {
    public let periods: [BrightnessPeriod]
    public let fadeSeconds: Int

    /// Sorted by start; errors name the duplicate start or the empty list.
    public init(periods: [BrightnessPeriod], fadeSeconds: Int = 0) throws {
        guard !periods.isEmpty else { throw KioskError.config("brightness schedule has no periods") }
        guard fadeSeconds >= 0 && fadeSeconds <= 86_400 else {
            throw KioskError.config("brightness fade \(fadeSeconds) s is not in 0…86400")
        }
        let sorted = periods.sorted { $0.start < $1.start }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.start == b.start {
            throw KioskError.config("brightness schedule has two periods starting at \(a.start) (\"\(a)\" and \"\(b)\")")
        }
        self.periods = sorted
        self.fadeSeconds = fadeSeconds
    }

    /// Parses a list of "HH:MM LEVEL" strings.
    public init(parsing texts: [String], fadeSeconds: Int = 0) throws {
        try self.init(periods: try texts.map(BrightnessPeriod.init(parsing:)), fadeSeconds: fadeSeconds)
    }

    public var description: String { periods.map(\.description).joined(separator: ", ") }

    /// The index of the period in force at local second-of-day `s`.
    func index(secondsSinceMidnight s: Int) -> Int {
        var i = periods.count - 1
        for (k, p) in periods.enumerated() where p.start.secondsSinceMidnight <= s { i = k }
        return i
    }

    /// Seconds from period `i`'s start to the next period's start (86400 with a single period).
    func length(of i: Int) -> Int {
        guard periods.count > 1 else { return 86_400 }
        let a = periods[i].start.secondsSinceMidnight
        let b = periods[(i + 1) % periods.count].start.secondsSinceMidnight
        return (b - a + 86_400) % 86_400
    }

    /// The level at local second-of-day `s` (fractional seconds for smooth fades): nil when off.
    public func percent(secondsSinceMidnight s: Double) -> Double? {
        let whole = Int(s.rounded(.down))
        let i = index(secondsSinceMidnight: ((whole % 86_400) + 86_400) % 86_400)
        guard let target = periods[i].level.percentValue else { return nil }
        let prevIndex = (i - 1 + periods.count) % periods.count
        guard fadeSeconds > 0, periods.count > 1, let previous = periods[prevIndex].level.percentValue else { return target }
        let fade = Double(min(fadeSeconds, length(of: i)))
        var elapsed = s - Double(periods[i].start.secondsSinceMidnight)
        if elapsed < 0 { elapsed += 86_400 }
        guard elapsed < fade else { return target }
        return previous + (target - previous) * (elapsed / fade)
    }

    /// The level at an instant (nanoseconds since the epoch, for smooth fades) in `zone`.
    public func percent(atNanos nanos: Int64, zone: LocalZone = .system) -> Double? {
        let secs = nanos >= 0 ? nanos / 1_000_000_000 : (nanos - 999_999_999) / 1_000_000_000
        let frac = Double(nanos - secs * 1_000_000_000) / 1e9
        return percent(secondsSinceMidnight: Double(zone.secondsSinceMidnight(at: secs)) + frac)
    }

    /// The level of the last lit period at or before `s` (what a touch wakes an off period to);
    /// 100 when every period is off.
    public func wakePercent(secondsSinceMidnight s: Int) -> Double {
        let i = index(secondsSinceMidnight: s)
        for k in 0..<periods.count {
            if let p = periods[(i - k + periods.count) % periods.count].level.percentValue { return p }
        }
        return 100
    }

    /// Whether a fade is running at local second-of-day `s`.
    public func isFading(secondsSinceMidnight s: Int) -> Bool {
        guard fadeSeconds > 0, periods.count > 1 else { return false }
        let i = index(secondsSinceMidnight: s)
        let prev = periods[(i - 1 + periods.count) % periods.count].level
        guard let target = periods[i].level.percentValue, let from = prev.percentValue, from != target else { return false }
        let elapsed = (s - periods[i].start.secondsSinceMidnight + 86_400) % 86_400
        return elapsed < min(fadeSeconds, length(of: i))
    }

    /// The next instant after `unixSeconds` at which a period starts or a fade ends (whole
    /// seconds; daylight-saving shifts followed), so a driver can sleep until then — during a fade
    /// it also steps at its own pace.
    public func nextBoundary(after unixSeconds: Int64, zone: LocalZone = .system) -> Int64 {
        var marks = periods.map(\.start.secondsSinceMidnight)
        if fadeSeconds > 0 {
            for i in periods.indices { marks.append((periods[i].start.secondsSinceMidnight + min(fadeSeconds, length(of: i))) % 86_400) }
        }
        return marks.map { LocalZone.nextOccurrence(ofSecondOfDay: $0, after: unixSeconds, zone: zone) }.min() ?? unixSeconds + 86_400
    }
}

extension LocalZone {
    /// The first instant after `now` at which the local clock reaches second-of-day `mark`: where
    /// it shows `mark` (the first time, when daylight saving ends and the hour repeats), or where it
    /// jumps over it (the hour skipped when daylight saving starts).
    public static func nextOccurrence(ofSecondOfDay mark: Int, after now: Int64, zone: LocalZone) -> Int64 {
        let sod = zone.secondsSinceMidnight(at: now)
        var delta = (mark - sod + 86_400) % 86_400
        if delta == 0 { delta = 86_400 }
        let offsetNow = Int64(zone.offset(at: now))
        // The target on the local time line, and the instants that show it under either offset.
        let localTarget = now + offsetNow + Int64(delta)
        let offsets = Set([offsetNow, Int64(zone.offset(at: localTarget - offsetNow))])
        var best: Int64?
        for o in offsets {
            let t = localTarget - o
            if t > now && Int64(zone.offset(at: t)) == o { best = min(best ?? t, t) }
        }
        if let best { return best }
        // Skipped: the offset changed in between; the jump's instant is when it changes.
        var lo = now, hi = localTarget - offsetNow + 2 * 3600
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2
            if Int64(zone.offset(at: mid)) == offsetNow { lo = mid } else { hi = mid }
        }
        return hi
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
