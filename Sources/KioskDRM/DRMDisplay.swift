#if canImport(Glibc)
import Glibc
#endif
import CKioskShims
import KioskCore
import Logging
import KioskPosix

/// A DRM/KMS output: the policy of what to show and when. Frames are copied (damage × buffer
/// age, turned by `rotation`) into scan-out buffers; the first frame goes out by a mode set and
/// the next ones by page flips with events; a busy flip is retried; hotplug reconfigures; the
/// panel blanks; the CRTC found at start is given back. Everything the kernel does goes through
/// a `KMSDevice` (atomic or legacy, or a fake in tests).
///
/// Buffers the kernel may still read — the one on screen and the one a queued flip goes to —
/// are held until they leave the screen, even when a resize replaced the set they came from.
public final class DRMDisplay: DisplayOutput {
    public var onEvent: ((DisplayEvent) -> Void)?
    public let rotation: Rotation
    public private(set) var isBlanked = false
    /// Flip-complete events received (page-flip events read from the device).
    public private(set) var pageFlipCount: UInt64 = 0
    /// Frames that went out through a mode set (first frame, after hotplug or VT return).
    public private(set) var modesetCount: UInt64 = 0
    /// Pixels copied from the frame into the back buffer by the last `present` (damage × buffer age).
    public private(set) var lastCopiedPixels = 0
    /// Flips the kernel refused with EBUSY and that were retried.
    public private(set) var busyRetries: UInt64 = 0
    /// Whether atomic modesetting is in use (false: legacy SetCrtc/PageFlip/DPMS).
    public var usesAtomic: Bool { device?.apiName == "atomic" }

    /// How long a flip refused with EBUSY waits before it is tried again, and how often.
    static let busyRetryDelayNs: Int64 = 2_000_000
    static let busyRetryLimit = 100
    /// How long a queued flip may wait for its event before it is given up (a lost event must
    /// not stop the display for good).
    static let flipEventTimeoutNs: Int64 = 2_000_000_000

    private let options: DRMOptions
    private let modeRequest: ModeRequest?
    private let scheduler: any Scheduler
    private let backend: KMSBackend
    private var logger: Logger

    private var device: (any KMSDevice)?
    private var hotplugMonitor: AnyObject?
    private var output: KMSOutput?
    /// The scan-out buffers of the current mode size, indexed as `flips` counts them.
    private var buffers: [any ScanoutBuffer] = []
    /// The buffer the kernel scans out (set by a mode set or a completed flip).
    private var onScreen: (any ScanoutBuffer)?
    /// The buffer a queued flip goes to, until its event arrives.
    private var queued: (any ScanoutBuffer)?
    var flips = FlipScheduler(count: 2, logicalSize: Size(width: 1, height: 1))
    private var active = false
    private var hasMaster = true
    /// A flip refused with EBUSY, to try again: its timer and the buffer it shows.
    private var retry: (timer: TimerID, index: Int)?
    private var retryAttempts = 0
    /// Gives a queued flip up when its event does not come.
    private var flipWatchdog: TimerID?
    private var isShutDown = false
    /// CRTC state found before the first mode set, restored by `shutdown()`.
    private var saved: SavedCrtc?

    /// Opens the device and picks the output (udev enumeration, the kernel's KMS objects) and
    /// follows hotplug on `loop`. See `init(options:scheduler:backend:logger:)`.
    public convenience init(options: DRMOptions, loop: EventLoop, logger: Logger) throws {
        try self.init(options: options, scheduler: loop, backend: .kernel(loop: loop), logger: logger)
    }

    /// Opens the device through `backend` and picks the output; timers run on `scheduler`. Does
    /// not throw when nothing is connected (or no device exists yet): it stays inactive and
    /// follows hotplug. Throws for bad options (unknown output or mode), permission and
    /// capability errors.
    public init(options: DRMOptions, scheduler: any Scheduler, backend: KMSBackend, logger: Logger) throws {
        guard options.buffers == 2 || options.buffers == 3 else {
            throw KioskError.config("display buffers = \(options.buffers): must be 2 or 3")
        }
        self.options = options
        self.rotation = options.rotation
        self.scheduler = scheduler
        self.backend = backend
        self.logger = logger
        self.modeRequest = try options.mode.map { try ModeRequest(parsing: $0) }
        hotplugMonitor = backend.followHotplug(logger) { [weak self] action, node in self?.hotplug(action: action, node: node) }
        guard let path = options.device ?? backend.pickDevice() else {
            logger.warning("no DRM device on seat0 yet; waiting for one to appear", metadata: ["drm.api": "\(options.api)"])
            return
        }
        do {
            try open(path: path)
            try configure(announce: false)
        } catch {
            teardown()
            hotplugMonitor = nil
            throw error
        }
    }

