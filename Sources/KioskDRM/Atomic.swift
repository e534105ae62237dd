#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore
import KioskPosix

/// Property ids an atomic commit needs for one connector → CRTC → primary plane chain.
struct AtomicProps {
    var plane: UInt32
    var connectorCrtcID: UInt32
    var crtcModeID: UInt32
    var crtcActive: UInt32
    var planeFbID: UInt32
    var planeCrtcID: UInt32
    var srcX: UInt32, srcY: UInt32, srcW: UInt32, srcH: UInt32
    var crtcX: UInt32, crtcY: UInt32, crtcW: UInt32, crtcH: UInt32

    /// Looks the ids up by name (`drmModeObjectGetProperties`); a missing one throws naming object and property.
    init(fd: Int32, connector: UInt32, crtc: UInt32, plane: UInt32, what: String) throws {
        let c = DRMProperties.read(fd: fd, object: connector, type: .connector)
        let k = DRMProperties.read(fd: fd, object: crtc, type: .crtc)
        let p = DRMProperties.read(fd: fd, object: plane, type: .plane)
        func id(_ table: [String: DRMProperties.Entry], _ name: String, _ object: String) throws -> UInt32 {
            guard let e = table[name] else {
                throw KioskError.display("\(what): \(object) has no \"\(name)\" property; atomic modesetting unusable (try api = \"legacy\")")
            }
            return e.id
        }
        self.plane = plane
        connectorCrtcID = try id(c, "CRTC_ID", "connector")
        crtcModeID = try id(k, "MODE_ID", "CRTC \(crtc)")
        crtcActive = try id(k, "ACTIVE", "CRTC \(crtc)")
        planeFbID = try id(p, "FB_ID", "plane \(plane)")
        planeCrtcID = try id(p, "CRTC_ID", "plane \(plane)")
        srcX = try id(p, "SRC_X", "plane \(plane)"); srcY = try id(p, "SRC_Y", "plane \(plane)")
        srcW = try id(p, "SRC_W", "plane \(plane)"); srcH = try id(p, "SRC_H", "plane \(plane)")
        crtcX = try id(p, "CRTC_X", "plane \(plane)"); crtcY = try id(p, "CRTC_Y", "plane \(plane)")
        crtcW = try id(p, "CRTC_W", "plane \(plane)"); crtcH = try id(p, "CRTC_H", "plane \(plane)")
    }
}

/// An atomic request (`drmModeAtomicAlloc`) on a device, freed with the object.
final class AtomicRequest {
    let device: DRMDeviceHandle
    private let req: drmModeAtomicReqPtr

    init(device: DRMDeviceHandle) {
        guard let r = drmModeAtomicAlloc() else { fatalError("drmModeAtomicAlloc: out of memory") }
        self.device = device
        req = r
    }
    deinit { drmModeAtomicFree(req) }

    /// Sets `property` of `object` to `value` (`drmModeAtomicAddProperty`).
    func add(_ object: UInt32, _ property: UInt32, _ value: UInt64) {
        _ = drmModeAtomicAddProperty(req, object, property, value)
    }

    /// Commits (`drmModeAtomicCommit`); throws naming the commit (`name`), `what` and errno.
    func commit(flags: UInt32, name: String, what: String, user: UnsafeMutableRawPointer? = nil) throws {
        let fd = device.fd, req = self.req
        try device.call(name, what) { drmModeAtomicCommit(fd, req, flags, user) }
    }
}

/// A property blob (`drmModeCreatePropertyBlob`) on a device, destroyed with the object.
final class PropertyBlob {
    let device: DRMDeviceHandle
    let id: UInt32

    /// A blob holding a mode record.
    init(device: DRMDeviceHandle, mode: drmModeModeInfo, what: String) throws {
        self.device = device
        var raw = mode
        var blob: UInt32 = 0
        let fd = device.fd
        try device.call("drmModeCreatePropertyBlob(mode)", what) {
            drmModeCreatePropertyBlob(fd, &raw, MemoryLayout<drmModeModeInfo>.size, &blob)
        }
        id = blob
    }
    deinit { _ = drmModeDestroyPropertyBlob(device.fd, id) }
}

