#if canImport(Glibc)
import Glibc
#endif
import CDRM
import CKioskShims
import CUdev
import KioskCore
import Logging
import KioskPosix

/// How the DRM output is chosen and driven.
public struct DRMOptions: Sendable {
    /// Which KMS interface to use.
    public enum API: String, Sendable, CaseIterable {
        /// Atomic when the driver offers it, legacy otherwise.
        case auto
        case atomic
        case legacy
    }
    /// Device node, e.g. "/dev/dri/card0"; nil = the first seat0 primary node found through udev.
    public var device: String?
    /// Connector name, e.g. "HDMI-A-1", "Virtual-1"; nil = the first connected.
    public var output: String?
    /// "1920x1080@60" or "1920x1080"; nil = the connector's preferred mode.
    public var mode: String?
    public var rotation: Rotation
    /// Number of scan-out buffers, 2 or 3.
    public var buffers: Int
    public var api: API

    public init(device: String? = nil, output: String? = nil, mode: String? = nil, rotation: Rotation = .r0,
                buffers: Int = 2, api: API = .auto) {
        self.device = device; self.output = output; self.mode = mode; self.rotation = rotation
        self.buffers = buffers; self.api = api
    }
}

/// A DRM/KMS output: dumb buffers in XRGB8888, a modeset for the first frame and page flips with
/// events after it, damage copied by buffer age, rotation in the copy, hotplug, blanking and a
/// clean hand-back of the CRTC found at start.
public final class DRMDisplay: DisplayOutput {
    public var onEvent: ((DisplayEvent) -> Void)?
    public let rotation: Rotation
    public private(set) var isBlanked = false
    /// Flip-complete events received (`drmHandleEvent` page-flip callbacks).
    public private(set) var pageFlipCount: UInt64 = 0
    /// Frames that went out through a mode set (first frame, after hotplug or VT return).
    public private(set) var modesetCount: UInt64 = 0
    /// Pixels copied from the frame into the back buffer by the last `present` (damage × buffer age).
    public private(set) var lastCopiedPixels = 0
    /// Flips the kernel refused with EBUSY and that were retried.
    public private(set) var busyRetries: UInt64 = 0
    /// Whether atomic modesetting is in use (false: legacy SetCrtc/PageFlip/DPMS).
    public var usesAtomic: Bool { device?.atomic ?? false }

    private let options: DRMOptions
    private let modeRequest: ModeRequest?
    private let loop: EventLoop
    private var logger: Logger

    private var device: DRMDevice?
    private var drmWatch: EventLoop.WatchID?
    private var udev: OpaquePointer?
    private var monitor: OpaquePointer?
    private var monitorWatch: EventLoop.WatchID?

    private struct Output {
        var connector: DRMConnector
        var crtc: DRMCrtc
        var mode: DRMMode
        var plane: DRMPlane?
        var props: AtomicProps?
    }
    private var output: Output?
    private var buffers: [DumbBuffer] = []
    private var flips = FlipScheduler(count: 2, logicalSize: Size(width: 1, height: 1))
    private var active = false
    private var hasMaster = true
    private var modeBlob: UInt32 = 0
    private var retryTimer: EventLoop.TimerID?
    private var retryAttempts = 0
    private var isShutDown = false
    /// CRTC state found before the first mode set, restored by `shutdown()`.
    private var saved: (crtc: UInt32, fb: UInt32, x: UInt32, y: UInt32, mode: drmModeModeInfo?, connector: UInt32)?
    private var eventContext = drmEventContext()

    /// Opens the device and picks the output; wraps udev enumeration and `drmModeGet*`. Does not
    /// throw when nothing is connected (or no device exists yet): it stays inactive and follows
    /// hotplug. Throws for bad options (unknown output or mode), permission and capability errors.
    public init(options: DRMOptions, loop: EventLoop, logger: Logger) throws {
        guard options.buffers == 2 || options.buffers == 3 else {
            throw KioskError.config("display buffers = \(options.buffers): must be 2 or 3")
        }
        self.options = options
        self.rotation = options.rotation
        self.loop = loop
        self.logger = logger
        self.modeRequest = try options.mode.map { try ModeRequest(parsing: $0) }
        eventContext.version = 2
        eventContext.page_flip_handler = { _, _, _, _, user in
            guard let user else { return }
            Unmanaged<DRMDisplay>.fromOpaque(user).takeUnretainedValue().flipCompleted()
        }
        startMonitor()
        let path: String?
        if let d = options.device {
            path = d
        } else {
            path = Self.pickDevice()
        }
        guard let path else {
            logger.warning("no DRM device on seat0 yet; waiting for one to appear", metadata: ["drm.api": "\(options.api)"])
            return
        }
        do {
            try open(path: path)
            try configure(announce: false)
        } catch {
            teardown()
            stopMonitor()
            throw error
        }
    }

