#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskDRM
import KioskPosix
import Logging

/// A KMS device in memory, for tests of `DRMDisplay`: one CRTC that shows a framebuffer, a flip
/// that stays queued until the test lets the vertical blank happen, and the failures a real
/// device produces — EBUSY on a flip, EACCES once another client took DRM master, a connector
/// that vanishes, a flip event that never comes, a wait cut short by a signal. It records what
/// was committed and which buffers were made and freed (and whether one was freed while the
/// kernel still read it), whether a framebuffer was drawn into while the CRTC scanned it out,
/// and, optionally, virtio-gpu's blank scan-out after a mode set that keeps the framebuffer.
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

    public let path: String
    public var apiName: String { "fake" }
    /// What `snapshot()` returns; change it (then `hotplug()`) to plug, unplug or resize.
    public var resources: DRMResources
    public private(set) var isMaster = true
    /// Another client holds DRM master (`setMaster` fails with EBUSY until `releaseOtherMaster`).
    public private(set) var masterHeldElsewhere = false
    /// Every mode set, flip, blank and restore accepted, in order.
    public private(set) var committed: [Commit] = []
    /// The framebuffer the CRTC scans out (nil: off).
    public private(set) var onScreenFB: UInt32?
    /// The framebuffer a queued flip goes to, until `completeFlip()`.
    public private(set) var pendingFlipFB: UInt32?
    /// Framebuffers made, and freed, in order.
    public private(set) var created: [UInt32] = []
    public private(set) var freed: [UInt32] = []
    /// Framebuffers freed while on screen or queued (the kernel would have turned the CRTC off
    /// or flipped to freed memory).
    public private(set) var freedWhileInUse: [UInt32] = []
    /// errno values the next flips fail with, one per flip (e.g. `[EBUSY, EBUSY]`).
    public var flipErrors: [Int32] = []
    /// Flips still happen at the vertical blank but their events are never delivered.
    public var flipEventsLost = false
    /// The next `waitForEvents` calls return `.interrupted` (EINTR) this many times.
    public var interruptedWaits = 0
    /// `waitForEvents` calls made (with their timeouts).
    public private(set) var waits: [Int32] = []
    /// Flip events waiting to be read.
    public private(set) var eventsWaiting = 0
    /// The mode the CRTC runs: the CRTC's at start, then each mode set's.
    public private(set) var mode: DRMMode?
    /// As virtio-gpu does (Linux 6.12): a mode set that changes the mode but keeps the framebuffer
    /// the CRTC scanned out turns the scan-out off (`displayedFB` nil) until the next flip.
    public var modesetKeepingFBBlanks = false
    /// The framebuffer a viewer sees (blanking aside): `onScreenFB`, but nil while the scan-out is
    /// off after a mode set that kept the framebuffer (`modesetKeepingFBBlanks`).
    public private(set) var displayedFB: UInt32?
    /// Framebuffers whose pixels changed while the CRTC scanned them out (seen at the next mode
    /// set, flip, flip completion or restore): a frame drawn into the front buffer.
    public private(set) var drawnWhileOnScreen: [UInt32] = []
    /// The pixels of the framebuffer on screen when it went there.
    private var shownPixels: (fb: UInt32, pixels: [UInt32])?

    private var eventHandler: (() -> Void)?
    private var hotplugHandler: ((String, String) -> Void)?
    private var buffers: [UInt32: Weak] = [:]
    private var nextFB: UInt32 = 100
    private struct Weak { weak var buffer: FakeBuffer? }

    /// A device with `resources`; the CRTCs' `bufferID`s are what is on screen at start.
    public init(path: String = "/dev/dri/card0", resources: DRMResources) {
        self.path = path
        self.resources = resources
        let crtc = resources.crtcs.first(where: { $0.bufferID != 0 })
        onScreenFB = crtc?.bufferID
        displayedFB = onScreenFB
        mode = crtc?.mode
    }

    /// One connector `name` with the given modes (the first preferred), one encoder, one CRTC
    /// showing framebuffer `consoleFB` in the first mode, one primary plane.
    public static func oneOutput(name: String = "Virtual-1", modes: [DRMMode], consoleFB: UInt32 = 7) -> DRMResources {
        DRMResources(
            connectors: [DRMConnector(id: 30, name: name, status: .connected, modes: modes, encoderID: 20, encoderIDs: [20])],
            encoders: [DRMEncoder(id: 20, crtcID: 10, possibleCRTCs: 1)],
            crtcs: [DRMCrtc(id: 10, index: 0, bufferID: consoleFB, mode: modes.first)],
            planes: [DRMPlane(id: 40, kind: .primary, possibleCRTCs: 1, crtcID: 10, formats: [0x3432_5258])])
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

    /// The vertical blank: a queued flip takes effect and its event (unless lost) is delivered.
    /// Returns false when no flip was queued.
    @discardableResult
    public func completeFlip() -> Bool {
        guard let fb = pendingFlipFB else { return false }
        pendingFlipFB = nil
        show(fb)
        if !flipEventsLost {
            eventsWaiting += 1
            eventHandler?()
        }
        return true
    }

    /// The pixel at physical (x, y) of live framebuffer `fb` (XRGB8888), nil if it was freed.
    public func pixel(fb: UInt32, x: Int, y: Int) -> UInt32? {
        guard let b = buffers[fb]?.buffer else { return nil }
        return (b.pixels.base + y * b.pixels.stride).load(fromByteOffset: x * 4, as: UInt32.self)
    }

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

    /// Notes a change of the pixels on screen since they went there.
    private func checkFront() {
        guard let s = shownPixels, s.fb == onScreenFB, let now = contents(s.fb), now != s.pixels else { return }
        drawnWhileOnScreen.append(s.fb)
        shownPixels = (s.fb, now)
    }

    /// `fb` is scanned out (and seen) from now on.
    private func show(_ fb: UInt32?) {
        checkFront()
        onScreenFB = fb
        displayedFB = fb
        shownPixels = fb.flatMap { f in contents(f).map { (f, $0) } }
    }

    /// The framebuffers alive now (made and not freed).
    public var live: [UInt32] { created.filter { !freed.contains($0) } }

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
        try mustBeMaster("drmModeSetCrtc(mode set)", what(output))
        if pendingFlipFB != nil { throw Posix.error("drmModeSetCrtc(mode set)", path: what(output), errno: EBUSY) }
        committed.append(.modeset(connector: output.connector.name, crtc: output.crtc.id, fb: buffer.fbID, size: buffer.size, active: active))
        let sameFBOtherMode = buffer.fbID == onScreenFB && output.mode != mode
        mode = output.mode
        show(buffer.fbID)
        if sameFBOtherMode && modesetKeepingFBBlanks { displayedFB = nil }
    }

    public func flip(_ output: KMSOutput, to buffer: any ScanoutBuffer) throws {
        try mustBeMaster("drmModePageFlip", what(output))
        if !flipErrors.isEmpty {
            throw Posix.error("drmModePageFlip", path: what(output), errno: flipErrors.removeFirst())
        }
        if pendingFlipFB != nil { throw Posix.error("drmModePageFlip", path: what(output), errno: EBUSY) }
        checkFront()
        committed.append(.flip(fb: buffer.fbID))
        pendingFlipFB = buffer.fbID
    }

    public func setActive(_ output: KMSOutput, _ active: Bool) throws {
        try mustBeMaster("drmModeConnectorSetProperty(DPMS \(active ? "on" : "off"))", what(output))
        committed.append(.setActive(active))
    }

    public func restore(_ saved: SavedCrtc) throws {
        try mustBeMaster("drmModeSetCrtc(restore CRTC \(saved.crtc))", path)
        committed.append(.restore(saved))
        show(saved.fb == 0 ? nil : saved.fb)
        mode = saved.mode
    }

    public func watchEvents(_ handler: @escaping () -> Void) throws { eventHandler = handler }
    public func unwatchEvents() { eventHandler = nil }

    public func dispatchEvents() throws -> Int {
        let n = eventsWaiting
        eventsWaiting = 0
        return n
    }

    /// EINTR while `interruptedWaits` lasts; else events waiting, or a queued flip that
    /// completes during the wait (unless its event is lost); else the time runs out at once.
    public func waitForEvents(timeoutMs: Int32) throws -> KMSWait {
        waits.append(timeoutMs)
        if interruptedWaits > 0 {
            interruptedWaits -= 1
            return .interrupted
        }
        if eventsWaiting > 0 { return .ready }
        if let fb = pendingFlipFB, !flipEventsLost {
            pendingFlipFB = nil
            show(fb)
            eventsWaiting += 1
            return .ready
        }
        return .timedOut
    }

    fileprivate func bufferFreed(_ fb: UInt32) {
        freed.append(fb)
        buffers[fb] = nil
        if fb == onScreenFB || fb == pendingFlipFB {
            freedWhileInUse.append(fb)
            // As drmModeRmFB does: a CRTC scanning out a removed framebuffer is turned off.
            if fb == onScreenFB { onScreenFB = nil; displayedFB = nil; shownPixels = nil }
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
