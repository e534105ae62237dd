#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskDRM
import KioskPosix
import Logging

/// A KMS device in memory, for tests of `DRMDisplay` and `DRMCard`: connectors, encoders and
/// CRTCs that each show a framebuffer, a flip that stays queued until the test lets that CRTC's
/// vertical blank happen, and the failures a real device produces — EBUSY on a flip (of any CRTC
/// or of one), EACCES once another client took DRM master, a connector that vanishes or is
/// unplugged, a flip event that never comes, a wait cut short by a signal. It records what was
/// committed and which buffers were made and freed (and whether one was freed while the kernel
/// still read it), whether a framebuffer was drawn into while a CRTC scanned it out, and,
/// optionally, virtio-gpu's blank scan-out after a mode set that keeps the framebuffer. Mode sets,
/// completed flips and restores show in `snapshot()` as the kernel's would (the encoder bound to
/// the CRTC, its framebuffer and mode).
///
/// Errors read like the kernel implementations' (`drmModePageFlip /dev/dri/card0 Virtual-1
/// 1280x800@60 failed: Device or resource busy (errno 16)`).
public final class FakeKMS: KMSDevice {
    /// A change the display asked the device for.
    public enum Commit: Equatable, CustomStringConvertible, Sendable {
        case modeset(connector: String, crtc: UInt32, fb: UInt32, size: Size, active: Bool)
        case flip(fb: UInt32)
        case setActive(Bool)
        case restore(SavedCrtc)

        public var description: String {
            switch self {
            case .modeset(let c, let crtc, let fb, let size, let active): return "modeset(\(c) crtc \(crtc) fb \(fb) \(size)\(active ? "" : " blanked"))"
            case .flip(let fb): return "flip(fb \(fb))"
            case .setActive(let a): return "setActive(\(a))"
            case .restore(let s): return "restore(crtc \(s.crtc) fb \(s.fb))"
            }
        }
    }

    /// What one CRTC scans out.
    public struct Scanout: Equatable, Sendable {
        /// The framebuffer the CRTC scans out (nil: off).
        public var onScreenFB: UInt32?
        /// The framebuffer a queued flip goes to, until `completeFlip`.
        public var pendingFlipFB: UInt32?
        /// The framebuffer a viewer sees (blanking aside): `onScreenFB`, but nil while the scan-out
        /// is off after a mode set that kept the framebuffer (`modesetKeepingFBBlanks`).
        public var displayedFB: UInt32?
        /// The mode the CRTC runs: the CRTC's at start, then each mode set's.
        public var mode: DRMMode?
        /// The pixels of the framebuffer on screen when it went there.
        var shownPixels: [UInt32]?
    }

    public let path: String
    public var apiName: String { "fake" }
    /// What `snapshot()` returns; change it (then `hotplug()`) to plug, unplug or resize.
    public var resources: DRMResources
    public private(set) var isMaster = true
    /// Another client holds DRM master (`setMaster` fails with EBUSY until `releaseOtherMaster`).
    public private(set) var masterHeldElsewhere = false
    /// Every mode set, flip, blank and restore accepted, in order.
    public private(set) var committed: [Commit] = []
    /// What each CRTC scans out, by CRTC id.
    public private(set) var scanouts: [UInt32: Scanout] = [:]
    /// Framebuffers made, and freed, in order.
    public private(set) var created: [UInt32] = []
    public private(set) var freed: [UInt32] = []
    /// Framebuffers freed while on screen or queued (the kernel would have turned the CRTC off
    /// or flipped to freed memory).
    public private(set) var freedWhileInUse: [UInt32] = []
    /// errno values the next flips (of any CRTC) fail with, one per flip (e.g. `[EBUSY, EBUSY]`).
    public var flipErrors: [Int32] = []
    /// errno values the next flips of one CRTC (by id) fail with, after `flipErrors`.
    public var flipErrorsOfCRTC: [UInt32: [Int32]] = [:]
    /// Flips still happen at the vertical blank but their events are never delivered.
    public var flipEventsLost = false
    /// The next `waitForEvents` calls return `.interrupted` (EINTR) this many times.
    public var interruptedWaits = 0
    /// `waitForEvents` calls made (with their timeouts).
    public private(set) var waits: [Int32] = []
    /// The CRTCs of the flip events waiting to be read.
    public private(set) var eventsWaiting: [UInt32] = []
    /// As virtio-gpu does (Linux 6.12): a mode set that changes the mode but keeps the framebuffer
    /// the CRTC scanned out turns the scan-out off (`displayedFB` nil) until the next flip.
    public var modesetKeepingFBBlanks = false
    /// Framebuffers whose pixels changed while a CRTC scanned them out (seen at the next mode
    /// set, flip, flip completion or restore): a frame drawn into the front buffer.
    public private(set) var drawnWhileOnScreen: [UInt32] = []

