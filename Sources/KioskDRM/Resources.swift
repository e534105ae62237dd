#if canImport(Glibc)
import Glibc
#endif
import CDRM
import CKioskDRMFormats
import KioskCore
import KioskPosix

/// A display mode as Swift values (a copy of libdrm's `drmModeModeInfo`).
public struct DRMMode: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var width: Int
    public var height: Int
    /// Vertical refresh in whole Hz as the kernel reports it (`vrefresh`).
    public var refresh: Int
    /// Refresh computed from the pixel clock and totals, in mHz (0 when the totals are unknown).
    public var refreshMilliHz: Int
    public var isPreferred: Bool
    /// The kernel's mode record, kept for mode setting; nil for modes built in tests.
    var raw: drmModeModeInfo?

    public init(name: String? = nil, width: Int, height: Int, refresh: Int, refreshMilliHz: Int = 0, isPreferred: Bool = false) {
        self.name = name ?? "\(width)x\(height)"
        self.width = width
        self.height = height
        self.refresh = refresh
        self.refreshMilliHz = refreshMilliHz == 0 ? refresh * 1000 : refreshMilliHz
        self.isPreferred = isPreferred
        self.raw = nil
    }

    init(_ m: drmModeModeInfo) {
        var info = m
        let name = withUnsafeBytes(of: &info.name) { raw -> String in
            let bytes = raw.prefix(while: { $0 != 0 })
            return String(decoding: bytes, as: UTF8.self)
        }
        let total = Int(m.htotal) * Int(m.vtotal)
        var mhz = total > 0 ? Int((Int64(m.clock) * 1_000_000 + Int64(total / 2)) / Int64(total)) : Int(m.vrefresh) * 1000
        if m.flags & UInt32(DRM_MODE_FLAG_INTERLACE) != 0 { mhz *= 2 }
        if m.flags & UInt32(DRM_MODE_FLAG_DBLSCAN) != 0 { mhz /= 2 }
        self.init(name: name, width: Int(m.hdisplay), height: Int(m.vdisplay), refresh: Int(m.vrefresh),
                  refreshMilliHz: mhz, isPreferred: m.type & UInt32(DRM_MODE_TYPE_PREFERRED) != 0)
        self.raw = m
    }

    public var size: Size { Size(width: width, height: height) }
    /// "1280x800@75".
    public var description: String { "\(width)x\(height)@\(refresh)" }

    public static func == (a: DRMMode, b: DRMMode) -> Bool {
        a.name == b.name && a.width == b.width && a.height == b.height && a.refresh == b.refresh
            && a.refreshMilliHz == b.refreshMilliHz && a.isPreferred == b.isPreferred
    }
}

/// A connector (a physical or virtual output) as Swift values.
public struct DRMConnector: Sendable, Equatable {
    public enum Status: String, Sendable, Equatable { case connected, disconnected, unknown }
    public var id: UInt32
    /// Kernel-style name, e.g. "HDMI-A-1", "Virtual-1".
    public var name: String
    public var status: Status
    public var modes: [DRMMode]
    /// The encoder currently driving it (0: none).
    public var encoderID: UInt32
    public var encoderIDs: [UInt32]
    /// Physical size in millimetres (0 when unknown).
    public var widthMM: Int
    public var heightMM: Int

    public init(id: UInt32, name: String, status: Status, modes: [DRMMode], encoderID: UInt32 = 0,
                encoderIDs: [UInt32] = [], widthMM: Int = 0, heightMM: Int = 0) {
        self.id = id; self.name = name; self.status = status; self.modes = modes
        self.encoderID = encoderID; self.encoderIDs = encoderIDs; self.widthMM = widthMM; self.heightMM = heightMM
    }
}

/// An encoder as Swift values.
public struct DRMEncoder: Sendable, Equatable {
    public var id: UInt32
    /// The CRTC it is bound to (0: none).
    public var crtcID: UInt32
    /// Bit i set: CRTC number i (index in the resources' CRTC list) can drive it.
    public var possibleCRTCs: UInt32
    public init(id: UInt32, crtcID: UInt32, possibleCRTCs: UInt32) {
        self.id = id; self.crtcID = crtcID; self.possibleCRTCs = possibleCRTCs
    }
}

