#if canImport(Glibc)
import Glibc
#endif

/// A local time of day, minute precision ("23:00").
public struct TimeOfDay: Sendable, Equatable, Hashable, Comparable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    public init(hour: Int, minute: Int) throws {
        guard (0...23).contains(hour) else { throw KioskError.outOfRange("hour \(hour) is not in 0…23") }
        guard (0...59).contains(minute) else { throw KioskError.outOfRange("minute \(minute) is not in 0…59") }
        self.hour = hour
        self.minute = minute
    }

    /// Parses "H:MM" or "HH:MM" (24-hour clock); errors quote the text.
    public init(parsing text: String) throws {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              let h = Int(parts[0]), let m = Int(parts[1]) else {
            throw KioskError.config("time \"\(text)\" is not HH:MM (24-hour, e.g. \"07:30\")")
        }
        do { try self.init(hour: h, minute: m) } catch let e as KioskError {
            throw KioskError.config("time \"\(text)\": \(e.message)")
        }
    }

    public var secondsSinceMidnight: Int { hour * 3600 + minute * 60 }
    public var description: String { (hour < 10 ? "0" : "") + "\(hour):" + (minute < 10 ? "0" : "") + "\(minute)" }
    public static func < (a: TimeOfDay, b: TimeOfDay) -> Bool { a.secondsSinceMidnight < b.secondsSinceMidnight }
}

/// How wall-clock instants map to local time: the offset from UTC in effect at an instant.
public enum LocalZone: Sendable {
    /// The process's time zone (TZ / /etc/localtime), daylight saving included (`localtime_r`).
    case system
    /// A fixed offset in seconds east of UTC (tests, UTC kiosks).
    case fixed(Int)
    /// An offset that depends on the instant (tests of daylight-saving changes).
    case custom(@Sendable (_ unixSeconds: Int64) -> Int)
    /// A named zone of the tz database ("Europe/Berlin"), whatever the process's zone.
    case rules(ZoneRules)

    /// The zone `identifier` names in the tz database; nil when there is none of that name.
    public static func named(_ identifier: String, database: String = "/usr/share/zoneinfo") -> LocalZone? {
        ZoneRules.named(identifier, database: database).map { .rules($0) }
    }

    /// Seconds east of UTC at `unixSeconds`.
    public func offset(at unixSeconds: Int64) -> Int {
        switch self {
        case .fixed(let o): return o
        case .custom(let f): return f(unixSeconds)
        case .rules(let r): return r.offset(at: unixSeconds)
        case .system:
            var t = time_t(unixSeconds)
            var tm = tm()
            guard localtime_r(&t, &tm) != nil else { return 0 }
            return Int(tm.tm_gmtoff)
        }
    }

    /// Seconds since local midnight at `unixSeconds` (0 ..< 86400).
    public func secondsSinceMidnight(at unixSeconds: Int64) -> Int {
        let local = unixSeconds + Int64(offset(at: unixSeconds))
        let r = local % 86_400
        return Int(r < 0 ? r + 86_400 : r)
    }
}

/// A daily period with the panel off, e.g. 23:00–07:00 (may cross midnight). `off` is the first
/// blank minute, `on` the first lit one.
public struct BlankSchedule: Sendable, Equatable, CustomStringConvertible {
    public let off: TimeOfDay
    public let on: TimeOfDay

    public init(off: TimeOfDay, on: TimeOfDay) throws {
        guard off != on else { throw KioskError.config("blank schedule \(off)-\(on): start and end are the same time") }
        self.off = off
        self.on = on
    }

    /// Parses "23:00-07:00" (also with "–" or spaces around the dash); errors quote the text.
    public init(parsing text: String) throws {
        let cleaned = text.replacingDash()
        let parts = cleaned.split(separator: "-", omittingEmptySubsequences: false).map { $0.trimmedSpaces() }
        guard parts.count == 2 else {
            throw KioskError.config("blank schedule \"\(text)\" is not OFF-ON (e.g. \"23:00-07:00\")")
        }
        let off: TimeOfDay, on: TimeOfDay
        do {
            off = try TimeOfDay(parsing: parts[0])
            on = try TimeOfDay(parsing: parts[1])
            try self.init(off: off, on: on)
        } catch let e as KioskError {
            throw KioskError.config("blank schedule \"\(text)\": \(e.message)")
        }
    }

    public var description: String { "\(off)-\(on)" }

    /// The minutes of the day the period covers, as one or two ranges of `0..<1440` (two when it
    /// crosses midnight).
    var minuteRanges: [Range<Int>] {
        let a = off.secondsSinceMidnight / 60, b = on.secondsSinceMidnight / 60
        return a < b ? [a..<b] : [a..<1440, 0..<b].filter { !$0.isEmpty }
    }

