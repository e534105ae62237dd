/// Phase of one finger's contact (one multi-touch slot).
public enum TouchPhase: String, Sendable, Equatable {
    case down, motion, up, cancel
}

/// One finger's event. Positions are normalised to the *scene's* (rotated, logical) space:
/// 0…1 from left to right and top to bottom as the user sees the screen. `up` and `cancel`
/// carry the last known position of that slot.
public struct TouchEvent: Sendable, Equatable {
    public var phase: TouchPhase
    public var slot: Int
    public var x: Double
    public var y: Double
    /// Event time in microseconds (CLOCK_MONOTONIC, as libinput reports it).
    public var timeUsec: UInt64
    public init(_ phase: TouchPhase, slot: Int, x: Double, y: Double, timeUsec: UInt64 = 0) {
        self.phase = phase; self.slot = slot; self.x = x; self.y = y; self.timeUsec = timeUsec
    }
    public var position: Point { Point(x: x, y: y) }
}

public enum KeyState: String, Sendable, Equatable { case pressed, released, repeated }

public enum SwipeDirection: String, Sendable, Equatable, CaseIterable { case left, right, up, down }

/// A gesture recognised from touches (see `GestureRecognizer`). Positions are normalised like touches.
public enum Gesture: Sendable, Equatable {
    case tap(x: Double, y: Double)
    case longPress(x: Double, y: Double)
    case swipe(SwipeDirection, x: Double, y: Double)
}

/// What an input device can do.
public struct InputCapabilities: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let touch = InputCapabilities(rawValue: 1)
    public static let pointer = InputCapabilities(rawValue: 2)
    public static let keyboard = InputCapabilities(rawValue: 4)
    public static let tabletTool = InputCapabilities(rawValue: 8)
    public var names: [String] {
        var n: [String] = []
        if contains(.touch) { n.append("touch") }
        if contains(.pointer) { n.append("pointer") }
        if contains(.keyboard) { n.append("keyboard") }
        if contains(.tabletTool) { n.append("tablet-tool") }
        return n
    }
}

public struct InputDeviceInfo: Sendable, Equatable, Hashable {
    public var name: String
    public var sysname: String
    public var capabilities: InputCapabilities
    public init(name: String, sysname: String, capabilities: InputCapabilities) {
        self.name = name; self.sysname = sysname; self.capabilities = capabilities
    }
}

/// kioskd's input events: plain values, so scenes are testable with scripted input.
public enum InputEvent: Sendable, Equatable {
    case touch(TouchEvent)
    /// End of a set of simultaneous touch changes (libinput's TOUCH_FRAME).
    case touchFrame(timeUsec: UInt64)
    /// An evdev key code (`KeyCode`) going down, up or repeating.
    case key(code: UInt16, state: KeyState, timeUsec: UInt64)
    case gesture(Gesture)
    /// Relative pointer motion in pixels of the scene (for a visible cursor, when configured).
    case pointerMotion(dx: Double, dy: Double, timeUsec: UInt64)
    /// The left button of a relative pointer (a mouse); with a cursor shown it acts as a finger at the cursor.
    case pointerButton(pressed: Bool, timeUsec: UInt64)
    case deviceAdded(InputDeviceInfo)
    case deviceRemoved(InputDeviceInfo)
}

/// Touch events for scripted fingers (tests, demos, `kioskd --snapshot --stroke`).
public enum TouchScript {
    /// Fingers moving along paths at the same time: one `down` per finger, then interleaved
    /// motions (each step followed by a frame), then `up`. Points are normalised; finger i uses slot i.
    public static func strokes(_ paths: [[Point]], startUsec: UInt64 = 1_000_000, stepUsec: UInt64 = 8_000) -> [InputEvent] {
        var out: [InputEvent] = []
        var t = startUsec
        let steps = paths.map(\.count).max() ?? 0
        for step in 0..<steps {
            for (slot, path) in paths.enumerated() where step < path.count {
                let p = path[step]
                out.append(.touch(TouchEvent(step == 0 ? .down : .motion, slot: slot, x: p.x, y: p.y, timeUsec: t)))
            }
            out.append(.touchFrame(timeUsec: t))
            t += stepUsec
        }
        for (slot, path) in paths.enumerated() {
            if let last = path.last { out.append(.touch(TouchEvent(.up, slot: slot, x: last.x, y: last.y, timeUsec: t))) }
        }
        out.append(.touchFrame(timeUsec: t))
        return out
    }

    /// Samples a finger moving smoothly through `points` (a Catmull-Rom curve), about one sample
    /// every `spacing` (normalised units), as a touchscreen reports a moving finger.
    public static func path(through points: [Point], spacing: Double = 0.01) -> [Point] {
        guard points.count > 1 else { return points }
        var out = [points[0]]
        for i in 0..<(points.count - 1) {
            let p0 = points[max(i - 1, 0)], p1 = points[i], p2 = points[i + 1], p3 = points[min(i + 2, points.count - 1)]
            let n = max(1, Int((p1.distance(to: p2) / max(spacing, 1e-4)).rounded(.up)))
            for k in 1...n {
                let t = Double(k) / Double(n), t2 = t * t, t3 = t2 * t
                func c(_ a: Double, _ b: Double, _ c: Double, _ d: Double) -> Double {
                    0.5 * (2 * b + (c - a) * t + (2 * a - 5 * b + 4 * c - d) * t2 + (3 * b - a - 3 * c + d) * t3)
                }
                let q = Point(x: c(p0.x, p1.x, p2.x, p3.x), y: c(p0.y, p1.y, p2.y, p3.y))
                out.append(Point(x: min(max(q.x, 0), 1), y: min(max(q.y, 0), 1)))
            }
        }
        return out
    }

    /// Parses "x,y:x,y[:x,y…]" (normalised 0…1 coordinates) into corner points.
    public static func parsePath(_ spec: String) throws -> [Point] {
        let pts = try spec.split(separator: ":").map { pair -> Point in
            let xy = pair.split(separator: ",")
            guard xy.count == 2, let x = Double(xy[0]), let y = Double(xy[1]), (0...1).contains(x), (0...1).contains(y) else {
                throw KioskError(.input, "stroke '\(spec)': '\(pair)' is not a point x,y with both in 0…1")
            }
            return Point(x: x, y: y)
        }
        guard pts.count >= 2 else { throw KioskError(.input, "stroke '\(spec)': needs at least two points x,y:x,y") }
        return pts
    }
}