/// A CRTC (scan-out engine) as Swift values.
public struct DRMCrtc: Sendable, Equatable {
    public var id: UInt32
    /// Position in the resources' CRTC list (the bit used by `possibleCRTCs`).
    public var index: Int
    /// Framebuffer being scanned out (0: none).
    public var bufferID: UInt32
    public var mode: DRMMode?
    public var x: Int
    public var y: Int
    public init(id: UInt32, index: Int, bufferID: UInt32 = 0, mode: DRMMode? = nil, x: Int = 0, y: Int = 0) {
        self.id = id; self.index = index; self.bufferID = bufferID; self.mode = mode; self.x = x; self.y = y
    }
}

/// A plane as Swift values.
public struct DRMPlane: Sendable, Equatable {
    public enum Kind: Int, Sendable, Equatable { case overlay = 0, primary = 1, cursor = 2 }
    public var id: UInt32
    public var kind: Kind
    public var possibleCRTCs: UInt32
    public var crtcID: UInt32
    public var formats: [UInt32]
    public init(id: UInt32, kind: Kind, possibleCRTCs: UInt32, crtcID: UInt32 = 0, formats: [UInt32]) {
        self.id = id; self.kind = kind; self.possibleCRTCs = possibleCRTCs; self.crtcID = crtcID; self.formats = formats
    }
}

/// Everything modetest would print: a snapshot of a device's KMS objects as Swift values.
public struct DRMResources: Sendable, Equatable {
    public var connectors: [DRMConnector]
    public var encoders: [DRMEncoder]
    public var crtcs: [DRMCrtc]
    public var planes: [DRMPlane]
    public init(connectors: [DRMConnector], encoders: [DRMEncoder], crtcs: [DRMCrtc], planes: [DRMPlane]) {
        self.connectors = connectors; self.encoders = encoders; self.crtcs = crtcs; self.planes = planes
    }

    /// Reads connectors, encoders, CRTCs and planes; wraps `drmModeGetResources`, `drmModeGetConnector`,
    /// `drmModeGetEncoder`, `drmModeGetCrtc`, `drmModeGetPlaneResources`/`drmModeGetPlane`
    /// (each C record is copied and freed at once). `device` names the node in errors.
    public static func snapshot(fd: Int32, device: String) throws -> DRMResources {
        guard let res = drmModeGetResources(fd) else {
            let e = errno
            throw KioskError.display("\(Posix.error("drmModeGetResources", path: device, errno: e).message) — not a KMS device?", errno: e)
        }
        let connectorIDs = Array(UnsafeBufferPointer(start: res.pointee.connectors, count: Int(res.pointee.count_connectors)))
        let encoderIDs = Array(UnsafeBufferPointer(start: res.pointee.encoders, count: Int(res.pointee.count_encoders)))
        let crtcIDs = Array(UnsafeBufferPointer(start: res.pointee.crtcs, count: Int(res.pointee.count_crtcs)))
        drmModeFreeResources(res)

        let connectors = connectorIDs.compactMap { readConnector(fd: fd, id: $0, probe: true) }
        var encoders: [DRMEncoder] = []
        for id in encoderIDs {
            guard let e = drmModeGetEncoder(fd, id) else { continue }
            encoders.append(DRMEncoder(id: e.pointee.encoder_id, crtcID: e.pointee.crtc_id, possibleCRTCs: e.pointee.possible_crtcs))
            drmModeFreeEncoder(e)
        }
        var crtcs: [DRMCrtc] = []
        for (i, id) in crtcIDs.enumerated() {
            guard let c = drmModeGetCrtc(fd, id) else { continue }
            let p = c.pointee
            crtcs.append(DRMCrtc(id: p.crtc_id, index: i, bufferID: p.buffer_id, mode: p.mode_valid != 0 ? DRMMode(p.mode) : nil,
                                 x: Int(p.x), y: Int(p.y)))
            drmModeFreeCrtc(c)
        }
        var planes: [DRMPlane] = []
        if let pr = drmModeGetPlaneResources(fd) {
            let ids = Array(UnsafeBufferPointer(start: pr.pointee.planes, count: Int(pr.pointee.count_planes)))
            drmModeFreePlaneResources(pr)
            for id in ids {
                guard let pl = drmModeGetPlane(fd, id) else { continue }
                let p = pl.pointee
                let formats = Array(UnsafeBufferPointer(start: p.formats, count: Int(p.count_formats)))
                let kindValue = DRMProperties.read(fd: fd, object: id, type: DRMObjectType.plane)["type"]?.value ?? 0
                planes.append(DRMPlane(id: id, kind: DRMPlane.Kind(rawValue: Int(kindValue)) ?? .overlay,
                                       possibleCRTCs: p.possible_crtcs, crtcID: p.crtc_id, formats: formats))
                drmModeFreePlane(pl)
            }
        }
        return DRMResources(connectors: connectors, encoders: encoders, crtcs: crtcs, planes: planes)
    }
}