    private var eventHandler: (() -> Void)?
    private var hotplugHandler: ((String, String) -> Void)?
    private var buffers: [UInt32: Weak] = [:]
    private var nextFB: UInt32 = 100
    private struct Weak { weak var buffer: FakeBuffer? }

    /// A device with `resources`; the CRTCs' `bufferID`s and modes are what they show at start.
    public init(path: String = "/dev/dri/card0", resources: DRMResources) {
        self.path = path
        self.resources = resources
        for c in resources.crtcs {
            let fb = c.bufferID == 0 ? nil : c.bufferID
            scanouts[c.id] = Scanout(onScreenFB: fb, pendingFlipFB: nil, displayedFB: fb, mode: c.mode)
        }
    }

    /// A backend that opens this device (for `device`, or whatever is asked when nil) and lets
    /// the test send hotplug events with `hotplug(_:)`.
    public var backend: KMSBackend {
        KMSBackend(
            open: { [unowned self] path, _ in
                guard path == self.path else { throw Posix.error("open", path: path, errno: ENOENT) }
                return self
            },
            pickDevice: { [unowned self] in self.path },
            followHotplug: { [unowned self] _, handler in
                self.hotplugHandler = handler
                return self
            })
    }

    // MARK: The first CRTC (a device with one output)

    /// The framebuffer the first CRTC scans out (nil: off).
    public var onScreenFB: UInt32? { firstScanout?.onScreenFB }
    /// The framebuffer a queued flip of the first CRTC goes to, until `completeFlip()`.
    public var pendingFlipFB: UInt32? { firstScanout?.pendingFlipFB }
    /// What a viewer sees on the first CRTC (see `Scanout.displayedFB`).
    public var displayedFB: UInt32? { firstScanout?.displayedFB }
    /// The mode the first CRTC runs.
    public var mode: DRMMode? { firstScanout?.mode }
    private var firstScanout: Scanout? { resources.crtcs.first.flatMap { scanouts[$0.id] } }

    // MARK: What a test does to the device

    /// A udev event for this device ("change" after a connector or mode change).
    public func hotplug(_ action: String = "change") {
        hotplugHandler?(action, path)
    }

    /// The connector `name` disappears from the device (as an MST or virtual connector does).
    public func removeConnector(_ name: String) {
        resources.connectors.removeAll { $0.name == name }
    }

    /// Sets the status of connector `name`.
    public func setStatus(_ name: String, _ status: DRMConnector.Status) {
        for i in resources.connectors.indices where resources.connectors[i].name == name { resources.connectors[i].status = status }
    }

    /// Replaces the modes of connector `name` (a different monitor on the same port).
    public func setModes(_ name: String, _ modes: [DRMMode]) {
        for i in resources.connectors.indices where resources.connectors[i].name == name { resources.connectors[i].modes = modes }
    }

    /// Another client becomes DRM master: every change fails with EACCES until master is back.
    public func loseMaster() {
        isMaster = false
        masterHeldElsewhere = true
    }

    /// The other client lets master go (`setMaster` succeeds again).
    public func releaseOtherMaster() { masterHeldElsewhere = false }

    /// The vertical blank of CRTC `crtc` (nil: of every CRTC, in order): a queued flip takes effect
    /// and its event (unless lost) is delivered. Returns false when no flip was queued there.
    @discardableResult
    public func completeFlip(crtc: UInt32? = nil) -> Bool {
        let ids = crtc.map { [$0] } ?? resources.crtcs.map(\.id)
        var any = false
        for id in ids where takePendingFlip(id) {
            any = true
            if !flipEventsLost { eventsWaiting.append(id) }
        }
        if any && !flipEventsLost { eventHandler?() }
        return any
    }

    /// The pixel at physical (x, y) of live framebuffer `fb` (XRGB8888), nil if it was freed.
    public func pixel(fb: UInt32, x: Int, y: Int) -> UInt32? {
        guard let b = buffers[fb]?.buffer else { return nil }
        return (b.pixels.base + y * b.pixels.stride).load(fromByteOffset: x * 4, as: UInt32.self)
    }

    /// The framebuffer CRTC `crtc` scans out (nil: off).
    public func onScreenFB(crtc: UInt32) -> UInt32? { scanouts[crtc]?.onScreenFB }

    /// The framebuffer a queued flip of CRTC `crtc` goes to.
    public func pendingFlipFB(crtc: UInt32) -> UInt32? { scanouts[crtc]?.pendingFlipFB }

