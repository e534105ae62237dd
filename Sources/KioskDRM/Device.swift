#if canImport(Glibc)
import Glibc
#endif
import CDRM
import CKioskShims
import CUdev
import KioskCore

/// A DRM primary node found through udev.
public struct DRMDeviceInfo: Sendable, Equatable {
    /// Device node, e.g. "/dev/dri/card0".
    public var path: String
    /// udev's ID_SEAT (seat0 when unset).
    public var seat: String
    /// The firmware's boot display (PCI boot_vga = 1).
    public var bootVGA: Bool
}

/// Lists DRM primary nodes (card*) on `seat`, boot VGA first; wraps `udev_enumerate_scan_devices`.
public func enumerateDRMDevices(seat: String = "seat0") -> [DRMDeviceInfo] {
    guard let udev = udev_new() else { return [] }
    defer { udev_unref(udev) }
    guard let en = udev_enumerate_new(udev) else { return [] }
    defer { udev_enumerate_unref(en) }
    udev_enumerate_add_match_subsystem(en, "drm")
    udev_enumerate_add_match_sysname(en, "card[0-9]*")
    udev_enumerate_scan_devices(en)
    var out: [DRMDeviceInfo] = []
    var entry = udev_enumerate_get_list_entry(en)
    while let e = entry {
        defer { entry = udev_list_entry_get_next(e) }
        guard let syspath = udev_list_entry_get_name(e), let dev = udev_device_new_from_syspath(udev, syspath) else { continue }
        defer { udev_device_unref(dev) }
        guard let node = udev_device_get_devnode(dev) else { continue }
        let devSeat = udev_device_get_property_value(dev, "ID_SEAT").map { String(cString: $0) } ?? "seat0"
        guard devSeat == seat else { continue }
        var boot = false
        if let pci = udev_device_get_parent_with_subsystem_devtype(dev, "pci", nil),
           let v = udev_device_get_sysattr_value(pci, "boot_vga") {
            boot = String(cString: v) == "1"
        }
        out.append(DRMDeviceInfo(path: String(cString: node), seat: devSeat, bootVGA: boot))
    }
    return out.sorted { a, b in a.bootVGA != b.bootVGA ? a.bootVGA : a.path < b.path }
}

/// An open DRM device node; the one owner of its file descriptor (`close()` must be called).
final class DRMDevice {
    let path: String
    let fd: Int32
    /// Atomic modesetting is enabled on this file descriptor.
    let atomic: Bool
    private(set) var isClosed = false

    /// Opens `path` read-write and checks dumb-buffer support; enables universal planes and, unless
    /// `api` is `.legacy`, atomic modesetting (`drmSetClientCap`). Errors name the device and what to do.
    init(path: String, api: DRMOptions.API) throws {
        self.path = path
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 {
            let e = errno
            switch e {
            case EACCES, EPERM:
                throw KioskError.display("cannot open \(path): permission denied — run kioskd as a user in the \"video\" group (and \"render\"), or in a logind session on the seat that owns \(path) (seat0)", errno: e)
            case ENOENT, ENODEV, ENXIO:
                throw KioskError.display("cannot open \(path): no such DRM device (is the GPU driver loaded? see /dev/dri/)", errno: e)
            default:
                throw KioskError.display("cannot open \(path): \(String(cString: strerror(e)))", errno: e)
            }
        }
        var dumb: UInt64 = 0
        if drmGetCap(fd, UInt64(DRM_CAP_DUMB_BUFFER), &dumb) != 0 {
            let e = errno
            Glibc.close(fd)
            throw KioskError.display("\(path) is not a DRM device (drmGetCap: \(String(cString: strerror(e)))); use a /dev/dri/card* node", errno: e)
        }
        if dumb == 0 {
            Glibc.close(fd)
            throw KioskError.display("\(path) does not offer dumb buffers (DRM_CAP_DUMB_BUFFER); kioskd needs a KMS driver with dumb-buffer support")
        }
        _ = drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_UNIVERSAL_PLANES), 1)
        var atomic = false
        if api != .legacy {
            atomic = drmSetClientCap(fd, UInt64(DRM_CLIENT_CAP_ATOMIC), 1) == 0
            if !atomic && api == .atomic {
                Glibc.close(fd)
                throw KioskError.display("\(path) does not support atomic modesetting (DRM_CLIENT_CAP_ATOMIC); use api = \"legacy\" or \"auto\"")
            }
        }
        self.fd = fd
        self.atomic = atomic
    }

    /// Whether this file descriptor is DRM master (`drmIsMaster`).
    var isMaster: Bool { drmIsMaster(fd) != 0 }

    /// Becomes DRM master (`drmSetMaster`); throws naming the device when another process holds it.
    func setMaster() throws {
        if isMaster { return }
        if drmSetMaster(fd) != 0 {
            let e = errno
            throw KioskError.display("\(path): cannot become DRM master (\(String(cString: strerror(e)))) — another display server or kioskd is running on this device, or this is not the active VT/session", errno: e)
        }
    }

    /// Gives up DRM master (`drmDropMaster`) so another session can use the device.
    func dropMaster() { _ = drmDropMaster(fd) }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    deinit { assert(isClosed, "DRMDevice \(path) was not closed") }
}

