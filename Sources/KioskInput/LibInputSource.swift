#if canImport(Glibc)
import Glibc
#endif
import CLibInput
import CKioskInputShims
import CKioskLazy
import KioskCore
import KioskUdev
import Logging
import KioskPosix

/// How kioskd reads input devices.
public struct InputOptions: Sendable {
    /// The udev seat whose devices are used (`ID_SEAT`, default "seat0").
    public var seat: String
    /// A 6-number calibration matrix (`a b c d e f`, as udev's LIBINPUT_CALIBRATION_MATRIX),
    /// applied by kioskd to normalised panel coordinates before rotation; nil = identity.
    /// A matrix set by udev on the device itself is applied by libinput before this one.
    public var calibration: [Double]?
    /// The display's rotation (updated later with `setRotation`).
    public var rotation: Rotation
    /// Only touch devices whose udev `WL_OUTPUT` names this output (or that name none) are
    /// used; nil = all. See `touchDeviceMatchesOutput`.
    public var mapToOutput: String?
    /// Absolute pointers (KVMs, QEMU's tablets) and tablet tools act as one finger.
    public var pointerAsTouch: Bool
    /// With several outputs: each output's name, rotation and calibration (nil: `calibration`), in
    /// order (the first output's rotation is `rotation`).
    public var outputs: [(name: String, rotation: Rotation, calibration: [Double]?)] = []
    /// `[[input.device]]`: touch devices whose name or sysname matches `match` belong to `output`.
    public var deviceRules: [(match: String, output: String)] = []

    public init(seat: String = "seat0", calibration: [Double]? = nil, rotation: Rotation = .r0,
                mapToOutput: String? = nil, pointerAsTouch: Bool = true) {
        self.seat = seat
        self.calibration = calibration
        self.rotation = rotation
        self.mapToOutput = mapToOutput
        self.pointerAsTouch = pointerAsTouch
    }
}

/// Input from libinput's udev backend: touch screens, pointers, tablet tools and keys on a
/// seat, with hotplug, delivered as `InputEvent`s on the event loop.
///
/// Wraps `libinput_udev_create_context` + `libinput_udev_assign_seat`; the context's fd is
/// watched by the `KioskLoop` and every event is drained (`libinput_get_event`) and destroyed
/// (`libinput_event_destroy`) after it is turned into `InputEvent`s by an `InputMapper`.
/// Device nodes are opened with plain `open()`: kioskd's user needs access to
/// /dev/input/event* (the `input` group, or a logind session on the seat).
public final class LibInputSource: InputSource {
    public var onEvent: ((InputEvent) -> Void)?
    public var onRoutedEvent: ((InputEvent, Int?) -> Void)?

    private struct Device {
        var index: Int
        var info: InputDeviceInfo
        /// Touch events of this device are ignored (it belongs to another output).
        var ignoresTouch: Bool
        /// The output its touches go to (with several outputs).
        var output: Int = 0
        /// Whether its events are positions on a screen (touch, tablet, absolute pointer).
        var positional: Bool = false
    }

    public let options: InputOptions
    private let loop: any KioskLoop
    private let logger: Logger
    private var udev: Udev?
    private var li: OpaquePointer?
    private let interface: UnsafeMutablePointer<libinput_interface>
    private var watchID: WatchID?
    private var mapper: InputMapper
    private var table: [OpaquePointer: Device] = [:]
    private var nextIndex = 0
    /// Device nodes open() refused while starting: reported once, by the error `init` throws
    /// when no device could be opened for lack of permission, else logged (later refusals are
    /// logged at once).
    private var openFailures: [(path: String, errno: Int32)] = []
    private var starting = true

    /// Devices currently open, in the order they appeared.
    public var devices: [InputDeviceInfo] {
        table.values.sorted { $0.index < $1.index }.map(\.info)
    }

