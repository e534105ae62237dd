#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore
import KioskPosix

/// Reads a device's events (`drmHandleEvent`) and tells which CRTCs' page flips completed.
/// Each flip passes, as its user data, the token of the CRTC it was queued on; an event names its
/// CRTC by the kernel's `crtc_id` (`page_flip_handler2`) for atomic commits, and by that token
/// for legacy flips.
final class DRMEvents {
    let device: DRMDeviceHandle
    /// Whether the CRTC comes from the kernel's event (atomic) or the flip's token (legacy).
    private let crtcFromEvent: Bool
    private var context = drmEventContext()
    private var completed: [UInt32] = []
    private var tokens: [UInt32: FlipToken] = [:]

    /// A flip's user data: the CRTC it was queued on and where its event is counted.
    private final class FlipToken {
        let crtc: UInt32
        unowned let events: DRMEvents
        init(crtc: UInt32, events: DRMEvents) { self.crtc = crtc; self.events = events }
    }

    init(device: DRMDeviceHandle, atomic: Bool) {
        self.device = device
        crtcFromEvent = atomic
        context.version = 3
        context.page_flip_handler2 = { _, _, _, _, crtc, user in
            guard let user else { return }
            let token = Unmanaged<FlipToken>.fromOpaque(user).takeUnretainedValue()
            let events = token.events
            events.completed.append(events.crtcFromEvent && crtc != 0 ? crtc : token.crtc)
        }
    }

    /// The user data a flip of `crtc` passes so that its event is counted here.
    func user(crtc: UInt32) -> UnsafeMutableRawPointer {
        let token = tokens[crtc] ?? FlipToken(crtc: crtc, events: self)
        tokens[crtc] = token
        return Unmanaged.passUnretained(token).toOpaque()
    }

    /// `drmHandleEvent`; the CRTCs whose flips the events read completed, oldest first.
    func dispatch() throws -> [UInt32] {
        completed = []
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
    var loop: any KioskLoop { get }
    var watch: WatchID? { get set }
}

extension KernelKMS {
    var path: String { device.path }
    var isMaster: Bool { device.isMaster }
    func setMaster() throws { try device.setMaster() }
    func dropMaster() { device.dropMaster() }
    func snapshot() throws -> DRMResources { try DRMResources.snapshot(fd: device.fd, device: device.path) }
    func currentConnectors() throws -> [DRMConnector] { try DRMResources.currentConnectors(fd: device.fd, device: device.path) }
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
    func dispatchEvents() throws -> [UInt32] { try events.dispatch() }
    var descriptor: Int32? { device.fd }
    func keepFramebuffersOnClose() { device.keepsFramebuffers = true }
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
    public static func kernel(loop: any KioskLoop) -> KMSBackend {
        func kms(_ handle: DRMDeviceHandle) -> any KMSDevice {
            handle.atomic ? AtomicKMS(device: handle, loop: loop) : LegacyKMS(device: handle, loop: loop)
        }
        var backend = KMSBackend(
            open: { path, api in kms(try DRMDeviceHandle(path: path, api: api)) },
            pickDevice: { DRMOutputs.pickDevice() },
            followHotplug: { logger, handler in DRMHotplugMonitor.start(loop: loop, logger: logger, handler) },
            devices: { DRMDeviceChoice.kernelDevices() })
        backend.adopt = { fd, path, api in
            let handle = try DRMDeviceHandle(adopting: fd, path: path, api: api)
            handle.adopted = true
            handle.discardPendingEvents()
            return kms(handle)
        }
        backend.handover = .process
        return backend
    }
}
