#if canImport(Glibc)
import Glibc
#endif
import Testing
import KioskCore
import KioskDRMTesting
import KioskTesting
import Logging
@testable import KioskDRM

/// A display that is not connected when kioskd starts (a TV switched off at boot): the output
/// waits, is shown once the connector appears — also when no udev event says so (a connector
/// forced on through sysfs, a driver that does not poll its connectors) — and takes the mode
/// the new EDID prefers.
@Suite struct NoDisplayAtStartTests {
    static let tv = DRMMode(width: 8, height: 4, refresh: 60, isPreferred: true)
    static let other = DRMMode(width: 6, height: 2, refresh: 50, isPreferred: true)
    /// How soon a display that appeared without a udev event must be seen (half a second).
    static let poll: Int64 = 500_000_000

    /// A DRMDisplay over one connector that starts `disconnected`, on virtual time.
    final class Rig {
        let kms: FakeKMS
        let loop = ManualEventLoop()
        let logs = CapturedLog(level: .debug)
        let display: DRMDisplay
        var events: [DisplayEvent] = []
        private let painter = Painter()

        init(output: String? = nil, modes: [DRMMode] = [NoDisplayAtStartTests.tv]) throws {
            kms = FakeKMS(resources: FakeKMS.outputs([.init("Virtual-1", modes: modes, status: .disconnected)]))
            display = try DRMDisplay(options: DRMOptions(device: kms.path, output: output), scheduler: loop, backend: kms.backend,
                                     logger: logs.logger)
            display.onEvent = { [unowned self] e in self.events.append(e) }
        }

        deinit {
            display.onEvent = nil
            display.shutdown()
        }

        func present(_ color: UInt32) throws {
            defer { loop.runDeferred() }
            try painter.present(color, on: display)
        }
    }

    @Test(arguments: [nil, "Virtual-1"])
    func connectorAppearingWithoutAUdevEventIsShownWithinHalfASecond(output: String?) throws {
        let r = try Rig(output: output)
        #expect(r.display.logicalSize == nil && !r.display.canPresent)
        #expect(r.logs.count(containing: "no connected output; waiting for hotplug") == 1)
        r.loop.advance(by: 2_000_000_000)
        #expect(r.events.isEmpty, "nothing changed, nothing announced: \(r.events)")
        // Forced on through sysfs: the kernel's connector changes, no udev event comes.
        r.kms.setStatus("Virtual-1", .connected)
        r.loop.advance(by: Self.poll)
        #expect(r.events == [.needsFullRedraw], "\(r.logs.all.suffix(3))")
        #expect(r.display.logicalSize == Size(width: 8, height: 4))
        try r.present(Rig.red)
        #expect(r.kms.committed == [.modeset(connector: "Virtual-1", crtc: 10, fb: 100, size: Size(width: 8, height: 4), active: true)])
        #expect(r.kms.onScreenFB == 100 && r.kms.pixel(fb: 100, x: 7, y: 3) == Rig.red)
        #expect(r.logs.count(containing: "connectors changed without a udev event") == 1)
    }

    /// Reading the connectors stops once the output is shown (no wake-ups of an idle kiosk) and
    /// starts again when it is unplugged.
    @Test func connectorsAreReadOnlyWhileTheOutputWaits() throws {
        let r = try Rig()
        #expect(r.loop.pendingTimers == 1, "one timer looks for the display")
        r.kms.setStatus("Virtual-1", .connected)
        r.kms.hotplug()
        #expect(r.events == [.needsFullRedraw])
        #expect(r.loop.pendingTimers == 0, "the output is active: nothing to look for")
        try r.present(Rig.red)
        r.kms.setStatus("Virtual-1", .disconnected)
        r.kms.hotplug()
        #expect(r.events.last == .inactive)
        #expect(r.loop.pendingTimers == 1)
        r.kms.setStatus("Virtual-1", .connected)
        r.loop.advance(by: Self.poll)
        #expect(r.events.last == .needsFullRedraw && r.loop.pendingTimers == 0)
    }

    /// The display that appears has another EDID than the modes the connector listed at start:
    /// its preferred mode is set; a later EDID change (with its udev event) picks the new one.
    @Test func theModeFollowsTheEDID() throws {
        let r = try Rig(modes: [Self.tv])
        r.kms.setModes("Virtual-1", [Self.other, DRMMode(width: 8, height: 4, refresh: 60)])
        r.kms.setStatus("Virtual-1", .connected)
        r.loop.advance(by: Self.poll)
        #expect(r.display.logicalSize == Size(width: 6, height: 2))
        try r.present(Rig.red)
        #expect(r.kms.mode == Self.other)
        r.kms.setModes("Virtual-1", [DRMMode(width: 6, height: 2, refresh: 50), Self.tv])
        r.kms.hotplug()
        #expect(r.events.last == .needsFullRedraw && r.display.logicalSize == Size(width: 8, height: 4))
        try r.present(Rig.green)
        #expect(r.kms.mode == Self.tv && r.kms.committed.last == .modeset(connector: "Virtual-1", crtc: 10, fb: 102,
                                                                          size: Size(width: 8, height: 4), active: true))
        #expect(r.kms.pixel(fb: 102, x: 7, y: 3) == Rig.green)
    }

    /// A card that is not DRM master reads nothing: the session that holds it decides.
    @Test func noLookingWithoutMaster() throws {
        let r = try Rig()
        r.display.releaseMaster()
        #expect(r.loop.pendingTimers == 0)
        r.kms.setStatus("Virtual-1", .connected)
        r.loop.advance(by: Self.poll * 4)
        #expect(r.display.logicalSize == nil)
        try r.display.acquireMaster()
        #expect(r.display.logicalSize == Size(width: 8, height: 4))
    }
}

extension NoDisplayAtStartTests.Rig {
    static let red: UInt32 = 0xFFFF_0000, green: UInt32 = 0xFF00_FF00
}