/// Atomic modesetting: every change is one `drmModeAtomicCommit` of connector, CRTC and primary
/// plane properties.
final class AtomicKMS: KernelKMS {
    let device: DRMDeviceHandle
    let events: DRMEvents
    let loop: any KioskLoop
    var watch: WatchID?
    var apiName: String { "atomic" }
    /// Property ids of the output last prepared on each CRTC.
    private var props: [UInt32: (output: KMSOutput, ids: AtomicProps)] = [:]
    /// The mode blob of each CRTC's last mode set (the CRTC refers to it while it is shown).
    private var modeBlobs: [UInt32: PropertyBlob] = [:]

    init(device: DRMDeviceHandle, loop: any KioskLoop) {
        self.device = device
        self.events = DRMEvents(device: device, atomic: true)
        self.loop = loop
    }

    deinit { unwatchEvents() }

    func prepare(_ output: KMSOutput) throws {
        guard let plane = output.plane else {
            throw KioskError.display("\(device.path) \(output.connector.name): no primary plane with XRGB8888 for CRTC \(output.crtc.id)")
        }
        let ids = try AtomicProps(fd: device.fd, connector: output.connector.id, crtc: output.crtc.id, plane: plane.id,
                                  what: "\(device.path) \(output.connector.name)")
        props[output.crtc.id] = (output, ids)
    }

    private func ids(_ output: KMSOutput) throws -> AtomicProps {
        if let p = props[output.crtc.id], p.output.connector.id == output.connector.id, p.output.plane?.id == output.plane?.id {
            return p.ids
        }
        try prepare(output)
        return props[output.crtc.id]!.ids
    }

    /// One commit with ALLOW_MODESET: mode blob, ACTIVE, connector → CRTC and the plane showing
    /// `buffer` full screen.
    func modeset(_ output: KMSOutput, buffer: any ScanoutBuffer, active: Bool) throws {
        let what = what(output)
        guard let raw = output.mode.raw else { throw KioskError.display("\(what): mode has no kernel record") }
        let p = try ids(output)
        modeBlobs[output.crtc.id] = nil
        let blob = try PropertyBlob(device: device, mode: raw, what: what)
        modeBlobs[output.crtc.id] = blob
        let w = UInt64(buffer.size.width), h = UInt64(buffer.size.height)
        let req = AtomicRequest(device: device)
        req.add(output.connector.id, p.connectorCrtcID, UInt64(output.crtc.id))
        req.add(output.crtc.id, p.crtcModeID, UInt64(blob.id))
        req.add(output.crtc.id, p.crtcActive, active ? 1 : 0)
        req.add(p.plane, p.planeFbID, UInt64(buffer.fbID))
        req.add(p.plane, p.planeCrtcID, UInt64(output.crtc.id))
        req.add(p.plane, p.srcX, 0); req.add(p.plane, p.srcY, 0)
        req.add(p.plane, p.srcW, w << 16); req.add(p.plane, p.srcH, h << 16)
        req.add(p.plane, p.crtcX, 0); req.add(p.plane, p.crtcY, 0)
        req.add(p.plane, p.crtcW, w); req.add(p.plane, p.crtcH, h)
        try req.commit(flags: UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET), name: "drmModeAtomicCommit(mode set)", what: what)
        device.removeForeignFramebuffers()
    }

    /// A non-blocking commit of the plane's FB_ID with a page-flip event.
    func flip(_ output: KMSOutput, to buffer: any ScanoutBuffer) throws {
        let p = try ids(output)
        let req = AtomicRequest(device: device)
        req.add(p.plane, p.planeFbID, UInt64(buffer.fbID))
        req.add(p.plane, p.planeCrtcID, UInt64(output.crtc.id))
        try req.commit(flags: UInt32(DRM_MODE_PAGE_FLIP_EVENT) | UInt32(DRM_MODE_ATOMIC_NONBLOCK),
                       name: "drmModeAtomicCommit(page flip)", what: what(output), user: events.user(crtc: output.crtc.id))
    }

    /// The CRTC's ACTIVE property.
    func setActive(_ output: KMSOutput, _ active: Bool) throws {
        let p = try ids(output)
        let req = AtomicRequest(device: device)
        req.add(output.crtc.id, p.crtcActive, active ? 1 : 0)
        try req.commit(flags: UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET),
                       name: "drmModeAtomicCommit(\(active ? "unblank" : "blank"): ACTIVE \(active ? 1 : 0))", what: what(output))
    }

    func restore(_ saved: SavedCrtc) throws {
        try restoreWithSetCrtc(saved)
        modeBlobs[saved.crtc] = nil
    }
}