    /// All pixels of live framebuffer `fb`, row by row.
    private func contents(_ fb: UInt32) -> [UInt32]? {
        guard let b = buffers[fb]?.buffer else { return nil }
        var out: [UInt32] = []
        out.reserveCapacity(b.size.area)
        for y in 0..<b.size.height {
            for x in 0..<b.size.width { out.append((b.pixels.base + y * b.pixels.stride).load(fromByteOffset: x * 4, as: UInt32.self)) }
        }
        return out
    }

    /// Notes a change of the pixels CRTC `crtc` shows since they went there.
    private func checkFront(_ crtc: UInt32) {
        guard let s = scanouts[crtc], let fb = s.onScreenFB, let was = s.shownPixels, let now = contents(fb), now != was else { return }
        drawnWhileOnScreen.append(fb)
        scanouts[crtc]?.shownPixels = now
    }

    /// CRTC `crtc` scans out `fb` (and is seen) from now on.
    private func show(_ fb: UInt32?, on crtc: UInt32) {
        checkFront(crtc)
        scanouts[crtc, default: Scanout()].onScreenFB = fb
        scanouts[crtc]?.displayedFB = fb
        scanouts[crtc]?.shownPixels = fb.flatMap { contents($0) }
        if let k = resources.crtcs.firstIndex(where: { $0.id == crtc }) { resources.crtcs[k].bufferID = fb ?? 0 }
    }

    /// A queued flip of `crtc` takes effect; false when none was queued.
    private func takePendingFlip(_ crtc: UInt32) -> Bool {
        guard let fb = scanouts[crtc]?.pendingFlipFB else { return false }
        scanouts[crtc]?.pendingFlipFB = nil
        show(fb, on: crtc)
        return true
    }

    /// The framebuffers alive now (made and not freed).
    public var live: [UInt32] { created.filter { !freed.contains($0) } }

    /// A descriptor standing for the device's file (systemd's store); nil: none, nothing stored.
    public var descriptor: Int32?
    /// `keepFramebuffersOnClose()` was called: the card left its picture for the next process.
    public private(set) var keptFramebuffers = false
    public func keepFramebuffersOnClose() { keptFramebuffers = true }

    // MARK: KMSDevice

    public func setMaster() throws {
        if isMaster { return }
        if masterHeldElsewhere { throw Posix.error("drmSetMaster", path: path, errno: EBUSY) }
        isMaster = true
    }

    public func dropMaster() { isMaster = false }

    public func snapshot() throws -> DRMResources {
        resources
    }

    public func prepare(_ output: KMSOutput) throws {}

    public func makeBuffer(size: Size, what: String) throws -> any ScanoutBuffer {
        let fb = nextFB
        nextFB += 1
        let b = FakeBuffer(device: self, fbID: fb, size: size)
        buffers[fb] = Weak(buffer: b)
        created.append(fb)
        return b
    }

    private func what(_ output: KMSOutput) -> String { "\(path) \(output.name)" }

    private func mustBeMaster(_ call: String, _ what: String) throws {
        if !isMaster { throw Posix.error(call, path: what, errno: EACCES) }
    }

    public func modeset(_ output: KMSOutput, buffer: any ScanoutBuffer, active: Bool) throws {
        let crtc = output.crtc.id
        try mustBeMaster("drmModeSetCrtc(mode set)", what(output))
        if scanouts[crtc]?.pendingFlipFB != nil { throw Posix.error("drmModeSetCrtc(mode set)", path: what(output), errno: EBUSY) }
        committed.append(.modeset(connector: output.connector.name, crtc: crtc, fb: buffer.fbID, size: buffer.size, active: active))
        let sameFBOtherMode = buffer.fbID == scanouts[crtc]?.onScreenFB && output.mode != scanouts[crtc]?.mode
        scanouts[crtc, default: Scanout()].mode = output.mode
        show(buffer.fbID, on: crtc)
        if sameFBOtherMode && modesetKeepingFBBlanks { scanouts[crtc]?.displayedFB = nil }
        bind(output)
    }

    /// As the kernel's objects read after a mode set: the connector's encoder drives the CRTC in the mode.
    private func bind(_ output: KMSOutput) {
        let crtc = output.crtc
        if let k = resources.crtcs.firstIndex(where: { $0.id == crtc.id }) { resources.crtcs[k].mode = output.mode }
        guard let c = resources.connectors.firstIndex(where: { $0.id == output.connector.id }),
              let eid = resources.connectors[c].encoderIDs.first(where: { id in
                  resources.encoders.contains { $0.id == id && $0.possibleCRTCs & (1 << UInt32(crtc.index)) != 0 }
              }) else { return }
        for e in resources.encoders.indices {
            if resources.encoders[e].id == eid { resources.encoders[e].crtcID = crtc.id } else if resources.encoders[e].crtcID == crtc.id { resources.encoders[e].crtcID = 0 }
        }
        resources.connectors[c].encoderID = eid
    }

