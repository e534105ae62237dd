#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// Turns device events (plain values, as libinput reports them) into kioskd's `InputEvent`s.
///
/// Pure and testable without devices; `LibInputSource` feeds it. Coordinates come in
/// normalised *physical* panel coordinates (libinput's `…_get_x_transformed(event, 1)`), are
/// mapped through the `InputTransform` (calibration, then rotation) and leave normalised in the
/// scene's logical space.
///
/// Slots: every device gets an index when it is added (never reused while running), and a
/// finger's slot is `device * slotsPerDevice + deviceSlot`, so slots are unique across devices.
/// Touch slots use 0…99 of a device's range (libinput's per-device slot, -1 for single-touch
/// panels becomes 0); an absolute pointer acting as a finger uses `pointerSlot` (100) and a
/// tablet tool `tabletSlot` (101).
///
/// Garbage: a down at a non-finite position is dropped (that finger never starts); a motion at
/// a non-finite position is dropped (the finger stays where it was); events for a slot that is
/// not down are ignored; slots past 99 are ignored.
public struct InputMapper: Sendable {
    public static let slotsPerDevice = 1000
    public static let maxTouchSlot = 99
    public static let pointerSlot = 100
    public static let tabletSlot = 101
    /// evdev BTN_LEFT: the button that makes an absolute pointer's finger touch.
    public static let buttonLeft: UInt32 = 0x110

    /// The transform of output 0 (and of every device while there is one output).
    public var transform: InputTransform
    /// With several outputs: the transform of each other output (its rotation), by index.
    public var outputTransforms: [Int: InputTransform] = [:]
    /// With several outputs: the output each device belongs to, by device index (absent: 0).
    public var deviceOutputs: [Int: Int] = [:]
    /// Absolute pointers and tablet tools act as one finger (otherwise they are ignored).
    public var pointerAsTouch: Bool

    /// Last logical position of every finger that is down, by kioskd slot.
    public private(set) var active: [Int: Point] = [:]
    /// Last normalised physical position of each absolute pointer / tablet tool, by device.
    private var pointerPosition: [Int: Point] = [:]
    private var tabletPosition: [Int: Point] = [:]

    public init(transform: InputTransform, pointerAsTouch: Bool = true) {
        self.transform = transform
        self.pointerAsTouch = pointerAsTouch
    }

    /// The kioskd slot of a device's slot.
    public static func slot(device: Int, deviceSlot: Int) -> Int {
        device * slotsPerDevice + deviceSlot
    }

    // MARK: Touch

    /// LIBINPUT_EVENT_TOUCH_DOWN.
    public mutating func touchDown(device: Int, slot: Int32, x: Double, y: Double, timeUsec: UInt64) -> [InputEvent] {
        guard let s = touchSlot(device: device, slot: slot) else { return [] }
        return down(slot: s, physical: Point(x: x, y: y), timeUsec: timeUsec)
    }

    /// LIBINPUT_EVENT_TOUCH_MOTION.
    public mutating func touchMotion(device: Int, slot: Int32, x: Double, y: Double, timeUsec: UInt64) -> [InputEvent] {
        guard let s = touchSlot(device: device, slot: slot) else { return [] }
        return motion(slot: s, physical: Point(x: x, y: y), timeUsec: timeUsec)
    }

    /// LIBINPUT_EVENT_TOUCH_UP: no coordinates; the finger ends where it was last seen.
    public mutating func touchUp(device: Int, slot: Int32, timeUsec: UInt64) -> [InputEvent] {
        guard let s = touchSlot(device: device, slot: slot) else { return [] }
        return end(slot: s, phase: .up, timeUsec: timeUsec)
    }

    /// LIBINPUT_EVENT_TOUCH_CANCEL: ends the finger as cancelled, at its last position.
    public mutating func touchCancel(device: Int, slot: Int32, timeUsec: UInt64) -> [InputEvent] {
        guard let s = touchSlot(device: device, slot: slot) else { return [] }
        return end(slot: s, phase: .cancel, timeUsec: timeUsec)
    }

    /// LIBINPUT_EVENT_TOUCH_FRAME.
    public func touchFrame(timeUsec: UInt64) -> [InputEvent] {
        [.touchFrame(timeUsec: timeUsec)]
    }

    // MARK: Pointers and tablet tools