extension DRMResources {
    /// The connectors as the kernel last probed them, without probing again: cheap enough to
    /// poll while an output waits for a display (a connector forced on through sysfs, or by a
    /// driver that does not poll its connectors, changes without a udev event). Wraps
    /// `drmModeGetResources` and `drmModeGetConnectorCurrent`; `device` names the node in errors.
    public static func currentConnectors(fd: Int32, device: String) throws -> [DRMConnector] {
        guard let res = drmModeGetResources(fd) else {
            let e = errno
            throw KioskError.display("\(Posix.error("drmModeGetResources", path: device, errno: e).message) — not a KMS device?", errno: e)
        }
        let ids = Array(UnsafeBufferPointer(start: res.pointee.connectors, count: Int(res.pointee.count_connectors)))
        drmModeFreeResources(res)
        return ids.compactMap { readConnector(fd: fd, id: $0, probe: false) }
    }

    /// Connector `id` as Swift values; `probe`: `drmModeGetConnector` (the kernel probes it
    /// again when we are DRM master), else `drmModeGetConnectorCurrent`. Nil when it is gone.
    static func readConnector(fd: Int32, id: UInt32, probe: Bool) -> DRMConnector? {
        guard let c = probe ? drmModeGetConnector(fd, id) : drmModeGetConnectorCurrent(fd, id) else { return nil }
        defer { drmModeFreeConnector(c) }
        let p = c.pointee
        let typeName = drmModeGetConnectorTypeName(p.connector_type).map { String(cString: $0) } ?? "Unknown\(p.connector_type)"
        let status: DRMConnector.Status
        switch p.connection {
        case DRM_MODE_CONNECTED: status = .connected
        case DRM_MODE_DISCONNECTED: status = .disconnected
        default: status = .unknown
        }
        let modes = (0..<Int(p.count_modes)).map { DRMMode(p.modes[$0]) }
        let encs = Array(UnsafeBufferPointer(start: p.encoders, count: Int(p.count_encoders)))
        return DRMConnector(id: p.connector_id, name: "\(typeName)-\(p.connector_type_id)", status: status,
                            modes: modes, encoderID: p.encoder_id, encoderIDs: encs,
                            widthMM: Int(p.mmWidth), heightMM: Int(p.mmHeight))
    }
}

/// KMS object kinds for property look-ups.
enum DRMObjectType {
    case connector, crtc, plane
    var value: UInt32 {
        switch self {
        case .connector: return kiosk_drm_object_connector()
        case .crtc: return kiosk_drm_object_crtc()
        case .plane: return kiosk_drm_object_plane()
        }
    }
}

/// The properties of one KMS object by name (id and current value).
struct DRMProperties {
    struct Entry { var id: UInt32; var value: UInt64 }
    /// Wraps `drmModeObjectGetProperties` + `drmModeGetProperty` (copied, then freed).
    static func read(fd: Int32, object: UInt32, type: DRMObjectType) -> [String: Entry] {
        guard let props = drmModeObjectGetProperties(fd, object, type.value) else { return [:] }
        defer { drmModeFreeObjectProperties(props) }
        var out: [String: Entry] = [:]
        for i in 0..<Int(props.pointee.count_props) {
            let pid = props.pointee.props[i]
            guard let prop = drmModeGetProperty(fd, pid) else { continue }
            var name = prop.pointee.name
            let s = withUnsafeBytes(of: &name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            out[s] = Entry(id: pid, value: props.pointee.prop_values[i])
            drmModeFreeProperty(prop)
        }
        return out
    }
}
