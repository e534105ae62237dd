#if canImport(Glibc)
import Glibc
#endif
import CDRM
import CKioskDRMFormats
import KioskCore
import KioskPosix

/// An open DRM device node: the one owner of its file descriptor, closed exactly once, when the
/// last holder lets go. Dumb buffers, property blobs and atomic requests hold the handle (never a
/// copy of the raw descriptor), so none of them can outlive the device they belong to.
final class DRMDeviceHandle {
    let path: String
    private let descriptor: Descriptor
    var fd: Int32 { descriptor.raw }
    /// Atomic modesetting is enabled on this file descriptor.
    let atomic: Bool

    /// Opens `path` read-write and checks dumb-buffer support; enables universal planes and, unless
    /// `api` is `.legacy`, atomic modesetting (`drmSetClientCap`). Errors name the device and what to do.
    convenience init(path: String, api: DRMOptions.API) throws {
        let raw = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK)
        if raw < 0 {
            let e = errno
            switch e {
            case EACCES, EPERM:
                throw KioskError.display("cannot open \(path): permission denied — run kioskd as a user in the \"video\" group (and \"render\"), or in a logind session on the seat that owns \(path) (seat0)", errno: e)
            case ENOENT, ENODEV, ENXIO:
                throw KioskError.display("cannot open \(path): no such DRM device (is the GPU driver loaded? see /dev/dri/)", errno: e)
            default:
                throw Posix.error("open", path: path, errno: e)
            }
        }
        try self.init(adopting: raw, path: path, api: api)
    }

    /// Takes `raw`, a descriptor open on the device node `path` (one systemd kept over a restart),
    /// with the same checks and capabilities as `init(path:api:)`; closes it when a check throws.
    init(adopting raw: Int32, path: String, api: DRMOptions.API) throws {
        self.path = path
        // Closed by its owner when a check below throws.
        let owner = Descriptor(adopting: raw)
        let fd = owner.raw
        var dumb: UInt64 = 0
        if drmGetCap(fd, UInt64(DRM_CAP_DUMB_BUFFER), &dumb) != 0 {
            let e = errno
            throw KioskError.display("\(path) is not a DRM device (\(Posix.error("drmGetCap(DRM_CAP_DUMB_BUFFER)", errno: e).message)); use a /dev/dri/card* node", errno: e)
        }
        if dumb == 0 {
            throw KioskError.display("\(path) does not offer dumb buffers (DRM_CAP_DUMB_BUFFER); kioskd needs a KMS driver with dumb-buffer support")
        }
        _ = drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_UNIVERSAL_PLANES), 1)
        var atomic = false
        if api != .legacy {
            atomic = drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_ATOMIC), 1) == 0
            if !atomic && api == .atomic {
                throw KioskError.display("\(path) does not support atomic modesetting (DRM_CLIENT_CAP_ATOMIC); use api = \"legacy\" or \"auto\"")
            }
        }
        self.descriptor = owner
        self.atomic = atomic
    }

    /// The framebuffers this process made on the file and still holds (`DumbBuffer`).
    var framebuffers = Set<UInt32>()
    /// Framebuffers stay when their buffers are freed: the file outlives the process (systemd
    /// keeps it) and the picture stays on the screen (`DRMHandover`).
    var keepsFramebuffers = false
    /// The file was kept by systemd over a restart: framebuffers the process before left on it
    /// are removed after each mode set until none is left (`removeForeignFramebuffers()`).
    var adopted = false

    /// Whether this file descriptor is DRM master (`drmIsMaster`).
    var isMaster: Bool { drmIsMaster(fd) != 0 }

    /// Becomes DRM master (`drmSetMaster`); throws naming the device when another process holds it.
    func setMaster() throws {
        if isMaster { return }
        if drmSetMaster(fd) != 0 {
            let e = errno
            throw KioskError.display("\(Posix.error("drmSetMaster", path: path, errno: e).message) — another display server or kioskd is running on this device, or this is not the active VT/session", errno: e)
        }
    }

    /// Gives up DRM master (`drmDropMaster`) so another session can use the device.
    func dropMaster() { _ = drmDropMaster(fd) }

    /// Calls a libdrm function that returns 0 or a negative value with errno set, naming it and
    /// `what` in the error (`drmModePageFlip /dev/dri/card0 HDMI-A-1 failed: … (errno 16)`).
    func call(_ name: String, _ what: String, _ body: () -> Int32) throws {
        try Posix.call(name, path: what) { body() }
    }
}

/// A dumb buffer in XRGB8888 with a framebuffer id and a CPU mapping; one owner of all three,
/// freed (`munmap`, `drmModeRmFB`, `drmModeDestroyDumbBuffer`) when the last holder lets go.
final class DumbBuffer: ScanoutBuffer {
    let device: DRMDeviceHandle
    let size: Size
    let handle: UInt32
    let pitch: Int
    let byteCount: Int
    let fbID: UInt32
    let map: UnsafeMutableRawPointer

    /// Creates, registers and maps a buffer: `drmModeCreateDumbBuffer`, `drmModeAddFB2`
    /// (DRM_FORMAT_XRGB8888), `drmModeMapDumbBuffer` + `mmap`. `what` names device and connector in errors.
    init(device: DRMDeviceHandle, size: Size, what: String) throws {
        self.device = device
        self.size = size
        let fd = device.fd
        var handle: UInt32 = 0, pitch: UInt32 = 0
        var bytes: UInt64 = 0
        try device.call("drmModeCreateDumbBuffer(\(size))", what) {
            drmModeCreateDumbBuffer(fd, UInt32(size.width), UInt32(size.height), 32, 0, &handle, &pitch, &bytes)
        }
        var handles: [UInt32] = [handle, 0, 0, 0]
        var pitches: [UInt32] = [pitch, 0, 0, 0]
        var offsets: [UInt32] = [0, 0, 0, 0]
        var fb: UInt32 = 0
        do {
            try device.call("drmModeAddFB2(XRGB8888 \(size))", what) {
                drmModeAddFB2(fd, UInt32(size.width), UInt32(size.height), kiosk_drm_format_xrgb8888(), &handles, &pitches, &offsets, &fb, 0)
            }
        } catch {
            _ = drmModeDestroyDumbBuffer(fd, handle)
            throw error
        }
        var offset: UInt64 = 0
        var p: UnsafeMutableRawPointer? = nil
        do {
            try device.call("drmModeMapDumbBuffer", what) { drmModeMapDumbBuffer(fd, handle, &offset) }
            let m = mmap(nil, Int(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
            if m == UnsafeMutableRawPointer(bitPattern: -1) { throw Posix.error("mmap(dumb buffer)", path: what, errno: errno) }
            p = m
        } catch {
            _ = drmModeRmFB(fd, fb)
            _ = drmModeDestroyDumbBuffer(fd, handle)
            throw error
        }
        memset(p!, 0, Int(bytes))
        self.handle = handle
        self.pitch = Int(pitch)
        self.byteCount = Int(bytes)
        self.fbID = fb
        self.map = p!
        device.framebuffers.insert(fb)
    }

    deinit {
        munmap(map, byteCount)
        device.framebuffers.remove(fbID)
        // A framebuffer left on a file systemd keeps holds its memory until the next process
        // removes it; the handle goes now.
        if !device.keepsFramebuffers { _ = drmModeRmFB(device.fd, fbID) }
        _ = drmModeDestroyDumbBuffer(device.fd, handle)
    }

    /// The mapping as a physical-size pixel buffer.
    var pixels: PixelBuffer { PixelBuffer(base: map, size: size, stride: pitch) }
}