    deinit {
        if !isShutDown { shutdown() }
    }

    /// The first seat0 device with a connected connector, else the first device.
    private static func pickDevice() -> String? {
        let devices = enumerateDRMDevices()
        for d in devices {
            let fd = Glibc.open(d.path, O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { Glibc.close(fd) }
            if let res = try? DRMResources.snapshot(fd: fd, device: d.path), res.connectors.contains(where: { $0.status == .connected }) {
                return d.path
            }
        }
        return devices.first?.path
    }

    // MARK: DisplayOutput

    public var displayDescription: String {
        guard let device else { return "drm (no device)" }
        guard let output else { return "\(device.path) (no connected output)" }
        return "\(device.path) \(output.connector.name) \(output.mode)\(rotation == .r0 ? "" : " rotated \(rotation)") \(device.atomic ? "atomic" : "legacy")"
    }

    public var logicalSize: Size? {
        guard active, let output else { return nil }
        return rotation.logicalSize(physical: output.mode.size)
    }

    public var canPresent: Bool {
        guard active, hasMaster, !isBlanked, output != nil, retryTimer == nil else { return false }
        return flips.canBegin
    }

    /// Copies the damaged parts of `frame` (plus what the back buffer missed) into the back buffer,
    /// turned by `rotation`, then sets the mode (first frame) or queues a page flip with an event
    /// (`drmModeSetCrtc`/`drmModePageFlip`, or `drmModeAtomicCommit`). While presenting is not
    /// possible the damage is remembered and copied by the next present.
    public func present(_ frame: PixelBuffer, damage: Damage) throws {
        guard let output, let device else { remember(damage); return }
        let logical = rotation.logicalSize(physical: output.mode.size)
        guard frame.size == logical else {
            throw KioskError.display("\(device.path) \(output.connector.name): frame is \(frame.size) but the output lays out \(logical)")
        }
        guard canPresent, let job = flips.beginFrame(damage) else { remember(damage); return }
        let back = buffers[job.index]
        let target = back.pixels
        for r in job.copy.rects {
            blit(frame, into: target, rect: r, rotation: rotation)
        }
        lastCopiedPixels = job.copy.area
        if job.modeset {
            do { try modeset(back) } catch {
                flips.frameFailed(job.index)
                throw error
            }
            flips.shownByModeset(job.index)
            loop.post { [weak self] in
                guard let self, self.active else { return }
                self.onEvent?(.ready)
            }
        } else {
            try flip(to: job.index)
        }
    }

    /// Blanks (true) or unblanks the panel: atomic `ACTIVE` 0/1, or the legacy connector `DPMS`
    /// property (`drmModeConnectorSetProperty`). Waits for a queued flip first.
    public func setBlanked(_ blanked: Bool) throws {
        guard blanked != isBlanked else { return }
        guard let device, let output, active, hasMaster, flips.front != nil else {
            // Nothing on screen: remember the wish; the next mode set honours it.
            isBlanked = blanked
            return
        }
        waitForFlip(timeoutMs: 500)
        let what = "\(device.path) \(output.connector.name)"
        if device.atomic, let props = output.props {
            let req = AtomicRequest()
            req.add(output.crtc.id, props.crtcActive, blanked ? 0 : 1)
            try req.commit(fd: device.fd, flags: UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET), what: "\(what): \(blanked ? "blank" : "unblank") (ACTIVE)")
        } else {
            let props = DRMProperties.read(fd: device.fd, object: output.connector.id, type: .connector)
            guard let dpms = props["DPMS"] else {
                throw KioskError.display("\(what): the connector has no DPMS property; cannot blank")
            }
            let value = UInt64(blanked ? DRM_MODE_DPMS_OFF : DRM_MODE_DPMS_ON)
            if drmModeConnectorSetProperty(device.fd, output.connector.id, dpms.id, value) != 0 {
                let e = errno
                throw KioskError.display("\(what): DPMS \(blanked ? "off" : "on") refused: \(String(cString: strerror(e)))", errno: e)
            }
        }
        isBlanked = blanked
        logger.info("display \(blanked ? "blanked" : "unblanked")", metadata: meta)
        if !blanked {
            loop.post { [weak self] in
                guard let self, self.active else { return }
                self.onEvent?(.ready)
            }
        }
    }