    deinit {
        if !isShutDown { shutdown() }
    }

    // MARK: DisplayOutput

    public var displayDescription: String {
        guard let device else { return "drm (no device)" }
        guard let output else { return "\(device.path) (no connected output)" }
        return "\(device.path) \(output.connector.name) \(output.mode)\(rotation == .r0 ? "" : " rotated \(rotation)") \(device.apiName)"
    }

    public var logicalSize: Size? {
        guard active, let output else { return nil }
        return rotation.logicalSize(physical: output.mode.size)
    }

    public var canPresent: Bool {
        guard active, hasMaster, !isBlanked, output != nil, retry == nil, queued == nil else { return false }
        return flips.canBegin
    }

    /// Copies the damaged parts of `frame` (plus what the back buffer missed) into the back buffer,
    /// turned by `rotation`, then sets the mode (first frame) or queues a page flip with an event.
    /// While presenting is not possible the damage is remembered and copied by the next present.
    public func present(_ frame: PixelBuffer, damage: Damage) throws {
        guard let output, let device else { flips.remember(damage); return }
        let logical = rotation.logicalSize(physical: output.mode.size)
        guard frame.size == logical else {
            throw KioskError.display("\(device.path) \(output.connector.name): frame is \(frame.size) but the output lays out \(logical)")
        }
        guard canPresent, let job = flips.beginFrame(damage) else { flips.remember(damage); return }
        let target = buffers[job.index].pixels
        for r in job.copy.rects {
            blit(frame, into: target, rect: r, rotation: rotation)
        }
        lastCopiedPixels = job.copy.area
        try submit(index: job.index, modeset: job.modeset)
    }

    /// The back buffer itself, for a frame drawn straight into it (no copy): only when the
    /// output is not turned. The frame covers the whole screen, so the buffer's age does not
    /// matter, and the other buffers will miss all of it.
    func beginFullFrame() -> PixelBuffer? {
        guard rotation == .r0, output != nil, device != nil, canPresent,
              let job = flips.beginFrame(Damage.full(flips.logicalSize)) else { return nil }
        lent = (job.index, job.modeset)
        lastCopiedPixels = 0
        return buffers[job.index].pixels
    }

    func presentFullFrame() throws {
        guard let job = lent else { throw KioskError.display("presentFullFrame() without beginFullFrame()") }
        lent = nil
        guard output != nil, device != nil, job.index < buffers.count else {
            throw KioskError.display("the output went away while a frame was drawn into its buffer")
        }
        try submit(index: job.index, modeset: job.modeset)
    }

    /// The buffer lent by `beginFullFrame()` and whether it goes out by mode set.
    var lent: (index: Int, modeset: Bool)?
    /// The logical-size frame lent for partial frames and on a turned output (DRMDisplay+Lending.swift).
    let copied = CopiedFrame()

    /// Shows buffer `index`, filled with the frame: a mode set (first frame) or a page flip.
    private func submit(index: Int, modeset: Bool) throws {
        guard let output, let device else { return }
        let back = buffers[index]
        let job = (index: index, modeset: modeset)
        if job.modeset {
            do {
                try device.modeset(output, buffer: back, active: !isBlanked)
            } catch {
                flips.frameFailed(job.index)
                refused(error)
                throw error
            }
            onScreen = back
            modesetCount += 1
            logger.info("mode set", metadata: meta)
            flips.shownByModeset(job.index)
            scheduler.deferToEndOfIteration { [weak self] in
                guard let self, self.active else { return }
                self.onEvent?(.ready)
            }
        } else {
            try flip(to: job.index)
        }
    }

    /// Blanks (true) or unblanks the panel, keeping mode and picture. Waits for a queued flip first.
    public func setBlanked(_ blanked: Bool) throws {
        guard blanked != isBlanked else { return }
        guard let device, let output, active, hasMaster, flips.front != nil else {
            // Nothing on screen: remember the wish; the next mode set honours it.
            isBlanked = blanked
            return
        }
        waitForFlip(timeoutMs: 500)
        do {
            try device.setActive(output, !blanked)
        } catch {
            refused(error)
            throw error
        }
        isBlanked = blanked
        logger.info("display \(blanked ? "blanked" : "unblanked")", metadata: meta)
        if !blanked {
            scheduler.deferToEndOfIteration { [weak self] in
                guard let self, self.active else { return }
                self.onEvent?(.ready)
            }
        }
    }

    /// Gives back the CRTC found at start (its framebuffer, mode and connector) so the console
    /// comes back, frees the buffers and drops DRM master.
    public func shutdown() {
        guard !isShutDown else { return }
        isShutDown = true
        hotplugMonitor = nil
        if device != nil {
            waitForFlip(timeoutMs: 500)
            restoreSavedCrtc()
        }
        teardown()
    }

