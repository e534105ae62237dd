#if canImport(Glibc)
import Glibc
#endif
import Testing
import KioskCore
import KioskDRMTesting
import KioskTesting
import Logging
@testable import KioskDRM

/// A DRMCard with two heads on a FakeKMS with two outputs (Virtual-1 8x4 on CRTC 10 showing the
/// console's framebuffer 7, Virtual-2 6x2 on CRTC 11 showing 8), timers on virtual time.
final class CardRig {
    let kms: FakeKMS
    let loop = ManualEventLoop()
    let logs = CapturedLog(level: .debug)
    let card: DRMCard
    /// Each head's display events, in head order.
    var events: [[DisplayEvent]]
    private let painters: [Painter]

    static let twoOutputs = [FakeKMS.Output("Virtual-1", modes: [Rig.big]), FakeKMS.Output("Virtual-2", modes: [Rig.small])]

    /// `named`: the heads name Virtual-1 and Virtual-2; otherwise they take the first connected ones.
    init(outputs: [FakeKMS.Output] = CardRig.twoOutputs, crtcs: Int? = nil, named: Bool = true) throws {
        kms = FakeKMS(resources: FakeKMS.outputs(outputs, crtcs: crtcs))
        let heads = (1...2).map { DRMHeadOptions(output: named ? "Virtual-\($0)" : nil) }
        card = try DRMCard(device: kms.path, api: .auto, buffers: 2, heads: heads, scheduler: loop, backend: kms.backend,
                           logger: logs.logger)
        events = Array(repeating: [], count: heads.count)
        painters = heads.map { _ in Painter() }
        for (i, h) in card.heads.enumerated() { h.onEvent = { [unowned self] e in self.events[i].append(e) } }
    }

    deinit {
        for h in card.heads { h.onEvent = nil }
        card.shutdown()
    }

    var heads: [DRMDisplay] { card.heads }

    /// Presents a frame of one colour on head `head`, then ends the loop iteration.
    func present(_ head: Int, _ color: UInt32, damage: Damage? = nil) throws {
        defer { loop.runDeferred() }
        try painters[head].present(color, on: heads[head], damage: damage)
    }

    /// Both heads present a frame of `color`.
    func presentBoth(_ color: UInt32, damage: Damage? = nil) throws {
        try present(0, color, damage: damage)
        try present(1, color, damage: damage)
    }

    /// Head `head`'s mode set of framebuffer `fb` (head 0: Virtual-1 on CRTC 10, head 1: Virtual-2 on CRTC 11).
    func modeset(_ head: Int, fb: UInt32) -> FakeKMS.Commit {
        .modeset(connector: "Virtual-\(head + 1)", crtc: 10 + UInt32(head), fb: fb, size: head == 0 ? Rig.big.size : Rig.small.size,
                 active: true)
    }

    /// What CRTC `crtc` showed at start.
    static func console(_ crtc: UInt32) -> SavedCrtc {
        let i = crtc - 10
        return SavedCrtc(crtc: crtc, fb: 7 + i, x: 0, y: 0, mode: i == 0 ? Rig.big : Rig.small, connector: 30 + i)
    }
}

/// One DRM card driving two outputs: each head paced by its own flips, hotplug, master and
/// shutdown affecting the right heads.
@Suite struct DRMCardTests {
    /// Each head sets its own mode on its own CRTC and flips on its own; a flip event goes to the
    /// head whose CRTC completed, so one head's `canPresent` depends only on its own flip.
    @Test func twoHeadsPresentAndFlipIndependently() throws {
        let r = try CardRig()
        let (a, b) = (r.heads[0], r.heads[1])
        try r.present(0, Rig.red)
        try r.present(1, Rig.blue)
        #expect(r.kms.committed == [r.modeset(0, fb: 100), r.modeset(1, fb: 102)])
        #expect(r.kms.onScreenFB(crtc: 10) == 100 && r.kms.onScreenFB(crtc: 11) == 102)
        #expect(r.kms.pixel(fb: 100, x: 7, y: 3) == Rig.red && r.kms.pixel(fb: 102, x: 5, y: 1) == Rig.blue)
        #expect(r.events == [[.ready], [.ready]])
        try r.presentBoth(Rig.green)
        #expect(r.kms.committed.suffix(2) == [.flip(fb: 101), .flip(fb: 103)])
        #expect(!a.canPresent && !b.canPresent)

        #expect(r.kms.completeFlip(crtc: 11))
        #expect(b.canPresent && !a.canPresent, "head 0's flip is still queued")
        #expect(a.pageFlipCount == 0 && b.pageFlipCount == 1)
        #expect(r.events == [[.ready], [.ready, .ready]])
        try r.present(1, Rig.red)
        #expect(r.kms.committed.last == .flip(fb: 102), "head 1 flips again while head 0's flip is pending")

        #expect(r.kms.completeFlip(), "both vertical blanks, both events read at once")
        #expect(a.pageFlipCount == 1 && b.pageFlipCount == 2)
        #expect(a.scanout.onScreen == 101 && b.scanout.onScreen == 102)
        #expect(r.kms.onScreenFB(crtc: 10) == 101 && r.kms.onScreenFB(crtc: 11) == 102)
        #expect(a.canPresent && b.canPresent)
        #expect(r.events == [[.ready, .ready], [.ready, .ready, .ready]])
        #expect(r.kms.drawnWhileOnScreen == [] && r.kms.freedWhileInUse == [])
    }