    /// Whether the two periods share a minute (one ending when the other starts do not).
    public func overlaps(_ other: BlankSchedule) -> Bool {
        minuteRanges.contains { r in other.minuteRanges.contains { $0.overlaps(r) } }
    }

    /// The one period covering both of two overlapping periods; nil when together they cover the
    /// whole day (or do not overlap).
    public func joined(with other: BlankSchedule) -> BlankSchedule? {
        guard overlaps(other) else { return nil }
        var covered = [Bool](repeating: false, count: 1440)
        for r in minuteRanges + other.minuteRanges { for m in r { covered[m] = true } }
        guard let start = (0..<1440).first(where: { covered[$0] && !covered[($0 + 1439) % 1440] }) else { return nil }
        var end = (start + 1) % 1440
        while covered[end] { end = (end + 1) % 1440 }
        return try? BlankSchedule(off: TimeOfDay(hour: start / 60, minute: start % 60), on: TimeOfDay(hour: end / 60, minute: end % 60))
    }

    /// Whether a local time of day (seconds since midnight) falls in the blank period.
    public func isBlank(secondsSinceMidnight s: Int) -> Bool {
        let a = off.secondsSinceMidnight, b = on.secondsSinceMidnight
        return a < b ? (s >= a && s < b) : (s >= a || s < b)
    }

    /// Whether the panel is off at `unixSeconds` in `zone`.
    public func isBlank(at unixSeconds: Int64, zone: LocalZone = .system) -> Bool {
        isBlank(secondsSinceMidnight: zone.secondsSinceMidnight(at: unixSeconds))
    }

    /// The first instant after `unixSeconds` at which `isBlank` changes (a local-time boundary;
    /// daylight-saving shifts are followed). Whole seconds.
    public func nextTransition(after unixSeconds: Int64, zone: LocalZone = .system) -> Int64 {
        let now = isBlank(at: unixSeconds, zone: zone)
        let target = (now ? on : off).secondsSinceMidnight
        let sod = zone.secondsSinceMidnight(at: unixSeconds)
        var delta = (target - sod + 86_400) % 86_400
        if delta == 0 { delta = 86_400 }
        var t = unixSeconds + Int64(delta)
        // The offset may differ at the candidate (daylight saving): move by the difference and
        // settle on the first second where the state has really changed.
        let diff = zone.offset(at: unixSeconds) - zone.offset(at: t)
        if diff != 0 { t += Int64(diff) }
        if t <= unixSeconds { t = unixSeconds + 1 }
        // Step back to the earliest changed second (at most an hour of DST shift), then forward if needed.
        while t - 1 > unixSeconds && isBlank(at: t - 1, zone: zone) != now { t -= 1 }
        var guardSteps = 0
        while isBlank(at: t, zone: zone) == now && guardSteps < 2 * 86_400 { t += 60 - (t % 60 == 0 ? 0 : t % 60); guardSteps += 1 }
        return t
    }
}

/// Blanking decisions: the schedule, plus "wake on touch" for `wakeSeconds` during a blank period.
public struct BlankPolicy: Sendable {
    public var schedule: BlankSchedule?
    /// How long a touch lights a scheduled-blank panel (0: touch does not wake it).
    public var wakeSeconds: Int
    public var zone: LocalZone
    /// Until when a touch keeps the panel lit (unix seconds).
    public private(set) var wokenUntil: Int64?

    public init(schedule: BlankSchedule?, wakeSeconds: Int, zone: LocalZone = .system) {
        self.schedule = schedule
        self.wakeSeconds = max(0, wakeSeconds)
        self.zone = zone
    }

    /// A touch (or key) at `unixSeconds`: during a blank period it lights the panel for `wakeSeconds`
    /// (each touch restarts the time). Returns whether the panel should now be lit because of it.
    @discardableResult
    public mutating func touched(at unixSeconds: Int64) -> Bool {
        guard let schedule, wakeSeconds > 0, schedule.isBlank(at: unixSeconds, zone: zone) else { return false }
        wokenUntil = unixSeconds + Int64(wakeSeconds)
        return true
    }

    /// Whether the panel should be off at `unixSeconds`.
    public func shouldBlank(at unixSeconds: Int64) -> Bool {
        guard let schedule, schedule.isBlank(at: unixSeconds, zone: zone) else { return false }
        if let w = wokenUntil, unixSeconds < w { return false }
        return true
    }