    /// Creates the libinput context on `options.seat` and starts watching it on `loop`.
    ///
    /// Throws `.config` for a bad calibration matrix, `.input` when udev or libinput cannot
    /// start or the seat cannot be assigned, and `.input` naming the devices and the group or
    /// seat needed when input devices exist but none could be opened for lack of permission.
    /// Devices present at start are listed in `devices` at once and announced with
    /// `.deviceAdded` at the end of the loop's current (or first) iteration, after `onEvent` is
    /// set. Call on the loop's thread, or before the loop runs.
    public init(options: InputOptions, loop: any KioskLoop, logger: Logger) throws {
        // libinput is opened when first needed (a headless kioskd never loads it).
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_INPUT)) { throw KioskError.input(String(cString: e)) }
        self.options = options
        self.loop = loop
        self.logger = logger
        let firstCalibration = options.outputs.first?.calibration ?? options.calibration
        let transform = try InputTransform(calibration: firstCalibration ?? InputTransform.identity, rotation: options.rotation)
        mapper = InputMapper(transform: transform, pointerAsTouch: options.pointerAsTouch)
        for (i, o) in options.outputs.enumerated() where i > 0 {
            mapper.outputTransforms[i] = try InputTransform(calibration: o.calibration ?? options.calibration ?? InputTransform.identity, rotation: o.rotation)
        }
        interface = .allocate(capacity: 1)
        interface.initialize(to: libinput_interface(
            open_restricted: { path, flags, user in
                guard let path else { return -EINVAL }
                let fd = open(path, flags | O_CLOEXEC)
                if fd < 0 {
                    let e = errno
                    if let user {
                        Unmanaged<LibInputSource>.fromOpaque(user).takeUnretainedValue().openFailed(String(cString: path), e)
                    }
                    return -e
                }
                return fd
            },
            close_restricted: { fd, _ in
                close(fd)
            }))

        let udev: Udev
        do { udev = try Udev() } catch let e as KioskError {
            throw KioskError.input("\(e.message): cannot read the udev device database", errno: e.errno)
        }
        self.udev = udev
        guard let li = libinput_udev_create_context(interface, Unmanaged.passUnretained(self).toOpaque(), udev.pointer) else {
            shutdown()
            throw KioskError.input("libinput_udev_create_context failed")
        }
        self.li = li
        kiosk_libinput_set_log_sink(li, { user, priority, message in
            guard let user, let message else { return }
            let msg = String(cString: message)
            let me = Unmanaged<LibInputSource>.fromOpaque(user).takeUnretainedValue()
            switch priority {
            case LIBINPUT_LOG_PRIORITY_ERROR: me.logger.error("libinput: \(msg)")
            default: me.logger.debug("libinput: \(msg)")
            }
        })
        // libinput's errors are kioskd errors; its info and debug chatter (device tagging, quirks)
        // only shows when kioskd logs at debug (kioskd logs every device itself at info).
        libinput_log_set_priority(li, logger.logLevel <= .debug ? LIBINPUT_LOG_PRIORITY_DEBUG : LIBINPUT_LOG_PRIORITY_ERROR)

        if libinput_udev_assign_seat(li, options.seat) != 0 {
            shutdown()
            throw KioskError.input("libinput_udev_assign_seat failed for seat '\(options.seat)' (is udev's database readable under /run/udev?)")
        }
        // Devices present now were added (and opened) inside assign_seat: take their events.
        drain()
        let refused = openFailures.filter { $0.errno == EACCES || $0.errno == EPERM }
        if table.isEmpty, let first = refused.first {
            for f in openFailures where f.errno != EACCES && f.errno != EPERM { logOpenFailure(f.path, f.errno) }
            let others = refused.dropFirst().map(\.path)
            let more = others.isEmpty ? "" : " (also refused: \(others.joined(separator: ", ")))"
            shutdown()
            throw KioskError.input(inputPermissionMessage(path: first.path, errno: first.errno, seat: options.seat) + more, errno: first.errno)
        }
        for f in openFailures { logOpenFailure(f.path, f.errno) }
        openFailures.removeAll()
        starting = false

        do {
            watchID = try loop.watch(fd: libinput_get_fd(li)) { [unowned self] in self.dispatch() }
        } catch {
            shutdown()
            throw error
        }
        let found = devices
        loop.deferToEndOfIteration { [weak self] in
            guard let self else { return }
            for d in found where self.devices.contains(d) { self.onEvent?(.deviceAdded(d)) }
        }
        logger.info("input: libinput on seat \(options.seat), \(found.count) device(s)",
                    metadata: ["input.seat": "\(options.seat)"])
    }

    deinit {
        shutdown()
        interface.deinitialize(count: 1)
        interface.deallocate()
    }

    public func setRotation(_ rotation: Rotation) {
        mapper.transform.rotation = rotation
    }

    /// Stops watching and closes every device (`libinput_unref`, `udev_unref`).
    public func shutdown() {
        if let w = watchID { loop.unwatch(w); watchID = nil }
        if let li { libinput_unref(li); self.li = nil }
        udev = nil
        table.removeAll()
    }

    // MARK: Events

    fileprivate func openFailed(_ path: String, _ e: Int32) {
        if starting { openFailures.append((path, e)) } else { logOpenFailure(path, e) }
    }

    private func logOpenFailure(_ path: String, _ e: Int32) {
        if e == EACCES || e == EPERM {
            logger.error("input: \(inputPermissionMessage(path: path, errno: e, seat: options.seat))", metadata: ["input.device": "\(path)"])
        } else {
            logger.error("input: \(Posix.error("open", path: path, errno: e))", metadata: ["input.device": "\(path)"])
        }
    }

    /// Reads the fd (`libinput_dispatch`) and handles every queued event.
    private func dispatch() {
        guard let li else { return }
        let r = libinput_dispatch(li)
        if r < 0 { logger.error("input: \(Posix.error("libinput_dispatch", errno: -r))") }
        drain()
    }

    private func drain() {
        guard let li else { return }
        while let ev = libinput_get_event(li) {
            let out = handle(ev)
            let device = libinput_event_get_device(ev).flatMap { table[$0] }
            libinput_event_destroy(ev)
            for e in out { deliver(e, from: device) }
        }
    }

    /// Gives `e` to `onRoutedEvent` with its device's output (positional devices only), else to `onEvent`.
    private func deliver(_ e: InputEvent, from device: Device?) {
        guard let routed = onRoutedEvent else { onEvent?(e); return }
        switch e {
        case .touch, .touchFrame:
            routed(e, device.map(\.output) ?? 0)
        default:
            routed(e, nil)
        }
    }

    private func handle(_ ev: OpaquePointer) -> [InputEvent] {
        let type = libinput_event_get_type(ev)
        guard let dev = libinput_event_get_device(ev) else { return [] }
        switch type {
        case LIBINPUT_EVENT_DEVICE_ADDED:
            return deviceAdded(dev)
        case LIBINPUT_EVENT_DEVICE_REMOVED:
            guard let d = table.removeValue(forKey: dev) else { return [] }
            let now = UInt64(max(nowNanos(.monotonic), 0)) / 1000
            let cancels = mapper.deviceRemoved(device: d.index, timeUsec: now)
            let fingers = cancels.filter { if case .touch = $0 { return true } else { return false } }.count
            logger.info("input device removed: \(d.info.name) (\(d.info.sysname))\(fingers > 0 ? ", \(fingers) touch(es) cancelled" : "")",
                        metadata: ["input.device": "\(d.info.sysname)"])
            return cancels + [.deviceRemoved(d.info)]
        default:
            break
        }
        guard let d = table[dev] else { return [] }
        switch type {
        case LIBINPUT_EVENT_TOUCH_DOWN, LIBINPUT_EVENT_TOUCH_MOTION, LIBINPUT_EVENT_TOUCH_UP,
             LIBINPUT_EVENT_TOUCH_CANCEL, LIBINPUT_EVENT_TOUCH_FRAME:
            guard !d.ignoresTouch, let t = libinput_event_get_touch_event(ev) else { return [] }
            let time = libinput_event_touch_get_time_usec(t)
            switch type {
            case LIBINPUT_EVENT_TOUCH_DOWN:
                return mapper.touchDown(device: d.index, slot: libinput_event_touch_get_slot(t),
                                        x: libinput_event_touch_get_x_transformed(t, 1), y: libinput_event_touch_get_y_transformed(t, 1), timeUsec: time)
            case LIBINPUT_EVENT_TOUCH_MOTION:
                return mapper.touchMotion(device: d.index, slot: libinput_event_touch_get_slot(t),
                                          x: libinput_event_touch_get_x_transformed(t, 1), y: libinput_event_touch_get_y_transformed(t, 1), timeUsec: time)
            case LIBINPUT_EVENT_TOUCH_UP:
                return mapper.touchUp(device: d.index, slot: libinput_event_touch_get_slot(t), timeUsec: time)
            case LIBINPUT_EVENT_TOUCH_CANCEL:
                return mapper.touchCancel(device: d.index, slot: libinput_event_touch_get_slot(t), timeUsec: time)
            default:
                return mapper.touchFrame(timeUsec: time)
            }
        case LIBINPUT_EVENT_POINTER_MOTION:
            guard let p = libinput_event_get_pointer_event(ev) else { return [] }
            return mapper.pointerRelative(dx: libinput_event_pointer_get_dx(p), dy: libinput_event_pointer_get_dy(p),
                                          timeUsec: libinput_event_pointer_get_time_usec(p))
        case LIBINPUT_EVENT_POINTER_MOTION_ABSOLUTE:
            guard !d.ignoresTouch, let p = libinput_event_get_pointer_event(ev) else { return [] }
            return mapper.pointerAbsolute(device: d.index, x: libinput_event_pointer_get_absolute_x_transformed(p, 1),
                                          y: libinput_event_pointer_get_absolute_y_transformed(p, 1),
                                          timeUsec: libinput_event_pointer_get_time_usec(p))
        case LIBINPUT_EVENT_POINTER_BUTTON:
            guard !d.ignoresTouch, let p = libinput_event_get_pointer_event(ev) else { return [] }
            return mapper.pointerButton(device: d.index, button: libinput_event_pointer_get_button(p),
                                        pressed: libinput_event_pointer_get_button_state(p) == LIBINPUT_BUTTON_STATE_PRESSED,
                                        timeUsec: libinput_event_pointer_get_time_usec(p))
        case LIBINPUT_EVENT_TABLET_TOOL_AXIS, LIBINPUT_EVENT_TABLET_TOOL_PROXIMITY, LIBINPUT_EVENT_TABLET_TOOL_TIP:
            guard !d.ignoresTouch, let t = libinput_event_get_tablet_tool_event(ev) else { return [] }
            let time = libinput_event_tablet_tool_get_time_usec(t)
            let x = libinput_event_tablet_tool_get_x_transformed(t, 1), y = libinput_event_tablet_tool_get_y_transformed(t, 1)
            if type == LIBINPUT_EVENT_TABLET_TOOL_TIP {
                return mapper.tabletTip(device: d.index, down: libinput_event_tablet_tool_get_tip_state(t) == LIBINPUT_TABLET_TOOL_TIP_DOWN,
                                        x: x, y: y, timeUsec: time)
            }
            if type == LIBINPUT_EVENT_TABLET_TOOL_PROXIMITY,
               libinput_event_tablet_tool_get_proximity_state(t) == LIBINPUT_TABLET_TOOL_PROXIMITY_STATE_OUT {
                return mapper.tabletProximityOut(device: d.index, timeUsec: time)
            }
            return mapper.tabletAxis(device: d.index, x: x, y: y, timeUsec: time)
        case LIBINPUT_EVENT_KEYBOARD_KEY:
            guard let k = libinput_event_get_keyboard_event(ev) else { return [] }
            return mapper.key(code: libinput_event_keyboard_get_key(k),
                              pressed: libinput_event_keyboard_get_key_state(k) == LIBINPUT_KEY_STATE_PRESSED,
                              timeUsec: libinput_event_keyboard_get_time_usec(k))
        default:
            return []
        }
    }

    private func deviceAdded(_ dev: OpaquePointer) -> [InputEvent] {
        var caps: InputCapabilities = []
        if libinput_device_has_capability(dev, LIBINPUT_DEVICE_CAP_TOUCH) != 0 { caps.insert(.touch) }
        if libinput_device_has_capability(dev, LIBINPUT_DEVICE_CAP_POINTER) != 0 { caps.insert(.pointer) }
        if libinput_device_has_capability(dev, LIBINPUT_DEVICE_CAP_KEYBOARD) != 0 { caps.insert(.keyboard) }
        if libinput_device_has_capability(dev, LIBINPUT_DEVICE_CAP_TABLET_TOOL) != 0 { caps.insert(.tabletTool) }
        let name = libinput_device_get_name(dev).map { String(cString: $0) } ?? "?"
        let sysname = libinput_device_get_sysname(dev).map { String(cString: $0) } ?? "?"
        var output_: String?
        if let u = libinput_device_get_udev_device(dev) {
            output_ = udevProperty(u, "WL_OUTPUT")
            udevRelease(u)
        }
        let positional = caps.contains(.touch) || caps.contains(.tabletTool) || caps.contains(.pointer)
        let ignores = positional && !touchDeviceMatchesOutput(deviceOutput: output_, wanted: options.mapToOutput)
        let info = InputDeviceInfo(name: name, sysname: sysname, capabilities: caps)
        var output = 0
        if options.outputs.count > 1, positional {
            output = touchDeviceOutput(name: name, sysname: sysname, wlOutput: output_, rules: options.deviceRules, outputs: options.outputs.map(\.name))
            mapper.deviceOutputs[nextIndex] = output
        }
        table[dev] = Device(index: nextIndex, info: info, ignoresTouch: ignores, output: output, positional: positional)
        nextIndex += 1
        var note = ""
        if ignores { note = "; touch ignored: mapped to output \(output_ ?? "?"), not \(options.mapToOutput ?? "?")" }
        else if options.outputs.count > 1, positional { note = "; touches go to output \(options.outputs[output].name)" }
        else if options.mapToOutput != nil, caps.contains(.touch), output == nil { note = "; no WL_OUTPUT in udev, used for every output" }
        logger.info("input device added: \(name) (\(sysname)) [\(caps.names.joined(separator: ", "))]\(note)",
                    metadata: ["input.device": "\(sysname)"])
        return [.deviceAdded(info)]
    }
}