    /// EBUSY on one head's CRTC: that head retries its frame; the other flips at its own pace meanwhile.
    @Test func busyFlipOnOneHeadDoesNotDelayTheOther() throws {
        let r = try CardRig()
        let (a, b) = (r.heads[0], r.heads[1])
        try r.presentBoth(Rig.red)
        r.kms.flipErrorsOfCRTC[10] = [EBUSY, EBUSY]
        try r.presentBoth(Rig.green)
        #expect(a.busyRetries == 1 && !a.canPresent)
        #expect(r.kms.committed.last == .flip(fb: 103), "head 1's flip went out at once")
        #expect(r.kms.completeFlip(crtc: 11) && b.canPresent)
        try r.present(1, Rig.blue)
        #expect(r.kms.committed.last == .flip(fb: 102))
        #expect(r.kms.completeFlip(crtc: 11) && b.pageFlipCount == 2)
        #expect(r.loop.advance(by: DRMDisplay.busyRetryDelayNs) == 1)
        #expect(a.busyRetries == 2 && !r.kms.committed.contains(.flip(fb: 101)))
        r.loop.advance(by: DRMDisplay.busyRetryDelayNs)
        #expect(r.kms.committed.last == .flip(fb: 101))
        #expect(r.kms.pixel(fb: 101, x: 7, y: 3) == Rig.green)
        #expect(r.kms.completeFlip(crtc: 10) && a.pageFlipCount == 1 && a.canPresent)
        #expect(b.busyRetries == 0)
        #expect(r.events[0] == [.ready, .ready] && r.events[1] == [.ready, .ready, .ready])
    }

    /// Virtual-1 unplugged: head 0 goes inactive, head 1 keeps flipping without a mode set or an
    /// event of its own; plugged back, head 0 sets its mode again on its CRTC. With unnamed heads,
    /// head 1 keeps the connector it had instead of giving it to head 0.
    @Test(arguments: [true, false])
    func oneHeadUnpluggedTheOtherKeepsFlipping(named: Bool) throws {
        let r = try CardRig(named: named)
        let (a, b) = (r.heads[0], r.heads[1])
        try r.presentBoth(Rig.red)
        try r.presentBoth(Rig.green)
        #expect(r.kms.completeFlip())
        r.kms.setStatus("Virtual-1", .disconnected)
        r.kms.hotplug()
        #expect(r.events[0].last == .inactive && a.logicalSize == nil && !a.canPresent)
        #expect(r.events[1] == [.ready, .ready], "head 1 hears nothing of it")
        #expect(b.canPresent && b.logicalSize == Size(width: 6, height: 2))
        let before = r.kms.committed.count
        for color in [Rig.red, Rig.green, Rig.blue] {
            try r.present(1, color)
            #expect(r.kms.completeFlip(crtc: 11))
        }
        #expect(Array(r.kms.committed[before...]) == [.flip(fb: 102), .flip(fb: 103), .flip(fb: 102)], "flips only, no mode set")
        #expect(b.pageFlipCount == 4 && r.kms.onScreenFB(crtc: 11) == 102)

        r.kms.setStatus("Virtual-1", .connected)
        r.kms.hotplug()
        #expect(r.events[0].last == .needsFullRedraw && a.logicalSize == Size(width: 8, height: 4))
        #expect(r.events[1].count == 5 && !r.events[1].contains(.needsFullRedraw) && !r.events[1].contains(.inactive))
        try r.present(0, Rig.white, damage: Rig.onePixel)
        #expect(r.kms.committed.last == r.modeset(0, fb: 100))
        #expect(a.lastCopiedPixels == 32, "the whole frame after the return")
        #expect(r.kms.onScreenFB(crtc: 10) == 100 && r.kms.pixel(fb: 100, x: 7, y: 3) == Rig.white)
        try r.present(1, Rig.white)
        #expect(r.kms.committed.last == .flip(fb: 103))
    }