/// A dumb buffer in XRGB8888 with a framebuffer id and a CPU mapping; one owner of all three.
final class DumbBuffer {
    let fd: Int32
    let size: Size
    let handle: UInt32
    let pitch: Int
    let byteCount: Int
    let fbID: UInt32
    let map: UnsafeMutableRawPointer
    private(set) var isDestroyed = false

    /// Creates, registers and maps a buffer: `drmModeCreateDumbBuffer`, `drmModeAddFB2`
    /// (DRM_FORMAT_XRGB8888), `drmModeMapDumbBuffer` + `mmap`. `what` names device and connector in errors.
    init(fd: Int32, size: Size, what: String) throws {
        self.fd = fd
        self.size = size
        var handle: UInt32 = 0, pitch: UInt32 = 0
        var bytes: UInt64 = 0
        if drmModeCreateDumbBuffer(fd, UInt32(size.width), UInt32(size.height), 32, 0, &handle, &pitch, &bytes) != 0 {
            let e = errno
            throw KioskError.display("\(what): cannot create a \(size) dumb buffer: \(String(cString: strerror(e)))", errno: e)
        }
        var handles: [UInt32] = [handle, 0, 0, 0]
        var pitches: [UInt32] = [pitch, 0, 0, 0]
        var offsets: [UInt32] = [0, 0, 0, 0]
        var fb: UInt32 = 0
        if drmModeAddFB2(fd, UInt32(size.width), UInt32(size.height), kiosk_drm_format_xrgb8888(), &handles, &pitches, &offsets, &fb, 0) != 0 {
            let e = errno
            _ = drmModeDestroyDumbBuffer(fd, handle)
            throw KioskError.display("\(what): drmModeAddFB2 (XRGB8888 \(size)) failed: \(String(cString: strerror(e)))", errno: e)
        }
        var offset: UInt64 = 0
        var p: UnsafeMutableRawPointer? = nil
        if drmModeMapDumbBuffer(fd, handle, &offset) == 0 {
            let m = mmap(nil, Int(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(offset))
            if m != UnsafeMutableRawPointer(bitPattern: -1) { p = m }
        }
        guard let p else {
            let e = errno
            _ = drmModeRmFB(fd, fb)
            _ = drmModeDestroyDumbBuffer(fd, handle)
            throw KioskError.display("\(what): cannot map a dumb buffer: \(String(cString: strerror(e)))", errno: e)
        }
        memset(p, 0, Int(bytes))
        self.handle = handle
        self.pitch = Int(pitch)
        self.byteCount = Int(bytes)
        self.fbID = fb
        self.map = p
    }

    /// The mapping as a physical-size pixel buffer.
    var pixels: PixelBuffer { PixelBuffer(base: map, size: size, stride: pitch) }

    /// Unmaps and frees: `munmap`, `drmModeRmFB`, `drmModeDestroyDumbBuffer`.
    func destroy() {
        guard !isDestroyed else { return }
        isDestroyed = true
        munmap(map, byteCount)
        _ = drmModeRmFB(fd, fbID)
        _ = drmModeDestroyDumbBuffer(fd, handle)
    }

    deinit { assert(isDestroyed, "dumb buffer fb \(fbID) was not destroyed") }
}
