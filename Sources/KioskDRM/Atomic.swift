#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore

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

/// An atomic request (`drmModeAtomicAlloc`), freed with the object.
final class AtomicRequest {
    private let req: drmModeAtomicReqPtr

    init() {
        guard let r = drmModeAtomicAlloc() else { fatalError("drmModeAtomicAlloc: out of memory") }
        req = r
    }
    deinit { drmModeAtomicFree(req) }

    /// Sets `property` of `object` to `value` (`drmModeAtomicAddProperty`).
    func add(_ object: UInt32, _ property: UInt32, _ value: UInt64) {
        _ = drmModeAtomicAddProperty(req, object, property, value)
    }

    /// Commits (`drmModeAtomicCommit`); returns its result with errno set on failure.
    func commitRaw(fd: Int32, flags: UInt32, user: UnsafeMutableRawPointer? = nil) -> Int32 {
        drmModeAtomicCommit(fd, req, flags, user)
    }

    /// Commits and throws a display error starting with `what` on failure.
    func commit(fd: Int32, flags: UInt32, what: String) throws {
        if commitRaw(fd: fd, flags: flags) != 0 {
            let e = errno
            throw KioskError.display("\(what): atomic commit failed: \(String(cString: strerror(e)))", errno: e)
        }
    }
}
