#if canImport(Glibc)
import Glibc
#endif
import CKioskDRMFormats
import KioskCore
import Logging
import KioskPosix

/// What one head of a `DRMCard` shows on: its connector, mode and rotation.
public struct DRMHeadOptions: Sendable, Equatable {
    /// Connector name, e.g. "HDMI-A-1"; nil = the first connected one no other head took.
    public var output: String?
    /// "1920x1080@60" or "1920x1080"; nil = the connector's preferred mode.
    public var mode: String?
    public var rotation: Rotation

    public init(output: String? = nil, mode: String? = nil, rotation: Rotation = .r0) {
        self.output = output; self.mode = mode; self.rotation = rotation
    }
}

/// One DRM device driving several outputs: one file descriptor, DRM master, the hotplug monitor
/// and the event watch, shared by its heads (`DRMDisplay`s, each with its own connector, mode,
/// rotation, buffers and flips, paced by its own vertical blank). The card gives every connected
/// head a CRTC of its own (`DRMSelection.assignCRTCs`) at open and on every hotplug change, so
/// one head unplugged goes inactive while the others keep flipping; page-flip events go to the
/// head whose CRTC completed. `releaseMaster()`/`acquireMaster()` stop and repaint every head;
/// `shutdown()` gives back every CRTC found at start.
public final class DRMCard {
    /// The heads, in the order of the options they were made from.
    public var heads: [DRMDisplay] { members.compactMap(\.head) }

    let devicePath: String?
    let api: DRMOptions.API
    let scheduler: any Scheduler
    let backend: KMSBackend
    let logger: Logger
    private var members: [Member] = []

    /// Whether a node that appears (udev "add") while the card has no device is its device, when
    /// it is not the node the card was made for: a device named by its driver or by-path name
    /// comes back under another card number after being unbound. Nil: only that node.
    public var takes: ((_ node: String) -> Bool)?

    private(set) var device: (any KMSDevice)?
    private(set) var hasMaster = true
    private var hotplugMonitor: AnyObject?
    /// CRTC states found before the first mode set on each, restored by `shutdown()`.
    var saved: [SavedCrtc] = []
    private(set) var isShutDown = false
    /// The connectors (status and modes) the last configuration was made from, and the timer
    /// that reads them again while a head waits for one (`followConnectors()`).
    var configuredConnectors: [ConnectorState] = []
    var connectorPoll: TimerID?

    /// How often the connectors are read while a head waits for one: a connector forced on
    /// through sysfs, or one of a driver that does not poll its connectors (virtio-gpu), changes
    /// without a udev event.
    static let connectorPollNs: Int64 = 500_000_000

    /// What a connector change is told by: its status and modes (a new EDID).
    struct ConnectorState: Equatable {
        let id: UInt32
        let status: DRMConnector.Status
        let modes: [DRMMode]
        init(_ c: DRMConnector) { id = c.id; status = c.status; modes = c.modes }
    }

    /// A head as the card holds it: owned (a card made by `init(device:…heads:…)`), or weakly
    /// (the private card of a `DRMDisplay`, which owns its card).
    private struct Member {
        let owned: DRMDisplay?
        weak var borrowed: DRMDisplay?
        var head: DRMDisplay? { owned ?? borrowed }
    }

    /// The kernel's device `device` (udev's seat0 choice when nil) with `heads`, followed on `loop`.
    /// See `init(device:api:buffers:heads:scheduler:backend:logger:)`.
    public convenience init(device: String?, api: DRMOptions.API, buffers: Int, heads: [DRMHeadOptions], loop: any KioskLoop,
                            logger: Logger) throws {
        try self.init(device: device, api: api, buffers: buffers, heads: heads, scheduler: loop, backend: .kernel(loop: loop),
                      logger: logger)
    }

