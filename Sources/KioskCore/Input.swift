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
    case deviceAdded(InputDeviceInfo)
    case deviceRemoved(InputDeviceInfo)
}
