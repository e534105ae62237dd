#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import KioskCore
import KioskDRMTesting
import KioskTesting
import Logging
@testable import KioskDRM

/// A DRMDisplay on a FakeKMS, timers on virtual time, and a frame to present.
final class Rig {
    static let big = DRMMode(width: 8, height: 4, refresh: 60, isPreferred: true)
    static let small = DRMMode(width: 6, height: 2, refresh: 60, isPreferred: true)
    static let onePixel = Damage([Rect(x: 0, y: 0, width: 1, height: 1)])
    static let red: UInt32 = 0xFFFF_0000, green: UInt32 = 0xFF00_FF00, blue: UInt32 = 0xFF00_00FF, white: UInt32 = 0xFFFF_FFFF

    let kms: FakeKMS
    let loop = ManualEventLoop()
    let logs = CapturedLog(level: .debug)
    let display: DRMDisplay
    var events: [DisplayEvent] = []
    private let painter = Painter()

    init(modes: [DRMMode] = [Rig.big], output: String? = nil, buffers: Int = 2) throws {
        kms = FakeKMS(resources: FakeKMS.oneOutput(modes: modes))
        display = try DRMDisplay(options: DRMOptions(device: kms.path, output: output, buffers: buffers), scheduler: loop,
                                 backend: kms.backend, logger: logs.logger)
        display.onEvent = { [unowned self] e in self.events.append(e) }
    }

    deinit {
        display.onEvent = nil
        display.shutdown()
    }

    /// Presents a frame of one colour (`damage`, else the whole frame, marked changed), then
    /// ends the loop iteration.
    func present(_ color: UInt32, damage: Damage? = nil) throws {
        defer { loop.runDeferred() }
        try painter.present(color, on: display, damage: damage)
    }

    func modeset(fb: UInt32, _ mode: DRMMode = Rig.big, active: Bool = true) -> FakeKMS.Commit {
        .modeset(connector: "Virtual-1", crtc: 10, fb: fb, size: mode.size, active: active)
    }
}

/// Frames of one colour for a display, in a buffer of the display's logical size.
final class Painter {
    private var frame: PixelBuffer?

    deinit { frame?.base.deallocate() }

    /// Presents a frame of one colour on `display` (`damage`, else the whole frame, marked changed).
    func present(_ color: UInt32, on display: DRMDisplay, damage: Damage? = nil) throws {
        let size = display.logicalSize ?? frame?.size ?? Size(width: 1, height: 1)
        if frame?.size != size {
            frame?.base.deallocate()
            frame = PixelBuffer(base: .allocate(byteCount: size.area * 4, alignment: 16), size: size, stride: size.width * 4)
        }
        let f = frame!
        for i in 0..<size.area { f.base.storeBytes(of: color, toByteOffset: i * 4, as: UInt32.self) }
        try display.present(f, damage: damage ?? Damage.full(size))
    }
}

