#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// Where sysfs is: "/" normally; `KIOSK_SYSFS_ROOT` (a sysfs-shaped test tree) when set. Used for
/// the backlight class and IIO sensors.
public enum SysfsRoot {
    public static let environmentVariable = "KIOSK_SYSFS_ROOT"

    /// The root to prefix to "/sys/…" paths ("" for the real sysfs).
    public static func current(environment value: String? = getenv(SysfsRoot.environmentVariable).map { String(cString: $0) }) -> String {
        guard var v = value, !v.isEmpty else { return "" }
        while v.count > 1 && v.hasSuffix("/") { v.removeLast() }
        return v == "/" ? "" : v
    }

    /// Reads a small sysfs attribute, trimmed. Errors name the file, the call and errno.
    public static func read(_ path: String) throws -> String {
        let file = try Descriptor.open(path, O_RDONLY)
        var buf = [UInt8](repeating: 0, count: 4096)
        let n = try buf.withUnsafeMutableBytes { try file.read(into: $0.baseAddress!, count: $0.count, path: path) }
        var s = String(decoding: buf[0..<n], as: UTF8.self)
        while let l = s.last, l == "\n" || l == " " || l == "\t" || l == "\r" { s.removeLast() }
        return s
    }

    /// Reads an integer attribute; a non-integer is an error naming the file and what it held.
    public static func readInt(_ path: String) throws -> Int {
        let s = try read(path)
        guard let v = Int(s) else { throw KioskError(.system, "\(path): \"\(s)\" is not an integer") }
        return v
    }

    /// The names in a directory (no "." and ".."), sorted; [] when it does not exist.
    public static func list(_ path: String) -> [String] {
        guard let d = opendir(path) else { return [] }
        defer { closedir(d) }
        var names: [String] = []
        while let e = readdir(d) {
            let name = withUnsafePointer(to: e.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}

/// The kernel's backlight types, in the order the kernel documentation (sysfs-class-backlight)
/// and systemd-backlight prefer them: firmware (ACPI) over platform over raw register access.
public enum BacklightType: String, Sendable, Equatable, Comparable {
    case firmware, platform, raw

    var rank: Int { self == .firmware ? 0 : self == .platform ? 1 : 2 }
    public static func < (a: BacklightType, b: BacklightType) -> Bool { a.rank < b.rank }
}

/// One `/sys/class/backlight/NAME` device.
public struct BacklightDevice: Sendable, Equatable {
    public let name: String
    /// The device folder (under the sysfs root).
    public let path: String
    public let type: BacklightType
    public let maxBrightness: Int

    public var brightnessPath: String { path + "/brightness" }
    public var actualBrightnessPath: String { path + "/actual_brightness" }

    /// Reads one device folder. Errors name the attribute file.
    public init(path: String) throws {
        self.path = path
        name = String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...])
        let typeText = (try? SysfsRoot.read(path + "/type")) ?? "raw"
        type = BacklightType(rawValue: typeText) ?? .raw
        maxBrightness = try SysfsRoot.readInt(path + "/max_brightness")
        guard maxBrightness >= 1 else {
            throw KioskError(.system, "\(path)/max_brightness is \(maxBrightness): the device cannot be dimmed")
        }
    }

    /// Every usable device under `root`/sys/class/backlight, by name. Unreadable ones are skipped.
    public static func all(root: String = SysfsRoot.current()) -> [BacklightDevice] {
        let folder = root + "/sys/class/backlight"
        return SysfsRoot.list(folder).compactMap { try? BacklightDevice(path: folder + "/" + $0) }
    }

    /// The device a `[display] backlight` choice names; nil for `.none`. `auto` takes the best
    /// type (firmware > platform > raw), then the first name; systemd-backlight additionally
    /// matches raw devices to the connector's PCI parent, which a kiosk with one panel does not need.
    public static func select(_ choice: BacklightChoice, root: String = SysfsRoot.current()) throws -> BacklightDevice? {
        let folder = root + "/sys/class/backlight"
        switch choice {
        case .none:
            return nil
        case .named(let name):
            var st = stat()
            guard stat(folder + "/" + name, &st) == 0 else {
                let names = SysfsRoot.list(folder)
                throw KioskError.notFound("backlight \"\(name)\" not found in \(folder)"
                    + (names.isEmpty ? " (no backlight devices)" : " (available: \(names.joined(separator: ", ")))"))
            }
            return try BacklightDevice(path: folder + "/" + name)
        case .auto:
            let devices = all(root: root)
            guard let best = devices.min(by: { ($0.type, $0.name) < ($1.type, $1.name) }) else {
                throw KioskError.notFound("no backlight device in \(folder) (set [display] backlight = \"none\" on panels without one)")
            }
            return best
        }
    }
}

/// Percent ↔ raw backlight values.
///
/// The rule: raw = percent × max / 100, rounded to nearest; but a positive percentage never
/// gives 0, because on many panels (most PWM and raw backlights) 0 is black: 1 % on a panel with
/// `max_brightness` 7 is 1, not 0. 0 % is 0 only when the caller allows "off" (a schedule's
/// `off`, an explicit request); otherwise it is 1, the dimmest lit level. 100 % is always max.
public enum BacklightLevel {
    public static func raw(percent: Double, max: Int, allowOff: Bool = false) -> Int {
        precondition(max >= 1)
        let p = Swift.min(Swift.max(percent.isNaN ? 0 : percent, 0), 100)
        if p == 0 { return allowOff ? 0 : 1 }
        let r = Int((p * Double(max) / 100).rounded(.toNearestOrAwayFromZero))
        return Swift.min(Swift.max(r, 1), max)
    }

