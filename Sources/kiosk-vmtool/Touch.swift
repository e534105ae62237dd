#if canImport(Glibc)
import Glibc
#endif
import CKioskUInput
import KioskCore

/// MT_TOOL_FINGER and MT_TOOL_MAX from linux/input.h (that header also defines structs other
/// modules import, so only linux/input-event-codes.h is in the shims).
let mtToolFinger: Int32 = 0x00
let mtToolMax: Int32 = 0x0F

/// The kinds of touchscreen the tool can make.
enum TouchPanelKind: String {
    /// A tidy panel: 0…4095 on both axes, 16 units/mm, ten slots.
    case ideal
    /// Like many real panels: 0…799 × 0…479, resolution 0, ABS_MT_TOOL_TYPE, five slots.
    case odd

    var range: (x: ClosedRange<Int32>, y: ClosedRange<Int32>) {
        switch self {
        case .ideal: return (0...4095, 0...4095)
        case .odd: return (0...799, 0...479)
        }
    }
    var resolution: Int32 { self == .ideal ? 16 : 0 }
    var slots: Int32 { self == .ideal ? 10 : 5 }
}

/// A multi-touch (type B) touchscreen: ABS_MT_SLOT, ABS_MT_TRACKING_ID, ABS_MT_POSITION_X/Y,
/// ABS_X/Y, BTN_TOUCH and INPUT_PROP_DIRECT (a screen, not a touchpad).
final class TouchPanel {
    let device: UInputDevice
    let kind: TouchPanelKind
    private var nextTrackingID: Int32 = 1

    init(name: String, kind: TouchPanelKind) throws {
        self.kind = kind
        device = try UInputDevice(name: name)
        let r = kind.range
        try device.enable(event: EV_SYN)
        try device.enable(event: EV_KEY)
        try device.enable(event: EV_ABS)
        try device.enable(key: BTN_TOUCH)
        try device.enable(property: INPUT_PROP_DIRECT)
        try device.enable(abs: ABS_X, min: r.x.lowerBound, max: r.x.upperBound, resolution: kind.resolution)
        try device.enable(abs: ABS_Y, min: r.y.lowerBound, max: r.y.upperBound, resolution: kind.resolution)
        try device.enable(abs: ABS_MT_SLOT, min: 0, max: kind.slots - 1, resolution: 0)
        try device.enable(abs: ABS_MT_TRACKING_ID, min: 0, max: 65535, resolution: 0)
        try device.enable(abs: ABS_MT_POSITION_X, min: r.x.lowerBound, max: r.x.upperBound, resolution: kind.resolution)
        try device.enable(abs: ABS_MT_POSITION_Y, min: r.y.lowerBound, max: r.y.upperBound, resolution: kind.resolution)
        if kind == .odd {
            try device.enable(abs: ABS_MT_TOOL_TYPE, min: 0, max: mtToolMax, resolution: 0)
        }
        try device.create(product: kind == .ideal ? 0x7001 : 0x7002)
    }

    /// Device units for a normalised panel position (0…1; values outside are sent as they are,
    /// like a panel reporting past its declared range).
    func units(_ p: Point) -> (Int32, Int32) {
        let r = kind.range
        let x = Double(r.x.lowerBound) + (p.x * Double(r.x.upperBound - r.x.lowerBound)).rounded()
        let y = Double(r.y.lowerBound) + (p.y * Double(r.y.upperBound - r.y.lowerBound)).rounded()
        return (Int32(clamping: Int(x)), Int32(clamping: Int(y)))
    }