    /// LIBINPUT_EVENT_POINTER_MOTION_ABSOLUTE: moves the pointer's finger if its button is down.
    public mutating func pointerAbsolute(device: Int, x: Double, y: Double, timeUsec: UInt64) -> [InputEvent] {
        let p = Point(x: x, y: y)
        guard p.x.isFinite, p.y.isFinite else { return [] }
        // Kept even when pointers are not fingers: it marks the device as absolute (not a mouse).
        pointerPosition[device] = p
        guard pointerAsTouch else { return [] }
        let s = Self.slot(device: device, deviceSlot: Self.pointerSlot)
        guard active[s] != nil else { return [] }
        return framed(motion(slot: s, physical: p, timeUsec: timeUsec), timeUsec)
    }

    /// LIBINPUT_EVENT_POINTER_BUTTON: the left button puts the pointer's finger down or lifts it.
    /// A device with no absolute position (a relative mouse) reports `.pointerButton` instead, for
    /// the scene manager's cursor.
    public mutating func pointerButton(device: Int, button: UInt32, pressed: Bool, timeUsec: UInt64) -> [InputEvent] {
        guard button == Self.buttonLeft else { return [] }
        let s = Self.slot(device: device, deviceSlot: Self.pointerSlot)
        guard let p = pointerPosition[device] else {
            return active[s] == nil ? [.pointerButton(pressed: pressed, timeUsec: timeUsec)] : []
        }
        guard pointerAsTouch else { return [] }
        if pressed {
            guard active[s] == nil else { return [] }
            return framed(down(slot: s, physical: p, timeUsec: timeUsec), timeUsec)
        }
        return framed(end(slot: s, phase: .up, timeUsec: timeUsec), timeUsec)
    }

    /// LIBINPUT_EVENT_POINTER_MOTION: relative motion, passed on unrotated (a mouse moves in
    /// the viewer's frame, not the panel's) for a cursor if the scene manager shows one.
    public func pointerRelative(dx: Double, dy: Double, timeUsec: UInt64) -> [InputEvent] {
        guard dx.isFinite, dy.isFinite, dx != 0 || dy != 0 else { return [] }
        return [.pointerMotion(dx: dx, dy: dy, timeUsec: timeUsec)]
    }

    /// LIBINPUT_EVENT_TABLET_TOOL_AXIS / _PROXIMITY (in): the tool's position; moves its finger if the tip is down.
    public mutating func tabletAxis(device: Int, x: Double, y: Double, timeUsec: UInt64) -> [InputEvent] {
        guard pointerAsTouch else { return [] }
        let p = Point(x: x, y: y)
        guard p.x.isFinite, p.y.isFinite else { return [] }
        tabletPosition[device] = p
        let s = Self.slot(device: device, deviceSlot: Self.tabletSlot)
        guard active[s] != nil else { return [] }
        return framed(motion(slot: s, physical: p, timeUsec: timeUsec), timeUsec)
    }

    /// LIBINPUT_EVENT_TABLET_TOOL_TIP: tip down puts the tool's finger down at (x, y), tip up lifts it.
    public mutating func tabletTip(device: Int, down isDown: Bool, x: Double, y: Double, timeUsec: UInt64) -> [InputEvent] {
        guard pointerAsTouch else { return [] }
        let s = Self.slot(device: device, deviceSlot: Self.tabletSlot)
        if isDown {
            _ = tabletAxis(device: device, x: x, y: y, timeUsec: timeUsec)
            guard let p = tabletPosition[device], active[s] == nil else { return [] }
            return framed(down(slot: s, physical: p, timeUsec: timeUsec), timeUsec)
        }
        var out = tabletAxis(device: device, x: x, y: y, timeUsec: timeUsec)
        out += framed(end(slot: s, phase: .up, timeUsec: timeUsec), timeUsec)
        return out
    }

    /// The tablet tool left proximity: a tip still down is lifted.
    public mutating func tabletProximityOut(device: Int, timeUsec: UInt64) -> [InputEvent] {
        let s = Self.slot(device: device, deviceSlot: Self.tabletSlot)
        tabletPosition[device] = nil
        return framed(end(slot: s, phase: .up, timeUsec: timeUsec), timeUsec)
    }

    // MARK: Keys and devices

    /// LIBINPUT_EVENT_KEYBOARD_KEY.
    public func key(code: UInt32, pressed: Bool, timeUsec: UInt64) -> [InputEvent] {
        guard code <= UInt32(UInt16.max) else { return [] }
        return [.key(code: UInt16(code), state: pressed ? .pressed : .released, timeUsec: timeUsec)]
    }

