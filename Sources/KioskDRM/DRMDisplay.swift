#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import KioskCore
import Logging
import KioskPosix

/// A DRM/KMS output (a head of a `DRMCard`): the policy of what to show and when. Frames are
/// copied (damage × buffer age, turned by `rotation`) into scan-out buffers; the first frame goes
/// out by a mode set and the next ones by page flips with events, paced by this head's own
/// vertical blank; a busy flip is retried; the panel blanks. The card it belongs to owns the
/// device (DRM master, hotplug, the CRTC each head drives, the CRTCs given back at the end);
/// `init(options:…)` makes a card of its own with this one head. Everything the kernel does goes
/// through a `KMSDevice` (atomic or legacy, or a fake in tests).
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
    public internal(set) var lastCopiedPixels = 0
    /// Flips the kernel refused with EBUSY and that were retried.
    public private(set) var busyRetries: UInt64 = 0
    /// Frames the kernel completed (mode sets and flip events) over the last minute.
    private var shown = ShownFrameLog()
    /// The latest flip that never completed, until a frame completes again.
    private var flipError: String?

    public var shownFrames: ShownFrames? {
        ShownFrames(lastRealtimeNs: shown.lastRealtimeNs, lastMinute: shown.lastMinute(now: scheduler.now(.monotonic)), error: flipError, pendingSinceNs: shown.pendingSinceNs)
    }
    /// Whether atomic modesetting is in use (false: legacy SetCrtc/PageFlip/DPMS).
    public var usesAtomic: Bool { device?.apiName == "atomic" }

    /// How long a flip refused with EBUSY waits before it is tried again, and how often.
    static let busyRetryDelayNs: Int64 = 2_000_000
    static let busyRetryLimit = 100
    /// How long a queued flip may wait for its event before it is given up (a lost event must
    /// not stop the display for good).
    static let flipEventTimeoutNs: Int64 = 2_000_000_000

    /// The connector asked for (nil: the first connected one no other head took).
    let outputName: String?
    private let bufferCount: Int
    let modeRequest: ModeRequest?
    private let scheduler: any Scheduler
    private var logger: Logger

    /// The card this head belongs to. A card made with `DRMCard.init` owns its heads (this link
    /// is weak); a display made with `init(options:…)` owns its private card (`ownCard`).
    weak var card: DRMCard?
    private var ownCard: DRMCard?
    var device: (any KMSDevice)? { card?.device }
    private var hasMaster: Bool { card?.hasMaster ?? false }

    /// The connector → CRTC → plane chain and mode this head drives (kept while inactive, to
    /// tell a change from a return).
    private(set) var output: KMSOutput?
    /// The scan-out buffers of the current mode size, indexed as `flips` counts them.
    var buffers: [any ScanoutBuffer] = []
    /// The buffers the kernel holds and what is in flight.
    var held = Held.idle(onScreen: nil)
    var flips = FlipScheduler(count: 2, logicalSize: Size(width: 1, height: 1))
    private(set) var active = false
    /// `shutdown()` was called: the head shows nothing more and its card gives its CRTC back.
    private(set) var isShutDown = false

    /// Opens the device and picks the output (udev enumeration, the kernel's KMS objects) and
    /// follows hotplug on `loop`. See `init(options:scheduler:backend:logger:)`.
    public convenience init(options: DRMOptions, loop: any KioskLoop, logger: Logger) throws {
        try self.init(options: options, scheduler: loop, backend: .kernel(loop: loop), logger: logger)
    }

    /// Opens the device through `backend` and picks the output; timers run on `scheduler`: a
    /// `DRMCard` of its own with this display as its one head. Does not throw when nothing is
    /// connected (or no device exists yet): it stays inactive and follows hotplug. Throws for bad
    /// options (unknown output or mode), permission and capability errors.
    public convenience init(options: DRMOptions, scheduler: any Scheduler, backend: KMSBackend, logger: Logger) throws {
        try DRMCard.checkBuffers(options.buffers)
        try self.init(head: DRMHeadOptions(output: options.output, mode: options.mode, rotation: options.rotation),
                      buffers: options.buffers, scheduler: scheduler, logger: logger)
        ownCard = try DRMCard(device: options.device, api: options.api, heads: [self], ownsHeads: false,
                              scheduler: scheduler, backend: backend, logger: logger)
    }

    /// A head not yet on a card; throws for a bad mode.
    init(head: DRMHeadOptions, buffers: Int, scheduler: any Scheduler, logger: Logger) throws {
        outputName = head.output
        rotation = head.rotation
        bufferCount = buffers
        modeRequest = try head.mode.map { try ModeRequest(parsing: $0) }
        self.scheduler = scheduler
        self.logger = logger
    }

    deinit {
        if !isShutDown { shutdown() }
    }

    /// Whether a node that appears while this display's card has no device is its device
    /// again, under another card number (`DRMCard.takes`); nil: only the node it was made for.
    public var takesDevice: ((_ node: String) -> Bool)? {
        get { card?.takes }
        set { card?.takes = newValue }
    }

    // MARK: DisplayOutput

    public var displayDescription: String {
        guard let device else { return "drm (no device)" }
        // The connector is kept while its display is away (to tell a change from a return), but
        // nothing is connected; while another session holds the device it is still this one.
        guard let output, active || !hasMaster else { return "\(device.path) (no connected output)" }
        return "\(device.path) \(output.connector.name) \(output.mode)\(rotation == .r0 ? "" : " rotated \(rotation)") \(device.apiName)"
    }

    public var connectorName: String? { output?.connector.name }

    public var logicalSize: Size? {
        guard active, let output else { return nil }
        return rotation.logicalSize(physical: output.mode.size)
    }

    public var canPresent: Bool {
        guard active, hasMaster, !isBlanked, output != nil, case .idle = held else { return false }
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

    /// The logical-size frame lent for partial frames and on a turned output (DRMDisplay+Lending.swift).
    let copied = CopiedFrame()

    /// Shows buffer `index`, filled with the frame: a mode set (first frame) or a page flip.
    func submit(index: Int, modeset: Bool) throws {
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
            held = .idle(onScreen: back)
            modesetCount += 1
            frameShown()
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
        card?.waitForFlips(of: [self], timeoutMs: 500)
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

    /// Stops this head for good. Its card gives back every CRTC found at start (framebuffer,
    /// mode and connector, so the console comes back), frees the buffers and drops DRM master once
    /// all its heads are shut down — at once for a display made with `init(options:…)`.
    public func shutdown() {
        guard !isShutDown else { return }
        card?.shutDown(self)
    }

    // MARK: VT / session hand-over (plain master handling)

    /// Gives the device to another session (VT switch away): `DRMCard.releaseMaster()` of the
    /// card, which stops every head of it.
    public func releaseMaster() {
        card?.releaseMaster()
    }

    /// Takes the device back (VT switch back): `DRMCard.acquireMaster()` of the card, a full mode
    /// set and repaint of every head.
    public func acquireMaster() throws {
        try card?.acquireMaster()
    }

    // MARK: Internals

    /// The framebuffers the display believes the kernel holds: on screen and queued.
    var scanout: (onScreen: UInt32?, queued: UInt32?) { (held.onScreen?.fbID, held.queued?.fbID) }

    /// The CRTC a queued flip of this head goes to (its event completes it), if one is queued.
    var queuedFlipCRTC: UInt32? {
        if case .queued(_, _, let crtc, _) = held { return crtc }
        return nil
    }

    var meta: Logger.Metadata {
        var m: Logger.Metadata = [:]
        if let device { m["drm.device"] = "\(device.path)" }
        if let output {
            m["drm.connector"] = "\(output.connector.name)"
            m["drm.mode"] = "\(output.mode)"
        }
        return m
    }

    /// Drives `next` (connector, CRTC, mode and plane the card chose) from now on: checks it with
    /// the device and (re)allocates buffers when the size changed. `announce`: tell the scene
    /// manager (.needsFullRedraw) when it changed or the head was inactive.
    func apply(_ next: KMSOutput, device: any KMSDevice, announce: Bool) throws {
        try device.prepare(next)
        let mode = next.mode
        let sizeChanged = output.map { $0.mode.size != mode.size } ?? true
        let changed = output.map { $0.connector.id != next.connector.id || $0.mode != mode || $0.crtc.id != next.crtc.id } ?? true
        output = next
        let replaced = sizeChanged || buffers.isEmpty
        if replaced {
            // The set is replaced; `held` keeps the buffers the kernel still reads.
            buffers.removeAll()
            let what = "\(device.path) \(next.connector.name)"
            for _ in 0..<bufferCount {
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
        logger.info("output ready", metadata: meta.merging(["drm.crtc": "\(next.crtc.id)", "drm.buffers": "\(buffers.count)",
                                                            "drm.rotation": "\(rotation)"]) { a, _ in a })
        if announce && (changed || !wasActive) { onEvent?(.needsFullRedraw) }
    }

    /// Stops presenting until the card configures this head again; the next frame sets the mode.
    func deactivate(announce: Bool) {
        let was = active
        active = false
        flips.needModeset(full: true)
        cancelRetry()
        if was && announce { onEvent?(.inactive) }
    }

    /// The next frame sets the mode again with a complete picture (DRM master taken back).
    func needFullModeset() {
        flips.needModeset(full: true)
    }

    /// Presents nothing more (`shutdown()`); the card gives the CRTCs back.
    func markShutDown() {
        isShutDown = true
        deactivate(announce: false)
    }

    private func cancelRetry() {
        if case .retrying(let onScreen, _, let timer, _) = held {
            scheduler.cancel(timer)
            held = .idle(onScreen: onScreen)
        }
    }

    /// Queues a flip to buffer `index` with an event (`attempt`: how often it was tried). EBUSY
    /// (a previous flip still pending in the kernel) is retried shortly; other errors throw.
    private func flip(to index: Int, attempt: Int = 1) throws {
        guard let device, let output else { return }
        let buffer = buffers[index]
        let onScreen = held.onScreen
        do {
            try device.flip(output, to: buffer)
        } catch let error as KioskError where error.errno == EBUSY && attempt <= Self.busyRetryLimit {
            busyRetries += 1
            logger.debug("page flip busy; retrying", metadata: meta)
            let timer = try scheduler.schedule(after: Self.busyRetryDelayNs) { [weak self] _ in
                guard let self, case .retrying(let onScreen, _, _, _) = self.held else { return }
                self.held = .idle(onScreen: onScreen)
                guard self.active, self.hasMaster else { return }
                do { try self.flip(to: index, attempt: attempt + 1) } catch {
                    self.logger.error("page flip failed: \(error)", metadata: self.meta)
                }
            }
            held = .retrying(onScreen: onScreen, index: index, timer: timer, attempts: attempt)
            return
        } catch {
            // The buffer was drawn but not shown: it must get everything again next time.
            flips.frameFailed(index)
            if let e = (error as? KioskError)?.errno, e == EINVAL || e == ENOENT || e == ENOSPC { flips.needModeset(full: false) }
            refused(error)
            throw error
        }
        flips.flipQueued(index)
        shown.submitted(monotonicNs: scheduler.now(.monotonic))
        let watchdog = try? scheduler.schedule(after: Self.flipEventTimeoutNs) { [weak self] _ in
            guard let self, self.held.queued != nil else { return }
            self.abandonFlip(after: Self.flipEventTimeoutNs / 1_000_000)
            if self.active && self.hasMaster && !self.isBlanked { self.onEvent?(.ready) }
        }
        held = .queued(onScreen: onScreen, buffer: buffer, crtc: output.crtc.id, watchdog: watchdog)
    }

    /// The queued flip's event did not come within `ms`: the old front stays what we consider
    /// on screen, the frame is lost.
    func abandonFlip(after ms: Int64) {
        guard case .queued(let onScreen, _, _, let watchdog) = held else { return }
        // An error line once per episode (until a frame completes again), not once per frame.
        if flipError == nil { logger.error("page flip event did not arrive within \(ms) ms; the panel may not show the latest frames", metadata: meta) }
        flipError = "a page flip of \(output?.name ?? "the output") did not complete within \(ms) ms "
            + "(at \(ShownFrames.utc(scheduler.now(.realtime)))); the panel may not show the latest frames"
        if let watchdog { scheduler.cancel(watchdog) }
        held = .idle(onScreen: onScreen)
        flips.abandonFlip()
    }

    /// After the kernel refused a change: EACCES/EPERM while the device says we are no longer
    /// master means another client took it (a session switch we were not told about) — the
    /// card stops presenting on every head until `acquireMaster()`.
    private func refused(_ error: Error) {
        guard let device, let e = (error as? KioskError)?.errno, e == EACCES || e == EPERM, !device.isMaster else { return }
        card?.lostMaster()
    }

    /// A page flip's event arrived: its buffer is on screen, the one it replaced may be freed.
    func flipCompleted() {
        pageFlipCount += 1
        if case .queued(_, let buffer, _, let watchdog) = held {
            if let watchdog { scheduler.cancel(watchdog) }
            held = .idle(onScreen: buffer)
            frameShown()
        }
        flips.flipCompleted()
        if active && hasMaster && !isBlanked { onEvent?(.ready) }
    }

    /// A frame reached the panel (a mode set returned, a flip's event came).
    private func frameShown() {
        if flipError != nil { logger.notice("page flips complete again", metadata: meta) }
        shown.record(monotonicNs: scheduler.now(.monotonic), realtimeNs: scheduler.now(.realtime))
        flipError = nil
    }

    /// Lets go of everything tied to the open device (the device itself is the card's).
    func detach() {
        cancelRetry()
        if case .queued(_, _, _, let watchdog?) = held { scheduler.cancel(watchdog) }
        held = .idle(onScreen: nil)
        buffers.removeAll()
        output = nil
        active = false
        flips.needModeset(full: true)
    }
}