    // MARK: VT / session hand-over (plain master handling)

    /// Gives the device to another session (VT switch away): waits for a queued flip, drops DRM
    /// master and stops presenting until `acquireMaster()`.
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

    /// Takes the device back (VT switch back): DRM master, then a full mode set and repaint.
    public func acquireMaster() throws {
        guard let device, !hasMaster else { return }
        try device.setMaster()
        hasMaster = true
        flips.needModeset(full: true)
        logger.info("acquired DRM master", metadata: meta)
        try configure(announce: true)
    }

    // MARK: Listing

    /// `DRMOutputs.list(device:)`: the connectors and modes of `device` (every seat0 device when nil).
    public static func listOutputs(device: String?) throws -> String {
        try DRMOutputs.list(device: device)
    }

    /// `DRMOutputs.describe(_:)`.
    public static func describe(_ res: DRMResources) -> String {
        DRMOutputs.describe(res)
    }

    // MARK: Internals

    /// The framebuffers the display believes the kernel holds: on screen and queued.
    var scanout: (onScreen: UInt32?, queued: UInt32?) { (onScreen?.fbID, queued?.fbID) }

    private var meta: Logger.Metadata {
        var m: Logger.Metadata = [:]
        if let device { m["drm.device"] = "\(device.path)" }
        if let output {
            m["drm.connector"] = "\(output.connector.name)"
            m["drm.mode"] = "\(output.mode)"
        }
        return m
    }

    private func open(path: String) throws {
        let dev = try backend.open(path, options.api)
        if !dev.isMaster {
            do { try dev.setMaster() } catch {
                logger.warning("\(error)", metadata: ["drm.device": "\(path)"])
            }
        }
        hasMaster = dev.isMaster
        try dev.watchEvents { [weak self] in self?.handleDRMEvents() }
        device = dev
        logger.info("opened DRM device", metadata: ["drm.device": "\(path)", "drm.api": "\(dev.apiName)",
                                                    "drm.master": "\(hasMaster)"])
    }

    /// Picks connector, mode, CRTC and plane from a fresh snapshot and (re)allocates buffers.
    /// `announce`: tell the scene manager (.needsFullRedraw / .inactive) about changes.
    private func configure(announce: Bool) throws {
        guard let device else { return }
        let res = try device.snapshot()
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
        let next = KMSOutput(connector: connector, crtc: crtc, mode: mode, plane: plane)
        try device.prepare(next)
        if saved == nil {
            saved = SavedCrtc(crtc: crtc.id, fb: crtc.bufferID, x: UInt32(crtc.x), y: UInt32(crtc.y), mode: crtc.mode,
                              connector: connector.id)
        }
        let sizeChanged = output.map { $0.mode.size != mode.size } ?? true
        let changed = output.map { $0.connector.id != connector.id || $0.mode != mode || $0.crtc.id != crtc.id } ?? true
        output = next
        let replaced = sizeChanged || buffers.isEmpty
        if replaced {
            // The set is replaced; `onScreen` and `queued` keep the buffers the kernel still reads.
            buffers.removeAll()
            let what = "\(device.path) \(connector.name)"
            for _ in 0..<options.buffers {
                buffers.append(try device.makeBuffer(size: mode.size, what: what))
            }
        }
        let logical = rotation.logicalSize(physical: mode.size)
        if replaced || flips.count != buffers.count || flips.logicalSize != logical {
            flips = FlipScheduler(count: buffers.count, logicalSize: logical)
        }
        let wasActive = active
        active = true
        if changed || !wasActive {
            flips.needModeset(full: true)
            cancelRetry()
        }
        logger.info("output ready", metadata: meta.merging(["drm.crtc": "\(crtc.id)", "drm.buffers": "\(buffers.count)",
                                                            "drm.rotation": "\(rotation)"]) { a, _ in a })
        if announce && (changed || !wasActive) { onEvent?(.needsFullRedraw) }
    }

    private func deactivate(announce: Bool) {
        let was = active
        active = false
        flips.needModeset(full: true)
        cancelRetry()
        if was && announce { onEvent?(.inactive) }
    }

    private func cancelRetry() {
        if let r = retry { scheduler.cancel(r.timer); retry = nil }
        retryAttempts = 0
    }

