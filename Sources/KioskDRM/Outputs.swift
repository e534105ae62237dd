#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskUdev

/// A DRM primary node found through udev.
public struct DRMDeviceInfo: Sendable, Equatable {
    /// Device node, e.g. "/dev/dri/card0".
    public var path: String
    /// udev's ID_SEAT (seat0 when unset).
    public var seat: String
    /// The firmware's boot display (PCI boot_vga = 1).
    public var bootVGA: Bool
    /// udev's `/dev/dri/by-path/…-card` link to it (stable across boots); nil: none.
    public var byPath: String?
}

/// Lists DRM primary nodes (card*) on `seat`, boot VGA first (udev enumeration); empty when
/// udev cannot be read.
public func enumerateDRMDevices(seat: String = "seat0") -> [DRMDeviceInfo] {
    guard let udev = try? Udev(), let found = try? udev.devices(subsystem: "drm", sysname: "card[0-9]*") else { return [] }
    let out = found.compactMap { d -> DRMDeviceInfo? in
        guard let node = d.devnode, d.seat == seat else { return nil }
        return DRMDeviceInfo(path: node, seat: d.seat, bootVGA: d.bootVGA,
                             byPath: d.devlinks.first { $0.hasPrefix("/dev/dri/by-path/") })
    }
    return out.sorted { a, b in a.bootVGA != b.bootVGA ? a.bootVGA : a.path < b.path }
}

/// The devices and their outputs, as `kioskd --list-outputs` prints them, and the device used
/// when none is configured.
public enum DRMOutputs {
    /// The first seat0 device with a connected connector, else the first with connectors (a
    /// render-only device is not picked while another can show), else the first device.
    static func pickDevice() -> String? {
        let devices = enumerateDRMDevices()
        var withConnectors: String?
        for d in devices {
            guard let dev = try? DRMDeviceHandle(path: d.path, api: .legacy),
                  let res = try? DRMResources.snapshot(fd: dev.fd, device: d.path), !res.connectors.isEmpty else { continue }
            if res.connectors.contains(where: { $0.status == .connected }) { return d.path }
            withConnectors = withConnectors ?? d.path
        }
        return withConnectors ?? devices.first?.path
    }

    /// A human-readable list of every seat0 device (or only `device`: a path, by-path name or
    /// driver): its node, driver and by-path name, then its connectors (status, size, modes);
    /// the output driven by a CRTC is marked "in use" and its current mode "*", preferred modes
    /// "+". Render-only devices are listed as such.
    public static func list(device: String?) throws -> String {
        var devices = DRMDeviceChoice.kernelDevices()
        if let device {
            let path = try DRMDeviceChoice.resolve(device: device, connector: nil, among: devices) ?? device
            devices = devices.filter { $0.path == path }
            if devices.isEmpty { devices = [DRMDeviceSummary(path: path, driver: "?", connectors: [])] }
        }
        guard !devices.isEmpty else { throw KioskError.notFound("no DRM devices found on seat0 (no /dev/dri/card*)") }
        var out = ""
        for d in devices {
            let named = "\(d.path): driver \(d.driver)\(d.byPath.map { ", \($0)" } ?? "")"
            guard d.hasKMS || device != nil else {
                out += "\(named): render-only (no connectors), not used for outputs\n"
                continue
            }
            let dev = try DRMDeviceHandle(path: d.path, api: .auto)
            let res = try DRMResources.snapshot(fd: dev.fd, device: d.path)
            out += "\(named) (\(dev.atomic ? "atomic" : "legacy") modesetting, dumb buffers)\n"
            out += describe(res)
        }
        return out
    }

    /// Text for a resources snapshot (pure; used by `list`).
    public static func describe(_ res: DRMResources) -> String {
        var out = ""
        for c in res.connectors {
            let crtc = res.encoders.first(where: { $0.id == c.encoderID && $0.crtcID != 0 })
                .flatMap { e in res.crtcs.first(where: { $0.id == e.crtcID && $0.bufferID != 0 }) }
            let size = c.widthMM > 0 ? " \(c.widthMM)x\(c.heightMM) mm" : ""
            out += "  \(c.name) \(c.status.rawValue)\(size)\(crtc.map { " [in use: CRTC \($0.id)]" } ?? "")\n"
            for m in c.modes {
                let current = crtc?.mode.map { $0.width == m.width && $0.height == m.height && $0.refresh == m.refresh } ?? false
                out += "    \(current ? "*" : " ")\(m.isPreferred ? "+" : " ") \(m)\n"
            }
        }
        return out
    }
}

extension DRMDisplay {
    /// `DRMOutputs.list(device:)`: the connectors and modes of `device` (every seat0 device when nil).
    public static func listOutputs(device: String?) throws -> String {
        try DRMOutputs.list(device: device)
    }

    /// `DRMOutputs.describe(_:)`.
    public static func describe(_ res: DRMResources) -> String {
        DRMOutputs.describe(res)
    }
}