    /// Restores the CRTC found at start (`drmModeSetCrtc` with the saved framebuffer, mode and
    /// connector) so the console comes back, frees the buffers and drops DRM master.
    public func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        stopMonitor()
        if let device {
            waitForFlip(timeoutMs: 500)
            restoreSavedCrtc(device)
        }
        teardown()
    }

    // MARK: VT / session hand-over (plain master handling)

    /// Gives the device to another session (VT switch away): waits for a queued flip, drops DRM
    /// master (`drmDropMaster`) and stops presenting until `acquireMaster()`.
    public func releaseMaster() {
        guard let device, hasMaster else { return }
        waitForFlip(timeoutMs: 500)
        device.dropMaster()
        hasMaster = false
        let was = active
        deactivate(announce: false)
        logger.info("released DRM master", metadata: meta)
        if was { onEvent?(.inactive) }
    }

    /// Takes the device back (VT switch back): `drmSetMaster`, then a full mode set and repaint.
    public func acquireMaster() throws {
        guard let device, !hasMaster else { return }
        try device.setMaster()
        hasMaster = true
        flips.needModeset(full: true)
        logger.info("acquired DRM master", metadata: meta)
        try configure(announce: true)
    }

    // MARK: Listing

    /// A human-readable list of `device`'s connectors (status, size, modes) for `kioskd --list-outputs`;
    /// the output driven by a CRTC is marked "in use" and its current mode "*", preferred modes "+".
    public static func listOutputs(device: String?) throws -> String {
        let paths: [String]
        if let device { paths = [device] } else { paths = enumerateDRMDevices().map(\.path) }
        guard !paths.isEmpty else { throw KioskError.notFound("no DRM devices found on seat0 (no /dev/dri/card*)") }
        var out = ""
        for path in paths {
            let dev = try DRMDevice(path: path, api: .auto)
            defer { dev.close() }
            let res = try DRMResources.snapshot(fd: dev.fd, device: path)
            out += "\(path) (\(dev.atomic ? "atomic" : "legacy") modesetting, dumb buffers)\n"
            out += describe(res)
        }
        return out
    }

    /// Text for a resources snapshot (pure; used by `listOutputs`).
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

    // MARK: Internals

    private var meta: Logger.Metadata {
        var m: Logger.Metadata = [:]
        if let device { m["drm.device"] = "\(device.path)" }
        if let output {
            m["drm.connector"] = "\(output.connector.name)"
            m["drm.mode"] = "\(output.mode)"
        }
        return m
    }

    private func remember(_ damage: Damage) {
        flips.remember(damage)
    }

    private func open(path: String) throws {
        let dev = try DRMDevice(path: path, api: options.api)
        if !dev.isMaster {
            do { try dev.setMaster() } catch {
                logger.warning("\(error)", metadata: ["drm.device": "\(path)"])
            }
        }
        hasMaster = dev.isMaster
        device = dev
        do {
            drmWatch = try loop.watch(fd: dev.fd) { [weak self] in self?.handleDRMEvents() }
        } catch {
            dev.close()
            device = nil
            throw error
        }
        logger.info("opened DRM device", metadata: ["drm.device": "\(path)", "drm.api": "\(dev.atomic ? "atomic" : "legacy")",
                                                    "drm.master": "\(hasMaster)"])
    }

    /// Picks connector, mode, CRTC and plane from a fresh snapshot and (re)allocates buffers.
    /// `announce`: tell the scene manager (.needsFullRedraw / .inactive) about changes.
    private func configure(announce: Bool) throws {
        guard let device else { return }
        let res = try DRMResources.snapshot(fd: device.fd, device: device.path)
        guard let connector = try DRMSelection.connector(res.connectors, named: options.output, device: device.path),
              connector.status == .connected, !connector.modes.isEmpty else {
            let names = res.connectors.map { "\($0.name) (\($0.status.rawValue))" }.joined(separator: ", ")
            logger.warning("no connected output; waiting for hotplug", metadata: ["drm.device": "\(device.path)",
                                                                                  "drm.output": "\(options.output ?? "any")",
                                                                                  "drm.connectors": "\(names)"])
            deactivate(announce: announce)
            return
        }
        let mode = try DRMSelection.mode(connector, request: modeRequest)
        let crtc = try DRMSelection.crtc(for: connector, encoders: res.encoders, crtcs: res.crtcs)
        let plane = DRMSelection.primaryPlane(res.planes, crtc: crtc, format: kiosk_drm_format_xrgb8888())
        var props: AtomicProps? = nil
        if device.atomic {
            guard let plane else {
                throw KioskError.display("\(device.path) \(connector.name): no primary plane with XRGB8888 for CRTC \(crtc.id)")
            }
            props = try AtomicProps(fd: device.fd, connector: connector.id, crtc: crtc.id, plane: plane.id,
                                    what: "\(device.path) \(connector.name)")
        }
        if saved == nil {
            saved = (crtc.id, crtc.bufferID, UInt32(crtc.x), UInt32(crtc.y), crtc.mode?.raw, connector.id)
        }
        let sizeChanged = output.map { $0.mode.size != mode.size } ?? true
        let changed = output.map { $0.connector.id != connector.id || $0.mode != mode || $0.crtc.id != crtc.id } ?? true
        output = Output(connector: connector, crtc: crtc, mode: mode, plane: plane, props: props)
        if sizeChanged || buffers.isEmpty {
            freeBuffers()
            let what = "\(device.path) \(connector.name)"
            for _ in 0..<options.buffers {
                let b = try DumbBuffer(fd: device.fd, size: mode.size, what: what)
                buffers.append(b)
            }
        }
        let logical = rotation.logicalSize(physical: mode.size)
        if flips.count != buffers.count || flips.logicalSize != logical {
            flips = FlipScheduler(count: buffers.count, logicalSize: logical)
        }
        let wasActive = active
        active = true
        if changed || !wasActive { flips.needModeset(full: true) }
        logger.info("output ready", metadata: meta.merging(["drm.crtc": "\(crtc.id)", "drm.buffers": "\(buffers.count)",
                                                            "drm.rotation": "\(rotation)"]) { a, _ in a })
        if announce && (changed || !wasActive) { onEvent?(.needsFullRedraw) }
    }

    private func deactivate(announce: Bool) {
        let was = active
        active = false
        flips.needModeset(full: true)
        if let r = retryTimer { loop.cancel(r); retryTimer = nil }
        if was && announce { onEvent?(.inactive) }
    }

    /// First frame: `drmModeSetCrtc`, or an atomic commit with ALLOW_MODESET (mode blob, ACTIVE, plane).
    private func modeset(_ buffer: DumbBuffer) throws {
        guard let device, let output else { return }
        let what = "\(device.path) \(output.connector.name) \(output.mode)"
        guard var raw = output.mode.raw else { throw KioskError.display("\(what): mode has no kernel record") }
        if device.atomic, let p = output.props {
            if modeBlob != 0 { _ = drmModeDestroyPropertyBlob(device.fd, modeBlob); modeBlob = 0 }
            var blob: UInt32 = 0
            if drmModeCreatePropertyBlob(device.fd, &raw, MemoryLayout<drmModeModeInfo>.size, &blob) != 0 {
                let e = errno
                throw KioskError.display("\(what): cannot create the mode blob: \(String(cString: strerror(e)))", errno: e)
            }
            modeBlob = blob
            let w = UInt64(buffer.size.width), h = UInt64(buffer.size.height)
            let req = AtomicRequest()
            req.add(output.connector.id, p.connectorCrtcID, UInt64(output.crtc.id))
            req.add(output.crtc.id, p.crtcModeID, UInt64(blob))
            req.add(output.crtc.id, p.crtcActive, isBlanked ? 0 : 1)
            req.add(p.plane, p.planeFbID, UInt64(buffer.fbID))
            req.add(p.plane, p.planeCrtcID, UInt64(output.crtc.id))
            req.add(p.plane, p.srcX, 0); req.add(p.plane, p.srcY, 0)
            req.add(p.plane, p.srcW, w << 16); req.add(p.plane, p.srcH, h << 16)
            req.add(p.plane, p.crtcX, 0); req.add(p.plane, p.crtcY, 0)
            req.add(p.plane, p.crtcW, w); req.add(p.plane, p.crtcH, h)
            do {
                try req.commit(fd: device.fd, flags: UInt32(DRM_MODE_ATOMIC_ALLOW_MODESET), what: "\(what): mode set refused")
            } catch {
                logger.error("\(error)", metadata: meta)
                throw error
            }
        } else {
            var conn = output.connector.id
            if drmModeSetCrtc(device.fd, output.crtc.id, buffer.fbID, 0, 0, &conn, 1, &raw) != 0 {
                let e = errno
                let err = KioskError.display("\(what): mode set refused (drmModeSetCrtc): \(String(cString: strerror(e)))", errno: e)
                logger.error("\(err)", metadata: meta)
                throw err
            }
            if isBlanked, let dpms = DRMProperties.read(fd: device.fd, object: output.connector.id, type: .connector)["DPMS"] {
                _ = drmModeConnectorSetProperty(device.fd, output.connector.id, dpms.id, UInt64(DRM_MODE_DPMS_OFF))
            }
        }
        modesetCount += 1
        logger.info("mode set", metadata: meta)
    }

    /// Queues a flip to buffer `index` with an event (`drmModePageFlip` or a non-blocking atomic commit).
    /// EBUSY (a previous flip still pending in the kernel) is retried shortly; other errors throw.
    private func flip(to index: Int) throws {
        guard let device, let output else { return }
        let buffer = buffers[index]
        let user = Unmanaged.passUnretained(self).toOpaque()
        var rc: Int32
        if device.atomic, let p = output.props {
            let req = AtomicRequest()
            req.add(p.plane, p.planeFbID, UInt64(buffer.fbID))
            req.add(p.plane, p.planeCrtcID, UInt64(output.crtc.id))
            rc = req.commitRaw(fd: device.fd, flags: UInt32(DRM_MODE_PAGE_FLIP_EVENT) | UInt32(DRM_MODE_ATOMIC_NONBLOCK), user: user)
        } else {
            rc = drmModePageFlip(device.fd, output.crtc.id, buffer.fbID, UInt32(DRM_MODE_PAGE_FLIP_EVENT), user)
        }
        if rc == 0 {
            flips.flipQueued(index)
            retryAttempts = 0
            return
        }
        let e = errno
        if e == EBUSY && retryAttempts < 100 {
            busyRetries += 1
            retryAttempts += 1
            logger.debug("page flip busy; retrying", metadata: meta)
            retryTimer = try loop.schedule(after: 2_000_000) { [weak self] _ in
                guard let self else { return }
                self.retryTimer = nil
                guard self.active, self.hasMaster else { return }
                do { try self.flip(to: index) } catch {
                    self.logger.error("page flip failed: \(error)", metadata: self.meta)
                }
            }
            return
        }
        retryAttempts = 0
        // The buffer was drawn but not shown: it must get everything again next time.
        flips.frameFailed(index)
        let err = KioskError.display("\(device.path) \(output.connector.name): page flip refused: \(String(cString: strerror(e)))", errno: e)
        logger.error("\(err)", metadata: meta)
        if e == EINVAL || e == ENOENT || e == ENOSPC { flips.needModeset(full: false) }
        throw err
    }

    /// Called by `drmHandleEvent` for DRM_EVENT_FLIP_COMPLETE.
    private func flipCompleted() {
        pageFlipCount += 1
        flips.flipCompleted()
        if active && hasMaster && !isBlanked { onEvent?(.ready) }
    }

    /// Reads pending DRM events (`drmHandleEvent`) when the fd is readable.
    private func handleDRMEvents() {
        guard let device else { return }
        if drmHandleEvent(device.fd, &eventContext) != 0 && errno != EAGAIN {
            logger.debug("drmHandleEvent failed: \(String(cString: strerror(errno)))", metadata: meta)
        }
    }

    /// Waits (bounded) for a queued flip's event, dispatching it.
    private func waitForFlip(timeoutMs: Int32) {
        guard let device else { return }
        let deadline = nowNanos() + Int64(timeoutMs) * 1_000_000
        while !flips.canBegin {
            let left = Int32(max(0, (deadline - nowNanos()) / 1_000_000))
            var pfd = pollfd(fd: device.fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, left) <= 0 { break }
            handleDRMEvents()
        }
        if !flips.canBegin {
            logger.warning("page flip event did not arrive within \(timeoutMs) ms", metadata: meta)
            flips.abandonFlip()
        }
    }

    private func restoreSavedCrtc(_ device: DRMDevice) {
        guard let s = saved, hasMaster || device.isMaster else { return }
        var conn = s.connector
        let rc: Int32
        if s.fb != 0, var mode = s.mode {
            rc = drmModeSetCrtc(device.fd, s.crtc, s.fb, s.x, s.y, &conn, 1, &mode)
        } else {
            rc = drmModeSetCrtc(device.fd, s.crtc, 0, 0, 0, nil, 0, nil)
        }
        if rc != 0 {
            logger.warning("could not restore the CRTC found at start: \(String(cString: strerror(errno)))",
                           metadata: meta.merging(["drm.crtc": "\(s.crtc)", "drm.fb": "\(s.fb)"]) { a, _ in a })
        } else {
            logger.info("restored the CRTC found at start", metadata: meta.merging(["drm.fb": "\(s.fb)"]) { a, _ in a })
        }
    }

    private func freeBuffers() {
        for b in buffers { b.destroy() }
        buffers.removeAll()
    }

    /// Frees everything tied to the open device and closes it (drops master first).
    private func teardown() {
        if let r = retryTimer { loop.cancel(r); retryTimer = nil }
        freeBuffers()
        if let w = drmWatch { loop.unwatch(w); drmWatch = nil }
        if let device {
            if modeBlob != 0 { _ = drmModeDestroyPropertyBlob(device.fd, modeBlob); modeBlob = 0 }
            if device.isMaster { device.dropMaster() }
            device.close()
        }
        device = nil
        output = nil
        active = false
        flips.needModeset(full: true)
    }

    // MARK: Hotplug

    /// Starts a udev monitor on the drm subsystem (`udev_monitor_new_from_netlink`) watched by the loop.
    private func startMonitor() {
        guard let u = udev_new() else { logger.warning("udev_new failed: no hotplug"); return }
        guard let m = udev_monitor_new_from_netlink(u, "udev") else {
            udev_unref(u)
            logger.warning("udev monitor unavailable: no hotplug")
            return
        }
        udev_monitor_filter_add_match_subsystem_devtype(m, "drm", nil)
        udev_monitor_enable_receiving(m)
        udev = u
        monitor = m
        do {
            monitorWatch = try loop.watch(fd: udev_monitor_get_fd(m)) { [weak self] in self?.handleUdev() }
        } catch {
            logger.warning("cannot watch the udev monitor: \(error)")
        }
    }

    private func stopMonitor() {
        if let w = monitorWatch { loop.unwatch(w); monitorWatch = nil }
        if let m = monitor { udev_monitor_unref(m); monitor = nil }
        if let u = udev { udev_unref(u); udev = nil }
    }

    private func handleUdev() {
        guard let m = monitor else { return }
        while let dev = udev_monitor_receive_device(m) {
            defer { udev_device_unref(dev) }
            let action = udev_device_get_action(dev).map { String(cString: $0) } ?? ""
            guard let nodeC = udev_device_get_devnode(dev) else { continue }
            let node = String(cString: nodeC)
            let sysname = udev_device_get_sysname(dev).map { String(cString: $0) } ?? ""
            guard sysname.hasPrefix("card") else { continue }
            hotplug(action: action, node: node)
        }
    }

    /// Follows a udev event on a DRM primary node.
    func hotplug(action: String, node: String) {
        logger.info("udev drm event", metadata: ["udev.action": "\(action)", "drm.node": "\(node)"])
        switch action {
        case "remove":
            guard let device, device.path == node else { return }
            logger.warning("DRM device removed; waiting for it to come back", metadata: meta)
            let was = active
            teardown()
            saved = nil
            if was { onEvent?(.inactive) }
        case "add", "change":
            if let device {
                guard device.path == node, hasMaster else { return }
                do { try configure(announce: true) } catch {
                    logger.error("reconfiguring after hotplug failed: \(error)", metadata: meta)
                    deactivate(announce: true)
                }
            } else if options.device == nil || options.device == node {
                do {
                    try open(path: node)
                    try configure(announce: true)
                } catch {
                    logger.error("using \(node) after hotplug failed: \(error)", metadata: ["drm.node": "\(node)"])
                    teardown()
                }
            }
        default:
            break
        }
    }
}