    /// Opens the device through `backend` and gives each connected head a connector and a CRTC;
    /// timers run on `scheduler`. Does not throw when nothing is connected (or no device exists
    /// yet): those heads stay inactive and follow hotplug. Throws for bad options (no heads, two
    /// heads naming one connector, an unknown connector or mode), when the card cannot drive
    /// every connected head at once, and for permission and capability errors.
    public convenience init(device: String?, api: DRMOptions.API, buffers: Int, heads: [DRMHeadOptions],
                            scheduler: any Scheduler, backend: KMSBackend, logger: Logger) throws {
        try Self.checkBuffers(buffers)
        guard !heads.isEmpty else { throw KioskError.config("\(device ?? "the DRM card"): no display heads configured") }
        var named: [String: Int] = [:]
        for (i, h) in heads.enumerated() {
            guard let name = h.output else { continue }
            if let first = named[name.lowercased()] {
                throw KioskError.config("display heads \(first + 1) and \(i + 1) both name output \"\(name)\"\(device.map { " on \($0)" } ?? "")")
            }
            named[name.lowercased()] = i
        }
        let made = try heads.map { try DRMDisplay(head: $0, buffers: buffers, scheduler: scheduler, logger: logger) }
        try self.init(device: device, api: api, heads: made, ownsHeads: true, scheduler: scheduler, backend: backend, logger: logger)
    }

