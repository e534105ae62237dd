import KioskCore
import KioskRender
import KioskScenes

/// A clock that moves only when told (tests and benchmarks).
public final class ManualTimeSource: TimeSource {
    public var current: WallTime
    public init(_ start: WallTime) { current = start }
    /// A manual clock at a local wall-clock time given as seconds since the epoch.
    public convenience init(epochSeconds: Double, monotonicNs: Int64 = 1_000_000_000) {
        self.init(WallTime(realtimeNs: Int64(epochSeconds * 1e9), monotonicNs: monotonicNs))
    }
    public func now() -> WallTime { current }
    public func advance(seconds: Double) { current = current.advanced(byNs: Int64(seconds * 1e9)) }
    public func advance(ns: Int64) { current = current.advanced(byNs: ns) }
    /// Moves only the wall clock (an NTP step or a manual change), not the monotonic one.
    public func jumpWallClock(bySeconds s: Double) { current.realtimeNs += Int64(s * 1e9) }
}

/// An input source driven by a script of events (multi-touch strokes, keys).
public final class ScriptedInput: InputSource {
    public var onEvent: ((InputEvent) -> Void)?
    public var onRoutedEvent: ((InputEvent, Int?) -> Void)?
    public var devices: [InputDeviceInfo] = [InputDeviceInfo(name: "scripted touchscreen", sysname: "event-scripted", capabilities: [.touch, .keyboard])]
    public private(set) var rotation: Rotation = .r0
    public init() {}
    public func setRotation(_ rotation: Rotation) { self.rotation = rotation }
    public func shutdown() {}
    /// Sends `e` as a device of output `output` would (nil: a keyboard or mouse).
    public func send(_ e: InputEvent, output: Int? = nil) {
        if let r = onRoutedEvent { r(e, output) } else { onEvent?(e) }
    }
    public func send(_ events: [InputEvent], output: Int? = nil) { for e in events { send(e, output: output) } }

    /// Evenly spaced points from `a` to `b` (normalised), `count` ≥ 2.
    public static func line(from a: Point, to b: Point, count: Int = 12) -> [Point] {
        (0..<count).map { i in
            let t = Double(i) / Double(max(count - 1, 1))
            return Point(x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t)
        }
    }
}

/// Pixel assertions helpers.
public enum Pixels {
    /// Largest channel difference (0…255) between two colours.
    public static func distance(_ a: Color, _ b: Color) -> Int {
        let x = a.rgb8, y = b.rgb8
        return max(abs(x.r - y.r), abs(x.g - y.g), abs(x.b - y.b))
    }
    /// How many pixels differ between two canvases of the same size within a rectangle.
    public static func differingPixels(_ a: Canvas, _ b: Canvas, in rect: Rect? = nil) -> Int {
        precondition(a.size == b.size)
        let r = (rect ?? Rect(size: a.size)).intersection(Rect(size: a.size))
        let pa = a.pixels, pb = b.pixels
        var n = 0
        for y in r.y..<r.maxY {
            for x in r.x..<r.maxX where (pa.pixel(x: x, y: y) & 0xFFFFFF) != (pb.pixel(x: x, y: y) & 0xFFFFFF) { n += 1 }
        }
        return n
    }
    /// Number of pixels in `rect` within `tolerance` of `color`.
    public static func count(_ color: Color, in canvas: Canvas, rect: Rect? = nil, tolerance: Int = 0) -> Int {
        let r = (rect ?? Rect(size: canvas.size)).intersection(Rect(size: canvas.size))
        var n = 0
        for y in r.y..<r.maxY { for x in r.x..<r.maxX where distance(canvas.color(x: x, y: y), color) <= tolerance { n += 1 } }
        return n
    }
}
