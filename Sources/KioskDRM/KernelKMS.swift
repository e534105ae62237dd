#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore
import KioskPosix

/// Reads a device's events (`drmHandleEvent`) and counts the page flips that completed.
final class DRMEvents {
    let device: DRMDeviceHandle
    private var context = drmEventContext()
    private var completed = 0

    init(device: DRMDeviceHandle) {
        self.device = device
        context.version = 2
        context.page_flip_handler = { _, _, _, _, user in
            guard let user else { return }
            Unmanaged<DRMEvents>.fromOpaque(user).takeUnretainedValue().completed += 1
        }
    }

    /// The user data a flip passes so that its event is counted here.
    var user: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// `drmHandleEvent`; the number of flips completed by the events read.
    func dispatch() throws -> Int {
        completed = 0
        if drmHandleEvent(device.fd, &context) != 0 {
            let e = errno
            if e != EAGAIN && e != EINTR { throw Posix.error("drmHandleEvent", path: device.path, errno: e) }
        }
        return completed
    }

    /// One `poll(2)` of the device for events.
    func wait(timeoutMs: Int32) throws -> KMSWait {
        var pfd = pollfd(fd: device.fd, events: Int16(POLLIN), revents: 0)
        let r = poll(&pfd, 1, timeoutMs)
        if r > 0 { return .ready }
        if r == 0 { return .timedOut }
        let e = errno
        if e == EINTR { return .interrupted }
        throw Posix.error("poll", path: device.path, errno: e)
    }
}

/// What the atomic and legacy interfaces share: the open device, its snapshot, buffers, DRM
/// master and events. Each implementation adds its own mode set, flip, blanking and restore.
protocol KernelKMS: KMSDevice {
    var device: DRMDeviceHandle { get }
    var events: DRMEvents { get }
    var loop: EventLoop { get }
    var watch: EventLoop.WatchID? { get set }
}

extension KernelKMS {
    var path: String { device.path }
    var isMaster: Bool { device.isMaster }
    func setMaster() throws { try device.setMaster() }
    func dropMaster() { device.dropMaster() }
    func snapshot() throws -> DRMResources { try DRMResources.snapshot(fd: device.fd, device: device.path) }
    func makeBuffer(size: Size, what: String) throws -> any ScanoutBuffer {
        try DumbBuffer(device: device, size: size, what: what)
    }
    func watchEvents(_ handler: @escaping () -> Void) throws {
        unwatchEvents()
        watch = try loop.watch(fd: device.fd, handler)
    }
    func unwatchEvents() {
        if let w = watch { loop.unwatch(w); watch = nil }
    }
    func dispatchEvents() throws -> Int { try events.dispatch() }
    func waitForEvents(timeoutMs: Int32) throws -> KMSWait { try events.wait(timeoutMs: timeoutMs) }

    /// "/dev/dri/card0 HDMI-A-1 1920x1080@60", for errors.
    func what(_ output: KMSOutput) -> String { "\(device.path) \(output.name)" }

    /// `drmModeSetCrtc` back to `saved` (or off). The legacy call is right for both interfaces:
    /// on an atomic driver the kernel turns it into the equivalent atomic commit, and it is what
    /// the console (fbcon) itself uses.
    func restoreWithSetCrtc(_ saved: SavedCrtc) throws {
        let fd = device.fd
        var conn = saved.connector
        if saved.fb != 0, var mode = saved.mode?.raw {
            try device.call("drmModeSetCrtc(restore CRTC \(saved.crtc), fb \(saved.fb))", device.path) {
                drmModeSetCrtc(fd, saved.crtc, saved.fb, saved.x, saved.y, &conn, 1, &mode)
            }
        } else {
            try device.call("drmModeSetCrtc(restore CRTC \(saved.crtc) off)", device.path) {
                drmModeSetCrtc(fd, saved.crtc, 0, 0, 0, nil, 0, nil)
            }
        }
    }
}

/// The kernel's devices: opened as atomic or legacy, picked and followed through udev.
extension KMSBackend {
    public static func kernel(loop: EventLoop) -> KMSBackend {
        KMSBackend(
            open: { path, api in
                let handle = try DRMDeviceHandle(path: path, api: api)
                return handle.atomic ? AtomicKMS(device: handle, loop: loop) : LegacyKMS(device: handle, loop: loop)
            },
            pickDevice: { DRMOutputs.pickDevice() },
            followHotplug: { logger, handler in DRMHotplugMonitor.start(loop: loop, logger: logger, handler) })
    }
}