    /// The device went away (unplugged, or its node vanished): every finger it had down ends
    /// as cancelled at its last position, followed by a frame.
    public mutating func deviceRemoved(device: Int, timeUsec: UInt64) -> [InputEvent] {
        let range = Self.slot(device: device, deviceSlot: 0)..<Self.slot(device: device + 1, deviceSlot: 0)
        let slots = active.keys.filter { range.contains($0) }.sorted()
        pointerPosition[device] = nil
        tabletPosition[device] = nil
        var out: [InputEvent] = []
        for s in slots { out += end(slot: s, phase: .cancel, timeUsec: timeUsec) }
        return out.isEmpty ? [] : out + [.touchFrame(timeUsec: timeUsec)]
    }

    // MARK: Internals

    private func touchSlot(device: Int, slot: Int32) -> Int? {
        let local = max(Int(slot), 0)
        guard local <= Self.maxTouchSlot else { return nil }
        return Self.slot(device: device, deviceSlot: local)
    }

    /// The output the finger in kioskd slot `s` belongs to (its device's).
    public func output(ofSlot s: Int) -> Int { deviceOutputs[s / Self.slotsPerDevice] ?? 0 }

    /// The transform for the finger in slot `s`: its output's.
    private func transform(forSlot s: Int) -> InputTransform {
        let o = output(ofSlot: s)
        return o == 0 ? transform : (outputTransforms[o] ?? transform)
    }

    private mutating func down(slot s: Int, physical: Point, timeUsec: UInt64) -> [InputEvent] {
        guard let p = transform(forSlot: s).map(physical: physical) else { return [] }
        if active[s] != nil {
            // A second down without an up: treat it as a move of the same finger.
            active[s] = p
            return [.touch(TouchEvent(.motion, slot: s, x: p.x, y: p.y, timeUsec: timeUsec))]
        }
        active[s] = p
        return [.touch(TouchEvent(.down, slot: s, x: p.x, y: p.y, timeUsec: timeUsec))]
    }

    private mutating func motion(slot s: Int, physical: Point, timeUsec: UInt64) -> [InputEvent] {
        guard active[s] != nil, let p = transform(forSlot: s).map(physical: physical) else { return [] }
        active[s] = p
        return [.touch(TouchEvent(.motion, slot: s, x: p.x, y: p.y, timeUsec: timeUsec))]
    }

    private mutating func end(slot s: Int, phase: TouchPhase, timeUsec: UInt64) -> [InputEvent] {
        guard let p = active.removeValue(forKey: s) else { return [] }
        return [.touch(TouchEvent(phase, slot: s, x: p.x, y: p.y, timeUsec: timeUsec))]
    }

    private func framed(_ events: [InputEvent], _ timeUsec: UInt64) -> [InputEvent] {
        events.isEmpty ? [] : events + [.touchFrame(timeUsec: timeUsec)]
    }
}

/// Whether a touch device should drive the output kioskd shows on.
///
/// `wanted` is the configured output name (nil: every touch device is used); `deviceOutput` is
/// the device's udev `WL_OUTPUT` property (set by a udev rule or hwdb, e.g. `HDMI-A-1`). A
/// device without that property cannot be matched and is used (there is no other reliable
/// link between a USB/I²C touch controller and a connector); a device naming another output is
/// not. Names compare without regard to case.
public func touchDeviceMatchesOutput(deviceOutput: String?, wanted: String?) -> Bool {
    guard let wanted, !wanted.isEmpty else { return true }
    guard let d = deviceOutput, !d.isEmpty else { return true }
    return d.lowercased() == wanted.lowercased()
}

/// The output (index into `outputs`, the outputs' names) a touch device belongs to: the first
/// `[[input.device]]` rule whose glob matches its name or sysname, else the output its udev
/// `WL_OUTPUT` names, else the first output. Names compare case-insensitively; globs are
/// shell patterns (`fnmatch`).
public func touchDeviceOutput(name: String, sysname: String, wlOutput: String?, rules: [(match: String, output: String)],
                              outputs: [String]) -> Int {
    func index(_ n: String) -> Int? { outputs.firstIndex { $0.lowercased() == n.lowercased() } }
    for r in rules where fnmatch(r.match, name, 0) == 0 || fnmatch(r.match, sysname, 0) == 0 {
        if let i = index(r.output) { return i }
    }
    if let w = wlOutput, !w.isEmpty, let i = index(w) { return i }
    return 0
}

/// The message for a device node kioskd may not open (EACCES/EPERM from open()).
public func inputPermissionMessage(path: String, errno code: Int32, seat: String) -> String {
    let reason = code == 13 ? "permission denied" : (code == 1 ? "operation not permitted" : "errno \(code)")
    return "cannot open input device \(path): \(reason); kioskd's user needs read/write access to /dev/input/event*: "
        + "add it to the 'input' group, or run kioskd in a logind session that owns seat '\(seat)'"
}