    /// The card of `heads` (owned, or held weakly when each head owns it).
    init(device: String?, api: DRMOptions.API, heads: [DRMDisplay], ownsHeads: Bool, scheduler: any Scheduler,
         backend: KMSBackend, logger: Logger) throws {
        devicePath = device
        self.api = api
        self.scheduler = scheduler
        self.backend = backend
        self.logger = logger
        members = heads.map { Member(owned: ownsHeads ? $0 : nil, borrowed: $0) }
        for h in heads { h.card = self }
        hotplugMonitor = backend.followHotplug(logger) { [weak self] action, node in self?.hotplug(action: action, node: node) }
        guard let path = device ?? backend.pickDevice() else {
            logger.warning("no DRM device on seat0 yet; waiting for one to appear", metadata: ["drm.api": "\(api)"])
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

    /// 2 or 3 scan-out buffers a head.
    static func checkBuffers(_ n: Int) throws {
        guard n == 2 || n == 3 else { throw KioskError.config("display buffers = \(n): must be 2 or 3") }
    }

    // MARK: Master and shutdown

    /// Gives the device to another session (VT switch away): waits for queued flips, drops DRM
    /// master and stops presenting on every head until `acquireMaster()`.
    public func releaseMaster() {
        guard let device, hasMaster else { return }
        let heads = self.heads
        waitForFlips(of: heads, timeoutMs: 500)
        device.dropMaster()
        hasMaster = false
        stopFollowingConnectors()
        let was = heads.filter(\.active)
        for h in heads { h.deactivate(announce: false) }
        logger.info("released DRM master", metadata: ["drm.device": "\(device.path)"])
        for h in was { h.onEvent?(.inactive) }
    }

    /// Takes the device back (VT switch back): DRM master, then every head sets its mode again
    /// and repaints completely.
    public func acquireMaster() throws {
        guard let device, !hasMaster else { return }
        try device.setMaster()
        hasMaster = true
        for h in heads { h.needFullModeset() }
        logger.info("acquired DRM master", metadata: ["drm.device": "\(device.path)"])
        try configure(announce: true)
    }

    /// Gives back every CRTC found at start (framebuffer, mode and connector, so the console comes
    /// back on each), frees the buffers and drops DRM master.
    public func shutdown() {
        shutDown(nil)
    }

    /// Shuts `head` down (nil: every head); once no head is left running, the card shuts down.
    func shutDown(_ head: DRMDisplay?) {
        guard !isShutDown else { return }
        // A head shutting down from its deinit is no longer reachable through `members`.
        let all = heads + (head.map { h in heads.contains { $0 === h } ? [] : [h] } ?? [])
        let stopping = head.map { [$0] } ?? all
        waitForFlips(of: stopping, timeoutMs: 500)
        for h in stopping { h.markShutDown() }
        guard all.allSatisfy(\.isShutDown) else { return }
        isShutDown = true
        hotplugMonitor = nil
        // Ending under systemd with the file in its store: the picture stays for the next kioskd.
        let keep = device?.descriptor.map { backend.handover?.keepsPicture(fd: $0) ?? false } ?? false
        if keep {
            logger.info("the picture stays on the screen: systemd keeps the DRM device for the next start",
                        metadata: device.map { ["drm.device": "\($0.path)"] } ?? [:])
        } else {
            restoreSavedCrtcs()
        }
        teardown(all, keepingPicture: keep)
    }

    // MARK: Internals

    func open(path: String) throws {
        let dev = try openOrTakeKept(path)
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

    /// Picks each running head's connector (named ones first, then the one it had, then the
    /// first connected one left), a CRTC for every connected head together, then mode and plane,
    /// from a fresh snapshot. `announce`: tell the heads' scene managers about changes, and log a
    /// head's error and make that head inactive instead of throwing (hotplug, master back).
    func configure(announce: Bool) throws {
        defer { followConnectors() }
        guard let device else { return }
        let res = try device.snapshot()
        configuredConnectors = res.connectors.map(ConnectorState.init)
        let running = heads.filter { !$0.isShutDown }
        var connector: [ObjectIdentifier: DRMConnector] = [:]
        var failed: [ObjectIdentifier: Error] = [:]
        var taken = Set<UInt32>()
        for h in running where h.outputName != nil {
            do {
                if let c = try DRMSelection.connector(res.connectors, named: h.outputName, device: device.path) {
                    connector[ObjectIdentifier(h)] = c
                    taken.insert(c.id)
                }
            } catch {
                if !announce { throw error }
                failed[ObjectIdentifier(h)] = error
            }
        }
        let unnamed = running.filter { $0.outputName == nil }
        for h in unnamed {
            guard let had = h.output?.connector.id,
                  let c = res.connectors.first(where: { $0.id == had && $0.status == .connected }), !taken.contains(c.id) else { continue }
            connector[ObjectIdentifier(h)] = c
            taken.insert(c.id)
        }
        for h in unnamed where connector[ObjectIdentifier(h)] == nil {
            guard let c = try DRMSelection.connector(res.connectors, named: nil, device: device.path, taken: taken) else { continue }
            connector[ObjectIdentifier(h)] = c
            taken.insert(c.id)
        }
        let driven = running.compactMap { h -> DRMConnector? in
            guard let c = connector[ObjectIdentifier(h)], c.status == .connected, !c.modes.isEmpty else { return nil }
            return c
        }
        let match = DRMSelection.matchCRTCs(connectors: driven, encoders: res.encoders, crtcs: res.crtcs)
        if !match.unassigned.isEmpty && !announce {
            _ = try DRMSelection.assignCRTCs(connectors: driven, encoders: res.encoders, crtcs: res.crtcs, device: device.path)
        }
        func give(_ h: DRMDisplay, up error: Error) {
            logger.error("reconfiguring after hotplug failed: \(error)", metadata: h.meta)
            h.deactivate(announce: true)
        }
        var planes = Set<UInt32>()
        for h in running {
            let id = ObjectIdentifier(h)
            if let error = failed[id] {
                give(h, up: error)
                continue
            }
            guard let c = connector[id], c.status == .connected, !c.modes.isEmpty else {
                let names = res.connectors.map { "\($0.name) (\($0.status.rawValue))" }.joined(separator: ", ")
                logger.warning("no connected output; waiting for hotplug", metadata: ["drm.device": "\(device.path)",
                                                                                      "drm.output": "\(h.outputName ?? "any")",
                                                                                      "drm.connectors": "\(names)"])
                h.deactivate(announce: announce)
                continue
            }
            guard let crtc = match.assigned[c.id] else {
                let all = res.crtcs.map { "\($0.id)" }.joined(separator: ", ")
                logger.error("no CRTC left for \(c.name): every output needs a CRTC of its own that one of its encoders can use",
                             metadata: ["drm.device": "\(device.path)", "drm.connector": "\(c.name)", "drm.crtcs": "\(all)"])
                h.deactivate(announce: announce)
                continue
            }
            do {
                let mode = try DRMSelection.mode(c, request: h.modeRequest)
                let plane = DRMSelection.primaryPlane(res.planes, crtc: crtc, format: kiosk_drm_format_xrgb8888(), taken: planes)
                if let plane { planes.insert(plane.id) }
                save(crtc, for: c, res)
                try h.apply(KMSOutput(connector: c, crtc: crtc, mode: mode, plane: plane), device: device, announce: announce)
            } catch {
                if !announce { throw error }
                give(h, up: error)
            }
        }
    }

    /// Remembers what `crtc` shows before a head first drives it (and the connector it drives
    /// then, else `connector`).
    private func save(_ crtc: DRMCrtc, for connector: DRMConnector, _ res: DRMResources) {
        guard !saved.contains(where: { $0.crtc == crtc.id }) else { return }
        let bound = res.encoders.filter { $0.crtcID == crtc.id }.map(\.id)
        let driving = res.connectors.first { $0.encoderID != 0 && bound.contains($0.encoderID) }
        saved.append(SavedCrtc(crtc: crtc.id, fb: crtc.bufferID, x: UInt32(crtc.x), y: UInt32(crtc.y), mode: crtc.mode,
                               connector: driving?.id ?? connector.id))
    }

    /// Another client took DRM master (a change was refused with EACCES/EPERM): every head stops
    /// presenting until `acquireMaster()`.
    func lostMaster() {
        guard hasMaster else { return }
        hasMaster = false
        stopFollowingConnectors()
        logger.warning("lost DRM master: another client holds the device; presenting stops until it is given back",
                       metadata: device.map { ["drm.device": "\($0.path)"] } ?? [:])
        for h in heads { h.deactivate(announce: true) }
    }

    /// Reads pending device events when they wait, and gives each completed flip to the head
    /// whose CRTC it was queued on (or that drives the CRTC).
    private func handleDRMEvents(extra: [DRMDisplay] = []) {
        guard let device else { return }
        do {
            let crtcs = try device.dispatchEvents()
            let heads = self.heads + extra.filter { h in !self.heads.contains { $0 === h } }
            for crtc in crtcs {
                if let h = heads.first(where: { $0.queuedFlipCRTC == crtc }) ?? heads.first(where: { $0.output?.crtc.id == crtc }) {
                    h.flipCompleted()
                } else {
                    logger.debug("page flip event for CRTC \(crtc), which no head drives", metadata: ["drm.device": "\(device.path)"])
                }
            }
        } catch {
            logger.debug("\(error)", metadata: ["drm.device": "\(device.path)"])
        }
    }

    /// Waits (bounded) for the queued flips of `heads`, dispatching every event; a signal does
    /// not cut the wait short. Flips still queued at the end are given up.
    func waitForFlips(of heads: [DRMDisplay], timeoutMs: Int32) {
        guard let device else { return }
        let deadline = nowNanos() + Int64(timeoutMs) * 1_000_000
        wait: while heads.contains(where: { $0.queuedFlipCRTC != nil }) {
            let left = Int32(max(0, (deadline - nowNanos()) / 1_000_000))
            do {
                switch try device.waitForEvents(timeoutMs: left) {
                case .ready: handleDRMEvents(extra: heads)
                case .interrupted: continue wait
                case .timedOut: break wait
                }
            } catch {
                logger.warning("waiting for the page flip event failed: \(error)", metadata: ["drm.device": "\(device.path)"])
                break wait
            }
        }
        for h in heads { h.abandonFlip(after: Int64(timeoutMs)) }
    }

    private func restoreSavedCrtcs() {
        guard let device, hasMaster || device.isMaster else { return }
        for s in saved {
            let meta: Logger.Metadata = ["drm.device": "\(device.path)", "drm.crtc": "\(s.crtc)", "drm.fb": "\(s.fb)"]
            do {
                try device.restore(s)
                logger.info("restored the CRTC found at start", metadata: meta)
            } catch {
                logger.warning("could not restore the CRTC found at start: \(error)", metadata: meta)
            }
        }
    }

    /// Frees everything tied to the open device and lets it go (drops master first, takes it
    /// out of systemd's store). `keepingPicture`: the framebuffers and master stay on the file
    /// systemd keeps (`DRMHandover`).
    func teardown(_ heads: [DRMDisplay]? = nil, keepingPicture: Bool = false) {
        stopFollowingConnectors()
        if keepingPicture { device?.keepFramebuffersOnClose() }
        for h in heads ?? self.heads { h.detach() }
        if let device {
            device.unwatchEvents()
            if !keepingPicture {
                if let fd = device.descriptor { backend.handover?.forget(fd: fd) }
                if device.isMaster { device.dropMaster() }
            }
        }
        device = nil
    }
}