    /// Master handed over and back: both heads stop (their queued flips waited for), then both set
    /// their modes again with complete frames. Master taken by another client shows on both too.
    @Test func masterReleasedAndTakenBackAffectsBothHeads() throws {
        let r = try CardRig()
        let (a, b) = (r.heads[0], r.heads[1])
        try r.presentBoth(Rig.red)
        try r.presentBoth(Rig.green)
        r.card.releaseMaster()
        #expect(a.pageFlipCount == 1 && b.pageFlipCount == 1, "both queued flips were waited for")
        #expect(!r.kms.isMaster && r.events.map(\.last) == [.inactive, .inactive])
        #expect(!a.canPresent && !b.canPresent)
        try r.presentBoth(Rig.blue)
        #expect(r.kms.committed.count == 4, "nothing presented without master")
        try r.card.acquireMaster()
        #expect(r.kms.isMaster && r.events.map(\.last) == [.needsFullRedraw, .needsFullRedraw])
        try r.presentBoth(Rig.white, damage: Rig.onePixel)
        #expect(r.kms.committed.suffix(2) == [r.modeset(0, fb: 100), r.modeset(1, fb: 102)])
        #expect(a.lastCopiedPixels == 32 && b.lastCopiedPixels == 12)

        r.kms.loseMaster()
        #expect(throws: KioskError.self) { try r.present(0, Rig.red) }
        #expect(r.events.map(\.last) == [.inactive, .inactive], "the refused flip of head 0 stops head 1 too")
        #expect(r.logs.count(containing: "warning: lost DRM master") == 1)
        r.kms.releaseOtherMaster()
        try r.heads[1].acquireMaster()
        #expect(r.events.map(\.last) == [.needsFullRedraw, .needsFullRedraw])
        try r.presentBoth(Rig.blue)
        #expect(r.kms.committed.suffix(2) == [r.modeset(0, fb: 101), r.modeset(1, fb: 103)])
    }

    /// Shutdown gives back both CRTCs found at start (the console on both), after the flip still
    /// queued; heads shut down one by one keep the card running until the last.
    @Test func shutdownRestoresEveryCRTCFoundAtStart() throws {
        let r = try CardRig()
        let (a, b) = (r.heads[0], r.heads[1])
        try r.presentBoth(Rig.red)
        try r.presentBoth(Rig.green)
        #expect(r.kms.completeFlip(crtc: 10))
        a.shutdown()
        #expect(!a.canPresent && !r.kms.committed.contains { if case .restore = $0 { return true }; return false })
        #expect(r.kms.completeFlip(crtc: 11) && b.canPresent, "head 1 goes on")
        try r.present(1, Rig.blue)
        r.card.shutdown()
        #expect(b.pageFlipCount == 2, "the flip still queued was waited for")
        #expect(r.kms.committed.suffix(2) == [.restore(CardRig.console(10)), .restore(CardRig.console(11))])
        #expect(r.kms.onScreenFB(crtc: 10) == 7 && r.kms.onScreenFB(crtc: 11) == 8)
        #expect(r.logs.count(containing: "info: restored the CRTC found at start") == 2)
        #expect(r.kms.live == [] && r.kms.freedWhileInUse == [] && !r.kms.isMaster)
        b.shutdown()
        #expect(r.kms.committed.count == 7, "nothing more after the card's shutdown")
    }

    /// The last head shut down shuts the card down.
    @Test func lastHeadShutDownShutsTheCardDown() throws {
        let r = try CardRig()
        try r.presentBoth(Rig.red)
        r.heads[1].shutdown()
        #expect(r.kms.isMaster && r.kms.onScreenFB(crtc: 11) == 102)
        r.heads[0].shutdown()
        #expect(r.kms.committed.suffix(2) == [.restore(CardRig.console(10)), .restore(CardRig.console(11))])
        #expect(!r.kms.isMaster && r.kms.live == [])
    }

    /// Blanking one head waits for its own flip only: the other head's queued flip stays queued
    /// and completes at its own vertical blank.
    @Test func blankingOneHeadLeavesTheOtherAlone() throws {
        let r = try CardRig()
        let (a, b) = (r.heads[0], r.heads[1])
        try r.presentBoth(Rig.red)
        try r.present(1, Rig.green)
        try a.setBlanked(true)
        #expect(r.kms.committed.last == .setActive(false) && a.isBlanked && !b.isBlanked)
        #expect(r.kms.waits == [], "no wait for a flip: head 0 had none queued")
        #expect(r.kms.pendingFlipFB(crtc: 11) == 103 && b.pageFlipCount == 0)
        #expect(r.kms.completeFlip(crtc: 11) && b.pageFlipCount == 1 && b.canPresent)
        #expect(!a.canPresent, "a blanked head presents nothing")
    }

