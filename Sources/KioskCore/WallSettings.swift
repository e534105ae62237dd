/// `[display] backlight`: which backlight device kioskd drives.
public enum BacklightChoice: Sendable, Equatable, CustomStringConvertible {
    /// The best device (firmware > platform > raw).
    case auto
    /// A named device in /sys/class/backlight ("intel_backlight").
    case named(String)
    /// No backlight control.
    case none

    /// Parses "auto", "none" or a device name; errors name the key and the value.
    public init(parsing text: String, key: String = "display.backlight") throws {
        switch text {
        case "auto": self = .auto
        case "none": self = .none
        default:
            guard !text.isEmpty, text.count <= 255, !text.contains("/"), text != ".", text != "..",
                  text.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "\0" }) else {
                throw KioskError.config("\(key) = \"\(text)\": not \"auto\", \"none\" or a device name from /sys/class/backlight")
            }
            self = .named(text)
        }
    }

    public var description: String {
        switch self {
        case .auto: return "auto"
        case .none: return "none"
        case .named(let n): return n
        }
    }
}

/// A lux → brightness curve: points (lux, percent), linear between them, flat beyond the ends.
/// Config shape: `curve = [[0, 5], [50, 30], [400, 100]]`.
public struct LuxCurve: Sendable, Equatable {
    public struct Point: Sendable, Equatable {
        public let lux: Double
        public let percent: Double
        public init(lux: Double, percent: Double) { self.lux = lux; self.percent = percent }
    }
    public let points: [Point]

    /// Errors name the key, the point's index and its bad value.
    public init(points: [Point], key: String = "display.ambient.curve") throws {
        guard !points.isEmpty else { throw KioskError.config("\(key) = []: needs at least one [lux, percent] point") }
        for (i, p) in points.enumerated() {
            guard p.lux.isFinite, p.lux >= 0 else {
                throw KioskError.config("\(key)[\(i)] = [\(p.lux), \(p.percent)]: lux must be ≥ 0")
            }
            guard p.percent.isFinite, p.percent >= 0, p.percent <= 100 else {
                throw KioskError.config("\(key)[\(i)] = [\(p.lux), \(p.percent)]: percent must be 0…100")
            }
            if i > 0 && p.lux <= points[i - 1].lux {
                throw KioskError.config("\(key)[\(i)] = [\(p.lux), \(p.percent)]: lux must increase (previous point is at \(points[i - 1].lux) lx)")
            }
        }
        self.points = points
    }

    /// From config pairs `[[lux, percent], …]`; a pair of the wrong length is an error naming it.
    public init(pairs: [[Double]], key: String = "display.ambient.curve") throws {
        var pts: [Point] = []
        for (i, pair) in pairs.enumerated() {
            guard pair.count == 2 else {
                throw KioskError.config("\(key)[\(i)] = \(pair): must be [lux, percent]")
            }
            pts.append(Point(lux: pair[0], percent: pair[1]))
        }
        try self.init(points: pts, key: key)
    }

    /// The brightness for an illuminance.
    public func percent(lux: Double) -> Double {
        guard let first = points.first, let last = points.last else { return 100 }
        if !(lux > first.lux) { return first.percent } // also NaN
        if lux >= last.lux { return last.percent }
        for (a, b) in zip(points, points.dropFirst()) where lux <= b.lux {
            return a.percent + (b.percent - a.percent) * (lux - a.lux) / (b.lux - a.lux)
        }
        return last.percent
    }
}

/// Follows an ambient light reading with hysteresis: the brightness moves only when the light
/// changed by more than `hysteresis` (a fraction of the lux it was last set for, at least
/// `minimumLuxChange`), so a flickering lamp or a passing shadow does not pump the backlight.
public struct AmbientFollower: Sendable, Equatable {
    public let curve: LuxCurve
    public let hysteresis: Double
    public let minimumLuxChange: Double
    /// The lux the current level was set for (nil before the first reading).
    public private(set) var settledLux: Double?

    /// Errors name the key and the bad value.
    public init(curve: LuxCurve, hysteresis: Double = 0.2, minimumLuxChange: Double = 2,
                key: String = "display.ambient") throws {
        guard hysteresis.isFinite, hysteresis >= 0, hysteresis < 10 else {
            throw KioskError.config("\(key).hysteresis = \(hysteresis): must be a fraction 0…10 (0.2 = 20 % of the light level)")
        }
        guard minimumLuxChange.isFinite, minimumLuxChange >= 0 else {
            throw KioskError.config("\(key).minimum_lux_change = \(minimumLuxChange): must be ≥ 0")
        }
        self.curve = curve
        self.hysteresis = hysteresis
        self.minimumLuxChange = minimumLuxChange
    }

    /// A new reading: returns the brightness to set, or nil while within the hysteresis band.
    public mutating func update(lux: Double) -> Double? {
        guard lux.isFinite else { return nil }
        let l = max(0, lux)
        if let s = settledLux {
            let band = max(s * hysteresis, minimumLuxChange)
            guard abs(l - s) > band else { return nil }
        }
        settledLux = l
        return curve.percent(lux: l)
    }
}

/// `[display.brightness]`: a brightness schedule by time of day and its fades.
public enum BrightnessSettingsParser {
    /// Parses `schedule = ["07:00 100%", "22:00 20%", "01:00 off"]` with `fade_seconds`; errors
    /// name the key, the index and the bad value.
    public static func schedule(_ texts: [String], fadeSeconds: Int, key: String = "display.brightness") throws -> BrightnessSchedule {
        var periods: [BrightnessPeriod] = []
        for (i, t) in texts.enumerated() {
            do { periods.append(try BrightnessPeriod(parsing: t)) } catch let e as KioskError {
                throw KioskError.config("\(key).schedule[\(i)]: \(e.message)")
            }
        }
        do { return try BrightnessSchedule(periods: periods, fadeSeconds: fadeSeconds) } catch let e as KioskError {
            let which = e.message.hasPrefix("brightness fade") ? "fade_seconds" : "schedule"
            throw KioskError.config("\(key).\(which): \(e.message)")
        }
    }
}