    /// The percentage a raw value stands for (for `status`), to one decimal.
    public static func percent(raw: Int, max: Int) -> Double {
        guard max > 0 else { return 0 }
        return (Double(Swift.min(Swift.max(raw, 0), max)) * 1000 / Double(max)).rounded() / 10
    }
}

/// Something that sets a backlight's raw value: sysfs directly, or logind on the session's behalf.
public protocol BacklightWriter: AnyObject {
    /// "sysfs" or "logind", for the log and `status`.
    var method: String { get }
    func write(raw: Int) throws
}

/// Writes `/sys/class/backlight/NAME/brightness` itself: needs root, or the udev rule that gives
/// group `video` write access (and kioskd in that group).
public final class SysfsBacklightWriter: BacklightWriter {
    public let device: BacklightDevice
    public var method: String { "sysfs" }

    public init(device: BacklightDevice) { self.device = device }

    public func write(raw: Int) throws {
        let path = device.brightnessPath
        let value = Array("\(raw)\n".utf8)
        let file = try explained("open", path) { try Descriptor.open(path, O_WRONLY | O_TRUNC) }
        try explained("write", path) { try value.withUnsafeBytes { try file.write(all: $0, path: path) } }
    }

    /// `body`, its system error replaced by `error(call, …)`, which says how to fix a permission problem.
    private func explained<T: ~Copyable>(_ call: String, _ path: String, _ body: () throws -> T) throws -> T {
        do { return try body() } catch let e as KioskError { throw Self.error(call, path: path, errno: e.errno) }
    }

    /// The error for a failed open/write, with the fix when it is a permission problem.
    static func error(_ call: String, path: String, errno e: Int32) -> KioskError {
        let base = Posix.error(call, path: path, errno: e)
        switch e {
        case EACCES, EPERM:
            return KioskError(.system, base.message + ": kioskd may not write the backlight; install the udev rule"
                + " (scripts/install.sh puts 90-kioskd-backlight.rules in /etc/udev/rules.d: group video may write"
                + " brightness) and add the kioskd user to group video, or run kioskd in a logind session", errno: e)
        case EROFS:
            return KioskError(.system, base.message + ": the file is on a read-only mount; sysfs must be mounted"
                + " read-write (a container's read-only /sys cannot change the backlight; use the logind session instead)", errno: e)
        default:
            return base
        }
    }
}

/// A chosen backlight device and the way kioskd writes it.
public final class Backlight {
    public let device: BacklightDevice
    public let writer: any BacklightWriter
    /// The last raw value written (nil before the first write).
    public private(set) var lastWritten: Int?

    public init(device: BacklightDevice, writer: any BacklightWriter) {
        self.device = device
        self.writer = writer
    }

    /// "intel_backlight (firmware, max 120000) via sysfs", for the log and `status`.
    public var summary: String {
        "\(device.name) (\(device.type.rawValue), max \(device.maxBrightness)) via \(writer.method)"
    }

    /// Sets a raw value (clamped to 0…max).
    public func set(raw: Int) throws {
        let v = min(max(raw, 0), device.maxBrightness)
        try writer.write(raw: v)
        lastWritten = v
    }

    /// Sets a percentage (`BacklightLevel` rounding).
    public func set(percent: Double, allowOff: Bool = false) throws {
        try set(raw: BacklightLevel.raw(percent: percent, max: device.maxBrightness, allowOff: allowOff))
    }

    /// What the hardware reports now (`actual_brightness`, falling back to `brightness`).
    public func actualRaw() throws -> Int {
        if let v = try? SysfsRoot.readInt(device.actualBrightnessPath) { return v }
        return try SysfsRoot.readInt(device.brightnessPath)
    }
}

/// Drives a `BrightnessFade` on a `Scheduler`: writes each new raw value as the fade reaches it,
/// never more often than `minimumStepNanos`, and the end value exactly at the end. A new fade
/// replaces the running one and starts from the value last written.
public final class BacklightFader {
    private let scheduler: any Scheduler
    private let apply: (Int) throws -> Void
    private let onError: (any Error) -> Void
    private let minimumStepNanos: Int64
    private var timer: TimerID?
    private var fade: BrightnessFade?
    private var startedAt: Int64 = 0
    /// The raw value last applied.
    public private(set) var current: Int

    public init(scheduler: any Scheduler, initial: Int, minimumStepNanos: Int64 = 16_666_667,
                apply: @escaping (Int) throws -> Void, onError: @escaping (any Error) -> Void = { _ in }) {
        self.scheduler = scheduler
        self.current = initial
        self.minimumStepNanos = max(1, minimumStepNanos)
        self.apply = apply
        self.onError = onError
    }

    public var isFading: Bool { fade != nil }

    /// Fades from the current value to `target` over `durationNanos` (0: at once).
    public func fade(to target: Int, durationNanos: Int64) {
        if let t = timer { scheduler.cancel(t); timer = nil }
        let f = BrightnessFade(from: current, to: target, durationNanos: durationNanos)
        fade = f
        startedAt = scheduler.now(.monotonic)
        step()
    }

    /// Stops a running fade where it is.
    public func stop() {
        if let t = timer { scheduler.cancel(t); timer = nil }
        fade = nil
    }

    private func step() {
        guard let f = fade else { return }
        let elapsed = scheduler.now(.monotonic) - startedAt
        let v = f.value(atElapsed: elapsed)
        if v != current {
            do { try apply(v); current = v } catch {
                fade = nil
                onError(error)
                return
            }
        }
        guard let next = f.nextChange(afterElapsed: elapsed) else {
            fade = nil
            return
        }
        let at = startedAt + max(next, elapsed + minimumStepNanos)
        timer = try? scheduler.schedule(at: min(at, startedAt + f.durationNanos), clock: .monotonic) { [weak self] _ in
            self?.timer = nil
            self?.step()
        }
    }
}
