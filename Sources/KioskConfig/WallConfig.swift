import KioskCore

/// `[display.ambient]`: an IIO light sensor the backlight follows.
public struct AmbientSettings: Sendable, Equatable {
    /// The sensor's IIO `name` or folder ("iio:device0"); nil: the first illuminance sensor.
    public var sensor: String?
    public var follower: AmbientFollower
    /// How often the sensor is read (IIO illuminance has no change notification).
    public var intervalSeconds: Double
}

/// The `[display]` keys for a panel that hangs on a wall for years: the backlight device, the
/// brightness schedule (`[display.brightness]`), the ambient light sensor (`[display.ambient]`)
/// and the pixel orbit against burn-in (`pixel_shift`).
public struct WallDisplaySettings: Sendable, Equatable {
    public var backlight: BacklightChoice = .auto
    /// Brightness by time of day; nil: the level set by `kioskctl brightness` (default 100 %).
    public var brightness: BrightnessSchedule?
    public var ambient: AmbientSettings?
    /// Off when nil.
    public var pixelShift: PixelShift?
    public init() {}

    /// The orbit scenes draw static content on (nil: off).
    public var pixelOrbit: PixelOrbit? { pixelShift.map(PixelOrbit.init) }

    /// Reads the wall keys of a `[display]` table (the caller finishes it). Errors name file:line and the key.
    static func parse(_ t: ConfigTable) throws -> WallDisplaySettings {
        var w = WallDisplaySettings()
        func rethrow<T>(_ table: ConfigTable, _ key: String, _ body: () throws -> T) throws -> T {
            do { return try body() } catch let e as KioskError where e.message.firstRange(of: "key '") == nil {
                throw table.error(key, e.message)
            }
        }
        if let b = try t.string("backlight") {
            w.backlight = try rethrow(t, "backlight") { try BacklightChoice(parsing: b) }
        }
        if let p = try t.table("pixel_shift") {
            let pixels = try p.int("pixels", default: 4)
            let minutes = try p.double("period_minutes", default: 3)
            w.pixelShift = try rethrow(p, p.has("pixels") && !(1...PixelShift.maxPixels).contains(pixels) ? "pixels" : "period_minutes") {
                try PixelShift(pixels: pixels, periodMinutes: minutes)
            }
            try p.finish()
        }
        if let b = try t.table("brightness") {
            let texts = try b.stringArray("schedule") ?? []
            let nodes = try b.array("schedule") ?? []
            var periods: [BrightnessPeriod] = []
            for (i, text) in texts.enumerated() {
                do { periods.append(try BrightnessPeriod(parsing: text)) } catch let e as KioskError {
                    throw KioskError.config("\(nodes[i].location): key '\(b.fullKey("schedule"))[\(i)]': \(e.message)")
                }
            }
            let fade = try b.int("fade_seconds", default: 0, range: 0...86_400)
            if !periods.isEmpty {
                w.brightness = try rethrow(b, "schedule") { try BrightnessSchedule(periods: periods, fadeSeconds: fade) }
            }
            try b.finish()
        }
        if let a = try t.table("ambient") {
            let sensor = try a.string("sensor", default: "auto")
            if sensor.isEmpty { throw a.error("sensor", "expected \"auto\" or an IIO sensor name, got an empty string") }
            var pairs: [[Double]] = [[0, 5], [50, 30], [400, 100]]
            if let nodes = try a.array("curve") {
                pairs = try nodes.enumerated().map { i, n in
                    guard case .array(let pair) = n.value else {
                        throw KioskError.config("\(n.location): key '\(a.fullKey("curve"))[\(i)]': expected [lux, percent], got \(n.value.typeName)")
                    }
                    return try pair.map { v -> Double in
                        switch v.value {
                        case .int(let x): return Double(x)
                        case .double(let x): return x
                        default: throw KioskError.config("\(v.location): key '\(a.fullKey("curve"))[\(i)]': expected [lux, percent] numbers, got \(v.value.typeName)")
                        }
                    }
                }
            }
            let curve = try rethrow(a, "curve") { try LuxCurve(pairs: pairs, key: a.fullKey("curve")) }
            let hysteresis = try a.double("hysteresis", default: 0.2)
            let minimum = try a.double("minimum_lux_change", default: 2)
            let follower = try rethrow(a, a.has("minimum_lux_change") && !(minimum >= 0) ? "minimum_lux_change" : "hysteresis") {
                try AmbientFollower(curve: curve, hysteresis: hysteresis, minimumLuxChange: minimum, key: a.path)
            }
            let interval = try a.double("interval_seconds", default: 2, range: 0.1...3600)
            w.ambient = AmbientSettings(sensor: sensor == "auto" ? nil : sensor, follower: follower, intervalSeconds: interval)
            try a.finish()
        }
        return w
    }
}