    /// One frame: every finger in `positions` (slot → point) lands or moves; `lift` slots go up.
    func frame(down: [Int32: Point] = [:], move: [Int32: Point] = [:], lift: [Int32] = []) throws {
        for (slot, p) in down.sorted(by: { $0.key < $1.key }) {
            let (x, y) = units(p)
            try device.emit(EV_ABS, ABS_MT_SLOT, slot)
            try device.emit(EV_ABS, ABS_MT_TRACKING_ID, nextTrackingID)
            nextTrackingID += 1
            if kind == .odd { try device.emit(EV_ABS, ABS_MT_TOOL_TYPE, mtToolFinger) }
            try device.emit(EV_ABS, ABS_MT_POSITION_X, x)
            try device.emit(EV_ABS, ABS_MT_POSITION_Y, y)
        }
        for (slot, p) in move.sorted(by: { $0.key < $1.key }) {
            let (x, y) = units(p)
            try device.emit(EV_ABS, ABS_MT_SLOT, slot)
            try device.emit(EV_ABS, ABS_MT_POSITION_X, x)
            try device.emit(EV_ABS, ABS_MT_POSITION_Y, y)
        }
        for slot in lift.sorted() {
            try device.emit(EV_ABS, ABS_MT_SLOT, slot)
            try device.emit(EV_ABS, ABS_MT_TRACKING_ID, -1)
        }
        // Single-touch emulation follows the lowest slot that is down.
        if let first = (down.merging(move) { a, _ in a }).min(by: { $0.key < $1.key }) {
            let (x, y) = units(first.value)
            if !down.isEmpty { try device.emit(EV_KEY, BTN_TOUCH, 1) }
            try device.emit(EV_ABS, ABS_X, x)
            try device.emit(EV_ABS, ABS_Y, y)
        } else if !lift.isEmpty {
            try device.emit(EV_KEY, BTN_TOUCH, 0)
        }
        try device.sync()
    }
}

/// A path of normalised panel points, walked at even steps.
struct Stroke: Equatable {
    var points: [Point]

    /// Parses "x0,y0:x1,y1[:…]" (at least two points, numbers 0…1).
    init(parsing s: String) throws {
        var pts: [Point] = []
        for part in s.split(separator: ":") {
            let xy = part.split(separator: ",")
            guard xy.count == 2, let x = Double(xy[0]), let y = Double(xy[1]), x.isFinite, y.isFinite else {
                throw KioskError.config("stroke '\(s)': point '\(part)' is not 'x,y'")
            }
            pts.append(Point(x: x, y: y))
        }
        guard pts.count >= 2 else { throw KioskError.config("stroke '\(s)' needs at least two points x0,y0:x1,y1") }
        points = pts
    }

    /// The point at fraction t (0…1) of the way along the path (by length).
    func point(at t: Double) -> Point {
        let lengths = zip(points, points.dropFirst()).map { $0.distance(to: $1) }
        let total = lengths.reduce(0, +)
        guard total > 0 else { return points[0] }
        var d = min(max(t, 0), 1) * total
        for (i, l) in lengths.enumerated() {
            if d <= l || i == lengths.count - 1 {
                let f = l > 0 ? min(d / l, 1) : 0
                let a = points[i], b = points[i + 1]
                return Point(x: a.x + (b.x - a.x) * f, y: a.y + (b.y - a.y) * f)
            }
            d -= l
        }
        return points[points.count - 1]
    }
}

/// Plays strokes with one finger each, all at once: every finger lands in the first frame,
/// moves one step per frame and lifts in the last. With `unplugAfter`, the device is destroyed
/// after that many steps with the fingers still down.
func playStrokes(_ strokes: [Stroke], on panel: TouchPanel, steps: Int, stepMs: Int, unplugAfter: Int?) throws {
    var down: [Int32: Point] = [:]
    for (i, s) in strokes.enumerated() { down[Int32(i)] = s.point(at: 0) }
    try panel.frame(down: down)
    sleepMs(stepMs)
    for step in 1...max(steps, 1) {
        if let u = unplugAfter, step > u {
            panel.device.destroy()
            say("unplugged after \(u) steps")
            return
        }
        let t = Double(step) / Double(max(steps, 1))
        var move: [Int32: Point] = [:]
        for (i, s) in strokes.enumerated() { move[Int32(i)] = s.point(at: t) }
        try panel.frame(move: move)
        sleepMs(stepMs)
    }
    try panel.frame(lift: strokes.indices.map { Int32($0) })
}