    /// When `shouldBlank` may next change after `unixSeconds` (nil: never, no schedule).
    public func nextChange(after unixSeconds: Int64) -> Int64? {
        guard let schedule else { return nil }
        var next = schedule.nextTransition(after: unixSeconds, zone: zone)
        if let w = wokenUntil, w > unixSeconds { next = min(next, w) }
        return next
    }
}

/// What the panel should show at an instant: blanked, or lit at a percentage.
public enum PanelState: Sendable, Equatable {
    case blank
    case lit(percent: Double)

    public var isBlank: Bool { self == .blank }
}

/// The blanking schedule extended with brightness: the blank periods of `[display.blank]` (and
/// their wake on touch) together with an optional brightness schedule by time of day, whose
/// `off` periods blank the panel too. Without a brightness schedule it decides exactly as
/// `BlankPolicy` does, at `defaultPercent`.
public struct BrightnessPolicy: Sendable {
    public private(set) var blank: BlankPolicy
    public var brightness: BrightnessSchedule?
    /// The level when no brightness schedule is set (the last `kioskctl brightness`, or 100).
    public var defaultPercent: Double
    /// Until when a touch keeps an `off` brightness period lit (unix seconds).
    public private(set) var wokenUntil: Int64?

    public init(blankSchedule: BlankSchedule?, brightness: BrightnessSchedule?, wakeSeconds: Int,
                defaultPercent: Double = 100, zone: LocalZone = .system) {
        blank = BlankPolicy(schedule: blankSchedule, wakeSeconds: wakeSeconds, zone: zone)
        self.brightness = brightness
        self.defaultPercent = defaultPercent
    }

    public var zone: LocalZone { blank.zone }

    /// The scheduled level at an instant (nanoseconds; fades included); nil in an `off` period.
    func scheduledPercent(atNanos nanos: Int64) -> Double? {
        guard let brightness else { return defaultPercent }
        return brightness.percent(atNanos: nanos, zone: zone)
    }

    /// The level a touch wakes the panel to: the brightness period's level (the last lit one
    /// before an `off` period), else `defaultPercent`.
    public func wakePercent(at unixSeconds: Int64) -> Double {
        guard let brightness else { return defaultPercent }
        let sod = zone.secondsSinceMidnight(at: unixSeconds)
        return brightness.percent(secondsSinceMidnight: Double(sod)) ?? brightness.wakePercent(secondsSinceMidnight: sod)
    }

    /// A touch at `unixSeconds`: when the panel is off by schedule (blank period or `off`
    /// brightness period) it lights for `wakeSeconds` at `wakePercent`. Returns whether it woke.
    @discardableResult
    public mutating func touched(at unixSeconds: Int64) -> Bool {
        guard blank.wakeSeconds > 0, state(atNanos: unixSeconds * 1_000_000_000) == .blank else { return false }
        wokenUntil = unixSeconds + Int64(blank.wakeSeconds)
        blank.touched(at: unixSeconds)
        return true
    }

    private func woken(_ unixSeconds: Int64) -> Bool {
        if let w = wokenUntil, unixSeconds < w { return true }
        return false
    }

    /// What the panel should show at an instant (nanoseconds since the epoch).
    public func state(atNanos nanos: Int64) -> PanelState {
        let s = nanos >= 0 ? nanos / 1_000_000_000 : (nanos - 999_999_999) / 1_000_000_000
        if let schedule = blank.schedule, schedule.isBlank(at: s, zone: zone), !woken(s) { return .blank }
        guard let level = scheduledPercent(atNanos: nanos) else {
            return woken(s) ? .lit(percent: wakePercent(at: s)) : .blank
        }
        return .lit(percent: level)
    }

    /// Whether the level is changing continuously at `unixSeconds` (a fade): a driver then steps
    /// it at its own pace until `nextChange`.
    public func isFading(at unixSeconds: Int64) -> Bool {
        guard let brightness else { return false }
        return brightness.isFading(secondsSinceMidnight: zone.secondsSinceMidnight(at: unixSeconds))
    }

    /// The next instant after `unixSeconds` at which the state may change: a blank transition,
    /// a brightness period start or fade end, the end of a wake.
    public func nextChange(after unixSeconds: Int64) -> Int64? {
        var next = blank.nextChange(after: unixSeconds)
        if let b = brightness?.nextBoundary(after: unixSeconds, zone: zone) { next = min(next ?? b, b) }
        if let w = wokenUntil, w > unixSeconds { next = min(next ?? w, w) }
        return next
    }
}

extension String {
    fileprivate func replacingDash() -> String {
        String(self.map { $0 == "–" || $0 == "—" ? "-" : $0 })
    }
}

extension Substring {
    fileprivate func trimmedSpaces() -> String {
        var s = self
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
