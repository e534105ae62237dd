import KioskCore

/// The time of day a clock shows, in one time zone.
public struct ClockReading: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// 0…23.
    public var hours: Int
    /// 0…59.
    public var minutes: Int
    /// 0…59 (a leap second is never reported: the system clock repeats 59).
    public var seconds: Int
    /// The whole UTC second this reading belongs to (floor of the wall time).
    public var epochSecond: Int64

    public init(hours: Int, minutes: Int, seconds: Int, epochSecond: Int64 = 0) {
        self.hours = hours; self.minutes = minutes; self.seconds = seconds; self.epochSecond = epochSecond
    }

    /// `HH:mm:ss` on a 24-hour dial.
    public var description: String { text(hourFormat: .h24) }

    /// The time as text: `HH:mm:ss`, or `hh:mm:ss AM`/`PM` on a 12-hour dial (0 h shows as 12).
    public func text(hourFormat: ClockHourFormat) -> String {
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        switch hourFormat {
        case .h24:
            return "\(two(hours)):\(two(minutes)):\(two(seconds))"
        case .h12:
            let h = hours % 12 == 0 ? 12 : hours % 12
            return "\(two(h)):\(two(minutes)):\(two(seconds)) \(hours < 12 ? "AM" : "PM")"
        }
    }
}

/// 12- or 24-hour display (config `hour_format = 12|24`).
public enum ClockHourFormat: Int, Sendable, Equatable, CaseIterable {
    case h12 = 12, h24 = 24
}

/// How the background colour follows the time (config `color_mode`).
public enum ClockColorMode: String, Sendable, Equatable, CaseIterable {
    /// red = h·255/24, green = m·255/60, blue = s·255/60, each rounded to nearest (0.5 away from zero).
    case scaled
    /// The digits read as hex: 13:35:16 → #133516.
    case literal

    /// The colour for a reading (always from the 24-hour time).
    public func color(for r: ClockReading) -> Color {
        switch self {
        case .scaled:
            func scale(_ v: Int, _ maxValue: Int) -> Int { Int((Double(v) * 255 / Double(maxValue)).rounded(.toNearestOrAwayFromZero)) }
            return Color(r8: scale(r.hours, 24), g8: scale(r.minutes, 60), b8: scale(r.seconds, 60))
        case .literal:
            // Each two-digit decimal field read as two hex digits: 13 → 0x13.
            func hex(_ v: Int) -> Int { (v / 10) * 16 + v % 10 }
            return Color(r8: hex(r.hours), g8: hex(r.minutes), b8: hex(r.seconds))
        }
    }
}

/// Told by a `ClockModel` that the displayed second changed.
public protocol ClockModelObserver: AnyObject {
    func clockDidUpdate(_ clock: ClockModel)
}

/// The clock's model: turns wall time into the reading shown in a time zone and tells its
/// observers when the shown second changes. Pure apart from the time zone database: it never
/// reads the system clock itself; whoever drives it passes `now`.
public final class ClockModel {
    public let timeZone: LocalZone
    public private(set) var reading: ClockReading?
    private var observers: [WeakObserver] = []

    private struct WeakObserver { weak var value: ClockModelObserver? }

    /// A clock in `timeZone` (`.system` follows system time zone changes once
    /// `SystemTimeZone.reload()` ran).
    public init(timeZone: LocalZone) {
        self.timeZone = timeZone
    }

    /// Adds an observer (held weakly).
    public func addObserver(_ o: ClockModelObserver) {
        observers.removeAll { $0.value == nil || $0.value === o }
        observers.append(WeakObserver(value: o))
    }
    public func removeObserver(_ o: ClockModelObserver) {
        observers.removeAll { $0.value == nil || $0.value === o }
    }

    /// Brings the model to `now`; notifies the observers and returns true when the shown
    /// second changed (including a clock jump in either direction).
    @discardableResult
    public func update(now: WallTime) -> Bool {
        let r = ClockModel.reading(realtimeNs: now.realtimeNs, in: timeZone)
        guard r != reading else { return false }
        reading = r
        for o in observers { o.value?.clockDidUpdate(self) }
        return true
    }

    /// The reading at a wall time (nanoseconds since the epoch) in a time zone.
    public static func reading(realtimeNs: Int64, in timeZone: LocalZone) -> ClockReading {
        let sec = floorDiv(realtimeNs, 1_000_000_000)
        let offset = Int64(timeZone.offset(at: sec))
        let secOfDay = Int(floorMod(sec + offset, 86_400))
        return ClockReading(hours: secOfDay / 3600, minutes: (secOfDay / 60) % 60, seconds: secOfDay % 60, epochSecond: sec)
    }

    /// The next whole wall-clock second strictly after `realtimeNs` (where the next tick is due).
    public static func nextSecondBoundary(after realtimeNs: Int64) -> Int64 {
        (floorDiv(realtimeNs, 1_000_000_000) + 1) * 1_000_000_000
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }
    static func floorMod(_ a: Int64, _ b: Int64) -> Int64 { a - floorDiv(a, b) * b }
}