    /// Nobody calls shutdown: a card let go (with its heads), or a display made with
    /// `init(options:…)` let go, still gives the CRTCs back and frees everything (no cycle keeps
    /// them alive).
    @Test func lettingGoShutsDown() throws {
        let kms = FakeKMS(resources: FakeKMS.outputs(CardRig.twoOutputs))
        let loop = ManualEventLoop()
        let painter = Painter()
        do {
            let card = try DRMCard(device: kms.path, api: .auto, buffers: 2, heads: [DRMHeadOptions(), DRMHeadOptions()],
                                   scheduler: loop, backend: kms.backend, logger: Logger(label: "test.card"))
            for h in card.heads { try painter.present(Rig.red, on: h) }
            try painter.present(Rig.green, on: card.heads[0])
        }
        #expect(kms.committed.suffix(2) == [.restore(CardRig.console(10)), .restore(CardRig.console(11))])
        #expect(kms.live == [] && kms.freedWhileInUse == [] && !kms.isMaster)

        let one = FakeKMS(resources: FakeKMS.oneOutput(modes: [Rig.big]))
        do {
            let d = try DRMDisplay(options: DRMOptions(device: one.path), scheduler: loop, backend: one.backend,
                                   logger: Logger(label: "test.drm"))
            try painter.present(Rig.red, on: d)
            try painter.present(Rig.green, on: d)
        }
        #expect(one.committed.count == 3 && one.committed.last == .restore(CardRig.console(10)))
        #expect(one.pendingFlipFB == nil && one.onScreenFB == 7, "the queued flip was waited for, then the console given back")
        #expect(one.live == [] && one.freedWhileInUse == [] && !one.isMaster)
    }

    /// One CRTC for two connected outputs: opening says which output cannot be driven and what exists.
    @Test func cardThatCannotDriveBothHeadsSaysSo() throws {
        var message = ""
        #expect(throws: KioskError.self) {
            do { _ = try CardRig(crtcs: 1) } catch let e as KioskError { message = e.message; throw e }
        }
        #expect(message == "/dev/dri/card0 cannot drive Virtual-1, Virtual-2 at once: no CRTC left for Virtual-2 (every output needs a CRTC of its own that one of its encoders can use; CRTCs: 10)")
    }

    /// The second output plugged in later on a card with one CRTC: its head stays inactive with an
    /// error naming it; the first head goes on undisturbed.
    @Test func outputPluggedWithoutAFreeCRTCStaysInactive() throws {
        let r = try CardRig(outputs: [CardRig.twoOutputs[0], FakeKMS.Output("Virtual-2", modes: [Rig.small], status: .disconnected)],
                            crtcs: 1)
        try r.present(0, Rig.red)
        r.kms.setStatus("Virtual-2", .connected)
        r.kms.hotplug()
        #expect(r.logs.count(containing: "error: no CRTC left for Virtual-2") == 1, "\(r.logs.all.suffix(3))")
        #expect(r.heads[1].logicalSize == nil && r.events[1] == [])
        #expect(r.events[0] == [.ready])
        try r.present(0, Rig.green)
        #expect(r.kms.committed == [r.modeset(0, fb: 100), .flip(fb: 101)])
    }

    @Test func configErrorsNameTheOutput() throws {
        let kms = FakeKMS(resources: FakeKMS.outputs(CardRig.twoOutputs))
        let loop = ManualEventLoop()
        func message(_ heads: [DRMHeadOptions]) -> String? {
            do {
                _ = try DRMCard(device: kms.path, api: .auto, buffers: 2, heads: heads, scheduler: loop, backend: kms.backend,
                                logger: Logger(label: "test.card"))
                return nil
            } catch { return (error as? KioskError)?.message ?? "\(error)" }
        }
        #expect(message([DRMHeadOptions(output: "Virtual-1"), DRMHeadOptions(output: "virtual-1")])
                == "display heads 1 and 2 both name output \"virtual-1\" on /dev/dri/card0")
        #expect(message([DRMHeadOptions(output: "Virtual-1"), DRMHeadOptions(output: "HDMI-A-9")])
                == "output \"HDMI-A-9\" does not exist on /dev/dri/card0; connectors: Virtual-1 (connected), Virtual-2 (connected)")
        #expect(message([]) == "/dev/dri/card0: no display heads configured")
    }
}