    public func flip(_ output: KMSOutput, to buffer: any ScanoutBuffer) throws {
        let crtc = output.crtc.id
        try mustBeMaster("drmModePageFlip", what(output))
        if !flipErrors.isEmpty {
            throw Posix.error("drmModePageFlip", path: what(output), errno: flipErrors.removeFirst())
        }
        if let e = flipErrorsOfCRTC[crtc]?.first {
            flipErrorsOfCRTC[crtc]?.removeFirst()
            throw Posix.error("drmModePageFlip", path: what(output), errno: e)
        }
        if scanouts[crtc]?.pendingFlipFB != nil { throw Posix.error("drmModePageFlip", path: what(output), errno: EBUSY) }
        checkFront(crtc)
        committed.append(.flip(fb: buffer.fbID))
        scanouts[crtc, default: Scanout()].pendingFlipFB = buffer.fbID
    }

    public func setActive(_ output: KMSOutput, _ active: Bool) throws {
        try mustBeMaster("drmModeConnectorSetProperty(DPMS \(active ? "on" : "off"))", what(output))
        committed.append(.setActive(active))
    }

    public func restore(_ saved: SavedCrtc) throws {
        try mustBeMaster("drmModeSetCrtc(restore CRTC \(saved.crtc))", path)
        committed.append(.restore(saved))
        show(saved.fb == 0 ? nil : saved.fb, on: saved.crtc)
        scanouts[saved.crtc]?.mode = saved.mode
        if let k = resources.crtcs.firstIndex(where: { $0.id == saved.crtc }) { resources.crtcs[k].mode = saved.mode }
    }

    public func watchEvents(_ handler: @escaping () -> Void) throws { eventHandler = handler }
    public func unwatchEvents() { eventHandler = nil }

    public func dispatchEvents() throws -> [UInt32] {
        defer { eventsWaiting = [] }
        return eventsWaiting
    }

    /// EINTR while `interruptedWaits` lasts; else events waiting, or the queued flips, which
    /// complete during the wait (unless their events are lost); else the time runs out at once.
    public func waitForEvents(timeoutMs: Int32) throws -> KMSWait {
        waits.append(timeoutMs)
        if interruptedWaits > 0 {
            interruptedWaits -= 1
            return .interrupted
        }
        if !eventsWaiting.isEmpty { return .ready }
        if !flipEventsLost {
            for c in resources.crtcs where takePendingFlip(c.id) { eventsWaiting.append(c.id) }
            if !eventsWaiting.isEmpty { return .ready }
        }
        return .timedOut
    }

    fileprivate func bufferFreed(_ fb: UInt32) {
        // Left on the file systemd keeps (`keepFramebuffersOnClose()`): still there, still shown.
        if keptFramebuffers { return }
        freed.append(fb)
        buffers[fb] = nil
        for (crtc, s) in scanouts where fb == s.onScreenFB || fb == s.pendingFlipFB {
            freedWhileInUse.append(fb)
            // As drmModeRmFB does: a CRTC scanning out a removed framebuffer is turned off.
            if fb == s.onScreenFB {
                scanouts[crtc]?.onScreenFB = nil
                scanouts[crtc]?.displayedFB = nil
                scanouts[crtc]?.shownPixels = nil
                if let k = resources.crtcs.firstIndex(where: { $0.id == crtc }) { resources.crtcs[k].bufferID = 0 }
            }
        }
    }
}

/// A scan-out buffer in memory; tells its device when it is freed.
final class FakeBuffer: ScanoutBuffer {
    let device: FakeKMS
    let fbID: UInt32
    let size: Size
    let pixels: PixelBuffer

    init(device: FakeKMS, fbID: UInt32, size: Size) {
        self.device = device
        self.fbID = fbID
        self.size = size
        let bytes = size.area * 4
        let p = UnsafeMutableRawPointer.allocate(byteCount: max(bytes, 4), alignment: 16)
        p.initializeMemory(as: UInt8.self, repeating: 0, count: max(bytes, 4))
        pixels = PixelBuffer(base: p, size: size, stride: size.width * 4)
    }

    deinit {
        pixels.base.deallocate()
        device.bufferFreed(fbID)
    }
}