/// DRMDisplay's policy against a fake device: what the VM cannot provoke on demand.
@Suite struct FakeKMSDisplayTests {
    @Test func firstFrameSetsTheModeAndTheNextOneFlips() throws {
        let r = try Rig()
        try r.present(Rig.red)
        #expect(r.kms.committed == [r.modeset(fb: 100)])
        #expect(r.kms.onScreenFB == 100 && r.kms.pixel(fb: 100, x: 7, y: 3) == Rig.red)
        #expect(r.events == [.ready])
        try r.present(Rig.green)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101)])
        #expect(r.kms.pixel(fb: 101, x: 0, y: 0) == Rig.green)
        #expect(!r.display.canPresent, "a queued flip blocks the next frame")
        #expect(r.kms.completeFlip())
        #expect(r.display.scanout.onScreen == 101 && r.kms.onScreenFB == 101)
        #expect(r.display.pageFlipCount == 1 && r.events == [.ready, .ready])
    }

    /// (a) EBUSY: the flip of the frame already drawn is tried again 2 ms later, with no new
    /// frame in between, until the kernel takes it; past the limit the error names the call.
    @Test func busyFlipIsRetriedWithTheSameBuffer() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.flipErrors = [EBUSY, EBUSY]
        try r.present(Rig.green)
        #expect(r.display.busyRetries == 1)
        #expect(r.kms.committed == [r.modeset(fb: 100)], "nothing is committed while the kernel is busy")
        #expect(!r.display.canPresent, "no new frame while a retry waits")
        #expect(r.loop.advance(by: DRMDisplay.busyRetryDelayNs - 1) == 0)
        #expect(r.loop.advance(by: 1) == 1)
        #expect(r.display.busyRetries == 2 && r.kms.committed.count == 1)
        r.loop.advance(by: DRMDisplay.busyRetryDelayNs)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101)])
        #expect(r.kms.pixel(fb: 101, x: 3, y: 2) == Rig.green, "the retried flip shows the frame drawn before")
        r.kms.completeFlip()
        #expect(r.display.scanout.onScreen == 101 && r.display.pageFlipCount == 1)
        #expect(r.events == [.ready, .ready])
        #expect(r.display.canPresent)
    }

    @Test func busyPastTheLimitIsLoggedWithCallAndErrno() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.flipErrors = Array(repeating: EBUSY, count: DRMDisplay.busyRetryLimit + 1)
        try r.present(Rig.green)
        r.loop.advance(by: DRMDisplay.busyRetryDelayNs * Int64(DRMDisplay.busyRetryLimit + 5))
        #expect(r.display.busyRetries == UInt64(DRMDisplay.busyRetryLimit))
        #expect(r.kms.committed == [r.modeset(fb: 100)])
        #expect(r.logs.count(containing: "error: page flip failed: drmModePageFlip /dev/dri/card0 Virtual-1 8x4@60 failed: Device or resource busy (errno 16)") == 1,
                "\(r.logs.all.suffix(3))")
        #expect(r.display.canPresent, "the display goes on with the next frame")
        try r.present(Rig.blue, damage: Rig.onePixel)
        #expect(r.kms.committed.last == .flip(fb: 101))
        #expect(r.display.lastCopiedPixels == 32, "the buffer whose flip failed gets the whole frame again")
    }

    /// (b) Another client takes DRM master while a flip is queued: the flip still completes,
    /// the next one fails with EACCES naming the call; the display stops presenting and, given
    /// master back, sets the mode again with a complete frame.
    @Test func masterLostMidFlip() throws {
        let r = try Rig()
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.kms.loseMaster()
        r.kms.completeFlip()
        #expect(r.display.scanout.onScreen == 101 && r.events.last == .ready)
        var thrown: KioskError?
        do { try r.present(Rig.blue) } catch let e as KioskError { thrown = e }
        #expect(thrown?.errno == EACCES)
        #expect(thrown?.message == "drmModePageFlip /dev/dri/card0 Virtual-1 8x4@60 failed: Permission denied (errno 13)")
        #expect(r.events.last == .inactive)
        #expect(!r.display.canPresent && r.display.logicalSize == nil)
        #expect(r.logs.count(containing: "warning: lost DRM master") == 1)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101)])
        #expect(r.kms.onScreenFB == 101 && r.kms.freed.isEmpty)

        #expect(throws: KioskError.self) { try r.display.acquireMaster() }
        r.kms.releaseOtherMaster()
        try r.display.acquireMaster()
        #expect(r.events.last == .needsFullRedraw)
        try r.present(Rig.white, damage: Rig.onePixel)
        #expect(r.kms.committed.last == r.modeset(fb: 100))
        #expect(r.display.lastCopiedPixels == 32)
        #expect(r.kms.pixel(fb: 100, x: 0, y: 0) == Rig.white && r.kms.onScreenFB == 100)
    }

    /// (c) The connector goes and comes back while a flip is queued: inactive, then a full
    /// redraw that waits for the queued flip's event before it sets the mode.
    @Test func hotplugDuringAPendingFlip() throws {
        let r = try Rig()
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.kms.setStatus("Virtual-1", .disconnected)
        r.kms.hotplug()
        #expect(r.events.last == .inactive && r.display.logicalSize == nil)
        #expect(r.logs.count(containing: "warning: no connected output; waiting for hotplug") == 1)
        r.kms.setStatus("Virtual-1", .connected)
        r.kms.hotplug()
        #expect(r.events.last == .needsFullRedraw && r.display.logicalSize == Size(width: 8, height: 4))
        #expect(!r.display.canPresent, "the flip queued before is still pending")
        try r.present(Rig.blue)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101)], "no mode set while a flip is pending")
        r.kms.completeFlip()
        #expect(r.events.last == .ready && r.display.scanout.onScreen == 101)
        try r.present(Rig.blue, damage: Rig.onePixel)
        #expect(r.kms.committed.last == r.modeset(fb: 100))
        #expect(r.display.lastCopiedPixels == 32)
        #expect(r.kms.freedWhileInUse.isEmpty && r.kms.freed.isEmpty)
    }

    /// The connector goes off and comes back with another mode of the same size (virtio-gpu's
    /// no-EDID fallback @60 after @75): the frame for the new mode set goes into a buffer the CRTC
    /// does not scan out, so it is not drawn on screen and the mode set changes the framebuffer,
    /// which virtio-gpu needs to show it.
    @Test func connectorBackWithAnotherModeShowsTheFirstFrame() throws {
        let at75 = DRMMode(width: 8, height: 4, refresh: 75, isPreferred: true)
        let at60 = DRMMode(width: 8, height: 4, refresh: 60, isPreferred: true)
        let r = try Rig(modes: [at75])
        r.kms.modesetKeepingFBBlanks = true
        try r.present(Rig.red)
        #expect(r.kms.displayedFB == 100)
        r.kms.setStatus("Virtual-1", .disconnected)
        r.kms.hotplug()
        #expect(r.events.last == .inactive)
        r.kms.setModes("Virtual-1", [at60])
        r.kms.setStatus("Virtual-1", .connected)
        r.kms.hotplug()
        #expect(r.events.last == .needsFullRedraw)
        try r.present(Rig.green)
        #expect(r.kms.committed == [r.modeset(fb: 100, at75), r.modeset(fb: 101, at60)])
        #expect(r.kms.drawnWhileOnScreen == [], "the frame was drawn into the buffer on screen")
        #expect(r.kms.displayedFB == 101, "the first frame after the mode set is not shown")
        #expect(r.kms.pixel(fb: 101, x: 7, y: 3) == Rig.green)
        try r.present(Rig.blue)
        #expect(r.kms.committed.last == .flip(fb: 100))
        #expect(r.kms.completeFlip())
        #expect(r.kms.displayedFB == 100 && r.kms.drawnWhileOnScreen == [])
    }

    /// The connector comes back with the same mode, or the flip queued before it went off
    /// completes only after it came back: the mode set's frame avoids the buffer on screen.
    @Test func connectorBackWithTheSameModeDrawsOffScreen() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.setStatus("Virtual-1", .disconnected)
        r.kms.hotplug()
        r.kms.setStatus("Virtual-1", .connected)
        r.kms.hotplug()
        try r.present(Rig.green)
        #expect(r.kms.committed == [r.modeset(fb: 100), r.modeset(fb: 101)])
        try r.present(Rig.blue)
        #expect(r.kms.committed.last == .flip(fb: 100))
        r.kms.setStatus("Virtual-1", .disconnected)
        r.kms.hotplug()
        r.kms.setStatus("Virtual-1", .connected)
        r.kms.hotplug()
        #expect(r.kms.completeFlip())
        try r.present(Rig.red)
        #expect(r.kms.committed.last == r.modeset(fb: 101))
        #expect(r.kms.drawnWhileOnScreen == [] && r.kms.displayedFB == 101)
    }

    /// (c) The named connector vanishes from the device: the error says which and what is left.
    @Test func namedConnectorVanishing() throws {
        let r = try Rig(output: "Virtual-1")
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.kms.removeConnector("Virtual-1")
        r.kms.hotplug()
        #expect(r.events.last == .inactive)
        #expect(r.logs.count(containing: "error: reconfiguring after hotplug failed: output \"Virtual-1\" does not exist on /dev/dri/card0; connectors: none") == 1,
                "\(r.logs.all.suffix(2))")
        #expect(r.kms.completeFlip())
        #expect(r.display.pageFlipCount == 1 && r.events.last == .inactive, "no .ready while inactive")
    }

    /// (d) A resize while a flip is queued: the buffer on screen and the one queued are not freed
    /// until the kernel is done with them; the new mode is set only after the flip's event.
    @Test func resizeDuringAPendingFlipFreesBuffersOnlyWhenTheKernelLetsGo() throws {
        let r = try Rig()
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.kms.setModes("Virtual-1", [Rig.small])
        r.kms.hotplug()
        #expect(r.events.last == .needsFullRedraw && r.display.logicalSize == Size(width: 6, height: 2))
        #expect(r.kms.created == [100, 101, 102, 103])
        #expect(r.kms.freed == [], "100 is on screen and 101 queued")
        #expect(!r.display.canPresent)
        r.kms.completeFlip()
        #expect(r.kms.freed == [100], "the old front is freed once the flip took it off screen")
        #expect(r.events.last == .ready)
        try r.present(Rig.blue)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101), r.modeset(fb: 102, Rig.small)])
        #expect(r.kms.freed == [100, 101])
        #expect(r.kms.live == [102, 103])
        #expect(r.kms.freedWhileInUse == [])
        #expect(r.kms.onScreenFB == 102 && r.kms.pixel(fb: 102, x: 5, y: 1) == Rig.blue)
    }

    /// A resize while a busy flip waits for its retry: the retry is dropped (its buffer belongs
    /// to the old size) and the next frame sets the new mode.
    @Test func resizeCancelsABusyRetry() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.flipErrors = [EBUSY]
        try r.present(Rig.green)
        #expect(r.display.busyRetries == 1 && r.loop.pendingTimers == 1)
        r.kms.setModes("Virtual-1", [Rig.small])
        r.kms.hotplug()
        #expect(r.events.last == .needsFullRedraw)
        #expect(r.loop.pendingTimers == 0, "the retry is cancelled")
        r.loop.advance(by: DRMDisplay.busyRetryDelayNs * 2)
        #expect(r.kms.committed == [r.modeset(fb: 100)], "no flip of an old buffer, no flip without a mode set")
        #expect(r.display.canPresent)
        try r.present(Rig.blue)
        #expect(r.kms.committed == [r.modeset(fb: 100), r.modeset(fb: 102, Rig.small)])
        #expect(r.kms.freed == [101, 100] && r.kms.freedWhileInUse == [])
    }

    /// (e) A signal interrupts the wait for a queued flip (EINTR): the wait goes on and the
    /// flip completes instead of being given up.
    @Test func interruptedWaitForFlipIsResumed() throws {
        let r = try Rig()
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.kms.interruptedWaits = 2
        try r.display.setBlanked(true)
        #expect(r.kms.waits.count == 3, "two waits cut short by EINTR, the third gets the event")
        #expect(r.display.pageFlipCount == 1)
        #expect(r.display.scanout.onScreen == 101 && r.display.scanout.queued == nil)
        #expect(r.logs.count(containing: "did not arrive") == 0)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101), .setActive(false)])
        #expect(r.display.isBlanked)
    }

    /// A flip event that never comes: the display gives the flip up after the timeout and goes
    /// on; at shutdown the wait is bounded and the CRTC found at start is restored.
    @Test func lostFlipEventIsGivenUp() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.flipEventsLost = true
        try r.present(Rig.green)
        r.kms.completeFlip()
        #expect(r.display.pageFlipCount == 0 && !r.display.canPresent)
        r.loop.advance(by: DRMDisplay.flipEventTimeoutNs - 1)
        #expect(!r.display.canPresent)
        r.loop.advance(by: 1)
        #expect(r.logs.count(containing: "error: page flip event did not arrive within 2000 ms") == 1)
        #expect(r.display.canPresent && r.events.last == .ready)
        try r.present(Rig.blue)
        #expect(r.kms.committed.last == .flip(fb: 101))
        r.display.shutdown()
        // Still the same episode (no frame completed since): no second error line.
        #expect(r.logs.count(containing: "page flip event did not arrive") == 1)
        #expect(r.kms.committed.last == .restore(SavedCrtc(crtc: 10, fb: 7, x: 0, y: 0, mode: Rig.big, connector: 30)))
        #expect(r.kms.onScreenFB == 7)
        #expect(r.kms.live == [], "every buffer freed after the restore")
    }

    /// Handing the device over (VT switch): a queued flip is waited for, master dropped, nothing
    /// presented; taking it back sets the mode again with the whole frame.
    @Test func releaseAndAcquireMaster() throws {
        let r = try Rig()
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.display.releaseMaster()
        #expect(r.display.pageFlipCount == 1, "the queued flip was waited for")
        #expect(!r.kms.isMaster && r.events.last == .inactive && !r.display.canPresent)
        try r.present(Rig.blue)
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101)])
        try r.display.acquireMaster()
        #expect(r.kms.isMaster && r.events.last == .needsFullRedraw)
        try r.present(Rig.blue, damage: Rig.onePixel)
        #expect(r.kms.committed.last == r.modeset(fb: 100) && r.display.lastCopiedPixels == 32)
        #expect(r.display.modesetCount == 2)
    }

    /// The device node goes away and comes back: everything is let go, then the device is
    /// opened again and the next frame sets the mode.
    @Test func deviceRemovedAndAddedBack() throws {
        let r = try Rig()
        try r.present(Rig.red)
        r.kms.hotplug("remove")
        #expect(r.events.last == .inactive && r.display.displayDescription == "drm (no device)")
        #expect(r.kms.live == [], "buffers of a removed device are freed")
        r.kms.hotplug("add")
        #expect(r.events.last == .needsFullRedraw && r.display.logicalSize == Size(width: 8, height: 4))
        try r.present(Rig.green)
        #expect(r.kms.committed == [r.modeset(fb: 100), r.modeset(fb: 102)])
        #expect(r.kms.pixel(fb: 102, x: 0, y: 0) == Rig.green)
        #expect(r.logs.count(containing: "info: opened DRM device") == 2)
    }

    @Test func shutdownRestoresThroughTheDeviceAndFreesEverything() throws {
        let r = try Rig(buffers: 3)
        try r.present(Rig.red)
        try r.present(Rig.green)
        r.kms.completeFlip()
        r.display.shutdown()
        #expect(r.kms.committed == [r.modeset(fb: 100), .flip(fb: 101),
                                    .restore(SavedCrtc(crtc: 10, fb: 7, x: 0, y: 0, mode: Rig.big, connector: 30))])
        #expect(r.kms.freed.sorted() == [100, 101, 102] && r.kms.freedWhileInUse.isEmpty)
        #expect(r.logs.count(containing: "info: restored the CRTC found at start") == 1)
        #expect(!r.kms.isMaster, "DRM master dropped")
    }
}
