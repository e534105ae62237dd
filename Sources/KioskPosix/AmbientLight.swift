#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// An ambient light sensor through the kernel's IIO subsystem
/// (`/sys/bus/iio/devices/iio:deviceN`). Lux is `in_illuminance_input` when the driver gives a
/// processed value, else `(in_illuminance_raw + in_illuminance_offset) × in_illuminance_scale`
/// (offset 0 and scale 1 when absent). Some drivers number the channel (`in_illuminance0_raw`):
/// both spellings are read.
public struct AmbientLightSensor: Sendable, Equatable {
    /// The device folder.
    public let path: String
    /// The device's `name` attribute ("" when absent).
    public let name: String
    /// The channel prefix in use: "in_illuminance" or "in_illuminance0".
    let channel: String

    /// Reads a device folder; nil when it has no illuminance channel.
    public init?(path: String) {
        let files = Set(SysfsRoot.list(path))
        guard let channel = ["in_illuminance", "in_illuminance0"].first(where: {
            files.contains($0 + "_input") || files.contains($0 + "_raw")
        }) else { return nil }
        self.path = path
        self.channel = channel
        self.name = (try? SysfsRoot.read(path + "/name")) ?? ""
    }

    /// The sensors under `root`/sys/bus/iio/devices, by folder name.
    public static func all(root: String = SysfsRoot.current()) -> [AmbientLightSensor] {
        let folder = root + "/sys/bus/iio/devices"
        return SysfsRoot.list(folder).compactMap { AmbientLightSensor(path: folder + "/" + $0) }
    }

    /// The first sensor, or the one whose `name` or folder is `named`; errors list what exists.
    public static func find(named: String? = nil, root: String = SysfsRoot.current()) throws -> AmbientLightSensor {
        let sensors = all(root: root)
        let folder = root + "/sys/bus/iio/devices"
        if let named {
            if let s = sensors.first(where: { $0.name == named || $0.path.hasSuffix("/" + named) }) { return s }
            throw KioskError.notFound("ambient light sensor \"\(named)\" not found in \(folder)"
                + (sensors.isEmpty ? " (no IIO illuminance sensors)" : " (available: \(sensors.map { $0.name.isEmpty ? $0.path : $0.name }.joined(separator: ", ")))"))
        }
        guard let s = sensors.first else {
            throw KioskError.notFound("no IIO illuminance sensor in \(folder)")
        }
        return s
    }

    /// Reads the illuminance now. Errors name the attribute file.
    public func readLux() throws -> Double {
        let input = path + "/" + channel + "_input"
        if access(input, F_OK) == 0 { return try Self.number(input) }
        let raw = try Self.number(path + "/" + channel + "_raw")
        let offset = try optionalNumber(channel + "_offset") ?? 0
        let scale = try optionalNumber(channel + "_scale") ?? 1
        return max(0, (raw + offset) * scale)
    }

    private func optionalNumber(_ attribute: String) throws -> Double? {
        // Per-channel first, then the shared "in_illuminance_scale" a numbered channel may use.
        for name in [attribute, attribute.replacingFirst("in_illuminance0_", with: "in_illuminance_")] {
            let p = path + "/" + name
            if access(p, F_OK) == 0 { return try Self.number(p) }
        }
        return nil
    }

    static func number(_ path: String) throws -> Double {
        let s = try SysfsRoot.read(path)
        guard let v = Double(s), v.isFinite else { throw KioskError(.system, "\(path): \"\(s)\" is not a number") }
        return v
    }
}

extension String {
    fileprivate func replacingFirst(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}

/// Reads an ambient light sensor every `intervalNanos` on a `Scheduler` (IIO illuminance
/// attributes have no change notification) and calls `onLevel` when the `AmbientFollower`
/// moves the brightness (outside its hysteresis band). A read error goes to `onError` once per
/// run of failures; reading goes on, so a sensor that comes back is followed again.
public final class AmbientLightMonitor {
    private let scheduler: any Scheduler
    private let read: () throws -> Double
    private var follower: AmbientFollower
    private let intervalNanos: Int64
    private let onLevel: (Double) -> Void
    private let onError: (any Error) -> Void
    private var timer: TimerID?
    private var failing = false
    /// The last lux read (nil before the first good reading).
    public private(set) var lastLux: Double?

    public init(scheduler: any Scheduler, follower: AmbientFollower, intervalNanos: Int64 = 2_000_000_000,
                read: @escaping () throws -> Double, onLevel: @escaping (Double) -> Void,
                onError: @escaping (any Error) -> Void = { _ in }) {
        self.scheduler = scheduler
        self.follower = follower
        self.intervalNanos = max(10_000_000, intervalNanos)
        self.read = read
        self.onLevel = onLevel
        self.onError = onError
    }

    /// Reads at once, then every interval.
    public func start() {
        poll()
    }

    public func stop() {
        if let t = timer { scheduler.cancel(t); timer = nil }
    }

    private func poll() {
        do {
            let lux = try read()
            failing = false
            lastLux = lux
            if let p = follower.update(lux: lux) { onLevel(p) }
        } catch {
            if !failing { onError(error) }
            failing = true
        }
        timer = try? scheduler.schedule(after: intervalNanos) { [weak self] _ in
            self?.timer = nil
            self?.poll()
        }
    }
}