    /// Queues a flip to buffer `index` with an event. EBUSY (a previous flip still pending in
    /// the kernel) is retried shortly; other errors throw.
    private func flip(to index: Int) throws {
        guard let device, let output else { return }
        let buffer = buffers[index]
        do {
            try device.flip(output, to: buffer)
        } catch let error as KioskError where error.errno == EBUSY && retryAttempts < Self.busyRetryLimit {
            busyRetries += 1
            retryAttempts += 1
            logger.debug("page flip busy; retrying", metadata: meta)
            let timer = try scheduler.schedule(after: Self.busyRetryDelayNs) { [weak self] _ in
                guard let self else { return }
                self.retry = nil
                guard self.active, self.hasMaster else { return }
                do { try self.flip(to: index) } catch {
                    self.logger.error("page flip failed: \(error)", metadata: self.meta)
                }
            }
            retry = (timer, index)
            return
        } catch {
            retryAttempts = 0
            // The buffer was drawn but not shown: it must get everything again next time.
            flips.frameFailed(index)
            if let e = (error as? KioskError)?.errno, e == EINVAL || e == ENOENT || e == ENOSPC { flips.needModeset(full: false) }
            refused(error)
            throw error
        }
        queued = buffer
        flips.flipQueued(index)
        retryAttempts = 0
        flipWatchdog = try? scheduler.schedule(after: Self.flipEventTimeoutNs) { [weak self] _ in
            guard let self else { return }
            self.flipWatchdog = nil
            guard self.queued != nil else { return }
            self.abandonFlip(after: Self.flipEventTimeoutNs / 1_000_000)
            if self.active && self.hasMaster && !self.isBlanked { self.onEvent?(.ready) }
        }
    }

    /// The queued flip's event did not come within `ms`: the old front stays what we consider
    /// on screen, the frame is lost.
    private func abandonFlip(after ms: Int64) {
        logger.warning("page flip event did not arrive within \(ms) ms", metadata: meta)
        if let w = flipWatchdog { scheduler.cancel(w); flipWatchdog = nil }
        queued = nil
        flips.abandonFlip()
    }

    /// After the kernel refused a change: EACCES/EPERM while the device says we are no longer
    /// master means another client took it (a session switch we were not told about) — stop
    /// presenting until `acquireMaster()`.
    private func refused(_ error: Error) {
        guard let device, let e = (error as? KioskError)?.errno, e == EACCES || e == EPERM, !device.isMaster else { return }
        hasMaster = false
        logger.warning("lost DRM master: another client holds the device; presenting stops until it is given back", metadata: meta)
        deactivate(announce: true)
    }

    /// A page flip's event arrived: its buffer is on screen, the one it replaced may be freed.
    private func flipCompleted() {
        pageFlipCount += 1
        if let w = flipWatchdog { scheduler.cancel(w); flipWatchdog = nil }
        if let q = queued {
            onScreen = q
            queued = nil
        }
        flips.flipCompleted()
        if active && hasMaster && !isBlanked { onEvent?(.ready) }
    }

    /// Reads pending device events when they wait.
    private func handleDRMEvents() {
        guard let device else { return }
        do {
            let n = try device.dispatchEvents()
            for _ in 0..<n { flipCompleted() }
        } catch {
            logger.debug("\(error)", metadata: meta)
        }
    }

    /// Waits (bounded) for a queued flip's event, dispatching it; a signal does not cut the wait short.
    private func waitForFlip(timeoutMs: Int32) {
        guard let device else { return }
        let deadline = nowNanos() + Int64(timeoutMs) * 1_000_000
        wait: while queued != nil {
            let left = Int32(max(0, (deadline - nowNanos()) / 1_000_000))
            do {
                switch try device.waitForEvents(timeoutMs: left) {
                case .ready: handleDRMEvents()
                case .interrupted: continue wait
                case .timedOut: break wait
                }
            } catch {
                logger.warning("waiting for the page flip event failed: \(error)", metadata: meta)
                break wait
            }
        }
        if queued != nil { abandonFlip(after: Int64(timeoutMs)) }
    }

    private func restoreSavedCrtc() {
        guard let device, let s = saved, hasMaster || device.isMaster else { return }
        do {
            try device.restore(s)
            logger.info("restored the CRTC found at start", metadata: meta.merging(["drm.fb": "\(s.fb)"]) { a, _ in a })
        } catch {
            logger.warning("could not restore the CRTC found at start: \(error)",
                           metadata: meta.merging(["drm.crtc": "\(s.crtc)", "drm.fb": "\(s.fb)"]) { a, _ in a })
        }
    }

    /// Frees everything tied to the open device and lets it go (drops master first).
    private func teardown() {
        cancelRetry()
        lent = nil
        if let w = flipWatchdog { scheduler.cancel(w); flipWatchdog = nil }
        buffers.removeAll()
        queued = nil
        onScreen = nil
        if let device {
            device.unwatchEvents()
            if device.isMaster { device.dropMaster() }
        }
        device = nil
        output = nil
        active = false
        flips.needModeset(full: true)
    }

    // MARK: Hotplug

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
