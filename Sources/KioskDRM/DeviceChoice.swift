#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore
import KioskPosix

/// A DRM device as an output's `device` is matched against it: its node, driver, udev's
/// by-path name and its connectors.
public struct DRMDeviceSummary: Sendable, Equatable {
    /// The node, e.g. "/dev/dri/card1" (its number follows the drivers' probe order).
    public var path: String
    /// The driver's name (`drmGetVersion`): "vc4", "drm-rp1-dsi", "virtio_gpu", "bochs-drm".
    public var driver: String
    /// udev's stable name, e.g. "/dev/dri/by-path/platform-1f00130000.dsi-card"; nil: none.
    public var byPath: String?
    /// Its connectors' names; nil: no KMS (a render-only device such as v3d, or no resources).
    public var connectors: [String]?

    public init(path: String, driver: String, byPath: String? = nil, connectors: [String]?) {
        self.path = path; self.driver = driver; self.byPath = byPath; self.connectors = connectors
    }

    /// Whether it can show anything: KMS with at least one connector.
    public var hasKMS: Bool { !(connectors ?? []).isEmpty }

    /// "/dev/dri/card1 (virtio_gpu, /dev/dri/by-path/pci-0000:00:01.0-card)".
    public var label: String {
        "\(path) (\(driver)\(byPath.map { ", \($0)" } ?? "")\(hasKMS ? "" : ", render-only"))"
    }

    func has(connector name: String) -> Bool {
        (connectors ?? []).contains { $0.lowercased() == name.lowercased() }
    }
}

/// Finds the device an output is driven on from what the config says: a path (`/dev/dri/card1`
/// or a `/dev/dri/by-path/…` name), a driver name (`"vc4"`), or nothing but a connector, searched
/// over every device with KMS. Render-only devices are never chosen. A name that fits two
/// devices is refused naming both: no config needs a card number, and none is guessed.
public enum DRMDeviceChoice {
    /// Whether `device` names a driver (no `/` in it) rather than a path.
    public static func isDriverName(_ device: String) -> Bool { !device.contains("/") }

    /// The node to open for an output naming `device` (nil: not said) and `connector` (nil: the
    /// first connected one) among `devices`. Nil when nothing narrows the choice: the default
    /// device (udev's seat0 pick) is used. A path no device has is returned as written (the
    /// device may appear later). Throws `DRMDeviceChoice.Failure` when no device or several fit.
    public static func resolve(device: String?, connector: String?, among devices: [DRMDeviceSummary]) throws -> String? {
        let kms = devices.filter(\.hasKMS)
        guard let device else {
            guard let connector else { return nil }
            let having = kms.filter { $0.has(connector: connector) }
            if having.count > 1 {
                throw Failure("connector \"\(connector)\" is on \(having.count) DRM devices: \(list(having)); "
                              + "name the device of this output (its driver, or its /dev/dri/by-path name)")
            }
            return having.first?.path
        }
        if !isDriverName(device) {
            let real = realPath(device)
            if let d = devices.first(where: { $0.path == device || $0.byPath == device || (real != nil && $0.path == real) }) {
                guard d.hasKMS else {
                    throw Failure("\(device) is \(d.label): it has no connectors (a render-only device); devices with outputs: \(list(kms))")
                }
                return d.path
            }
            return device
        }
        let wanted = canonical(device)
        let ofDriver = devices.filter { canonical($0.driver) == wanted }
        let candidates = ofDriver.filter(\.hasKMS)
        guard !candidates.isEmpty else {
            let why = ofDriver.isEmpty ? "no DRM device has driver \"\(device)\"" : "driver \"\(device)\" has no device with connectors (render-only: \(list(ofDriver)))"
            throw Failure("\(why); devices: \(devices.isEmpty ? "none on seat0" : list(devices)) (kioskd --list-outputs shows them)")
        }
        if candidates.count == 1 { return candidates[0].path }
        guard let connector else {
            throw Failure("driver \"\(device)\" names \(candidates.count) DRM devices: \(list(candidates)); "
                          + "name this output's connector, or the device by its /dev/dri/by-path name")
        }
        let having = candidates.filter { $0.has(connector: connector) }
        guard having.count == 1 else {
            throw Failure("driver \"\(device)\" names \(candidates.count) DRM devices and connector \"\(connector)\" is on "
                          + "\(having.isEmpty ? "none" : "\(having.count)") of them: \(list(having.isEmpty ? candidates : having)); "
                          + "name the device by its /dev/dri/by-path name")
        }
        return having[0].path
    }

    /// Why no device, or more than one, fits an output.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
        init(_ d: String) { description = d }
    }

    /// Driver names compared as the kernel's are written either way ("bochs-drm", "virtio_gpu").
    static func canonical(_ s: String) -> String { s.lowercased().replacing("_", with: "-") }

    static func list(_ ds: [DRMDeviceSummary]) -> String { ds.map(\.label).joined(separator: ", ") }

    /// `realpath(3)` of `path`; nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }

    /// Every seat0 DRM primary node (udev), with its driver and connectors read from the kernel.
    /// A node that cannot be opened is left out.
    public static func kernelDevices() -> [DRMDeviceSummary] {
        enumerateDRMDevices().compactMap { info in
            let fd = open(info.path, O_RDWR | O_CLOEXEC | O_NONBLOCK)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            return DRMDeviceSummary(path: info.path, driver: driverName(fd: fd), byPath: info.byPath,
                                    connectors: kmsConnectors(fd: fd))
        }
    }

    /// The driver's name (`drmGetVersion`), "unknown" when the kernel does not say.
    static func driverName(fd: Int32) -> String {
        guard let v = drmGetVersion(fd) else { return "unknown" }
        defer { drmFreeVersion(v) }
        guard let name = v.pointee.name, v.pointee.name_len > 0 else { return "unknown" }
        return String(cString: name)
    }

    /// The connectors' names as last probed (`drmModeGetConnectorCurrent`); nil without KMS.
    static func kmsConnectors(fd: Int32) -> [String]? {
        guard let names = try? DRMResources.currentConnectors(fd: fd, device: "").map(\.name), !names.isEmpty else { return nil }
        return names
    }
}
