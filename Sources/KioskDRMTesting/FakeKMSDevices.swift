import KioskCore
import KioskDRM
import Logging

/// Several fake DRM devices on one seat, for tests of outputs on several devices: each
/// `FakeKMS` with its driver name and by-path name, plus render-only devices (no KMS). Its
/// `backend` opens them by path, lists them for `DRMDeviceChoice`, and delivers a test's hotplug
/// event for one device to every card that follows hotplug (each card keeps its own node's).
public final class FakeKMSDevices {
    /// One device of the seat.
    public struct Device {
        public let kms: FakeKMS?
        public let summary: DRMDeviceSummary
    }

    public private(set) var devices: [Device] = []
    /// Paths opened, in order.
    public private(set) var opened: [String] = []
    private var followers: [WeakFollower] = []

    private final class Follower {
        let handler: (String, String) -> Void
        init(_ h: @escaping (String, String) -> Void) { handler = h }
    }
    private struct WeakFollower { weak var follower: Follower? }

    public init() {}

    /// Adds `kms` (a device with KMS) driven by `driver`, with udev's by-path name `byPath`.
    public func add(_ kms: FakeKMS, driver: String, byPath: String? = nil) {
        let names = (try? kms.snapshot().connectors.map(\.name)) ?? []
        devices.append(Device(kms: kms, summary: DRMDeviceSummary(path: kms.path, driver: driver, byPath: byPath, connectors: names)))
    }

    /// Adds a render-only device (e.g. v3d): listed, never opened for an output.
    public func addRenderOnly(path: String, driver: String, byPath: String? = nil) {
        devices.append(Device(kms: nil, summary: DRMDeviceSummary(path: path, driver: driver, byPath: byPath, connectors: nil)))
    }

    /// The device at `path` goes away (unbound from its driver): no longer listed or opened.
    public func remove(_ path: String) {
        devices.removeAll { $0.summary.path == path }
    }

    /// The fake device at `path`.
    public func kms(_ path: String) -> FakeKMS? { devices.first { $0.summary.path == path }?.kms }

    /// A udev event for the device at `path`, to every card following hotplug.
    public func hotplug(_ path: String, _ action: String = "change") {
        for f in followers { f.follower?.handler(action, path) }
    }

    public var backend: KMSBackend {
        KMSBackend(
            open: { [unowned self] path, _ in
                guard let k = self.kms(path) else {
                    throw KioskError.display("cannot open \(path): no such DRM device (is the GPU driver loaded? see /dev/dri/)")
                }
                self.opened.append(path)
                return k
            },
            pickDevice: { [unowned self] in
                self.devices.first { d in (try? d.kms?.snapshot().connectors.contains { $0.status == .connected }) == true }?.summary.path
                    ?? self.devices.first(where: \.summary.hasKMS)?.summary.path
            },
            followHotplug: { [unowned self] _, handler in
                let f = Follower(handler)
                self.followers.append(WeakFollower(follower: f))
                return f
            },
            devices: { [unowned self] in self.devices.map(\.summary) })
    }
}
