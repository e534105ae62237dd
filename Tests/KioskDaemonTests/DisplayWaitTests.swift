import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskDRM
import KioskDRMTesting
import KioskState
import KioskTesting
import Testing

/// kioskd started with no display connected (a TV switched off at boot): systemd hears it is
/// ready and waiting — no start time-out, no restart loop — and the scene is shown when the
/// display appears.
@Suite struct DisplayWaitTests {
    static let mode = DRMMode(width: 64, height: 48, refresh: 60, isPreferred: true)

    /// A daemon showing a clock (its table's further lines `clock`) on a fake device's HDMI-A-1
    /// (`status` at start), not started.
    static func clockOnHDMI(_ status: DRMConnector.Status, clock: String = "") throws -> (Daemon, FakeKMS, ManualEventLoop) {
        let dir = tempDir()
        let kms = FakeKMS(resources: FakeKMS.outputs([.init("HDMI-A-1", modes: [mode], status: status)]))
        let config = try loadConfig("""
        state_dir = "\(dir)/state"
        [display]
        backend = "drm"
        device = "\(kms.path)"
        [scene.clock]
        kind = "clock"
        \(clock)
        """, dir: dir)
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: kms.backend)
        let d = try Daemon(config: config, displays: made.outputs, input: nil, state: MemoryStateStore(), loop: loop, time: loop,
                           logger: quietLogger)
        d.displayOwner = made.owner
        return (d, kms, loop)
    }

    @Test func startsReadyAndWaitingThenShowsTheClockWhenADisplayAppears() throws {
        let (d, kms, loop) = try Self.clockOnHDMI(.disconnected, clock: "color_mode = \"scaled\"\nunsynced = \"ignore\"")
        var ready = 0
        var statuses: [String] = []
        d.onReady = { ready += 1 }
        d.onStatus = { statuses.append($0) }
        d.startAsKioskd()
        loop.runDeferred()
        #expect(ready == 1, "READY=1 at start although nothing is connected")
        #expect(statuses.last?.hasPrefix("waiting for a display; ") == true, "\(statuses)")
        #expect(statuses.last?.contains("\(kms.path) (no connected output)") == true, "\(statuses)")
        loop.advance(by: 3_000_000_000)
        #expect(kms.committed.isEmpty)

        // The TV is switched on; no udev event is needed.
        kms.setStatus("HDMI-A-1", .connected)
        loop.advance(by: 500_000_000)
        loop.runDeferred()
        guard case .modeset(let connector, _, let fb, let size, true)? = kms.committed.first else {
            Issue.record("no mode set within 500 ms of the display appearing: \(kms.committed)")
            return
        }
        #expect(connector == "HDMI-A-1" && size == Size(width: 64, height: 48))
        // The whole clock is drawn there (the scene drawn off screen while waiting does not make
        // the first real frame a partial one): the scaled colour of the second fills both
        // corners, and the digits give the frame more colours.
        var colours = Set<UInt32>()
        for y in 0..<48 { for x in 0..<64 { if let p = kms.pixel(fb: fb, x: x, y: y) { colours.insert(p & 0xFF_FFFF) } } }
        let corners = [kms.pixel(fb: fb, x: 0, y: 0), kms.pixel(fb: fb, x: 63, y: 47)].map { $0.map { $0 & 0xFF_FFFF } }
        #expect(kms.onScreenFB == fb && colours.count > 1, "\(colours.count) colours on screen")
        #expect(corners[0] == corners[1] && corners[0] != nil && corners[0] != 0, "corners \(corners)")
        #expect(d.manager.frameCount >= 1)
        #expect(ready == 1, "READY=1 only once")
        #expect(statuses.last?.hasPrefix("scene clock") == true && statuses.last?.contains("HDMI-A-1 64x48@60") == true, "\(statuses)")
        d.shutdown()
    }

    /// `kioskctl outputs` and status tell what reached the panel: nothing while waiting, then
    /// the time of the last completed frame and the frames of the last minute; an error line
    /// when a flip never completes.
    @Test func outputsTellWhatReachedThePanel() throws {
        let (d, kms, loop) = try Self.clockOnHDMI(.disconnected)
        d.startAsKioskd()
        loop.runDeferred()
        let waiting = try #require(d.status().outputs?.first)
        #expect(waiting.framesShownLastMinute == 0 && waiting.lastFrameShown == nil && waiting.error == nil)
        let json = String(decoding: try ControlJSON.encode(OutputsAnswer(outputs: [waiting])), as: UTF8.self)
        #expect(json.contains("\"last_frame_shown\":null") && json.contains("\"frames_shown_last_minute\":0"), "\(json)")
        kms.setStatus("HDMI-A-1", .connected)
        loop.advance(by: 500_000_000)
        loop.runDeferred()
        let shown = try #require(d.status().outputs?.first)
        #expect(shown.framesShownLastMinute == 1 && shown.lastFrameShown == "2023-11-14T22:13:20Z", "\(shown)")
        // The next second's frame goes out by a flip whose event never comes.
        kms.flipEventsLost = true
        loop.advance(by: 1_000_000_000)
        loop.runDeferred()
        #expect(kms.pendingFlipFB(crtc: 10) != nil, "\(kms.committed)")
        loop.advance(by: 2_000_000_000)
        let lost = try #require(d.status().outputs?.first)
        #expect(lost.error?.hasPrefix("a page flip of HDMI-A-1 64x48@60 did not complete within 2000 ms") == true, "\(lost)")
        #expect(lost.framesShownLastMinute == 1)
        d.shutdown()
    }

    /// The TV is switched off hours after start (its connector goes "disconnected"): systemd's
    /// STATUS goes back to waiting for a display, as at boot, and status and outputs say nothing
    /// is connected; when it is switched on again STATUS says what is shown there.
    @Test func aDisplayThatGoesAwayLaterIsWaitedForAgain() throws {
        let (d, kms, loop) = try Self.clockOnHDMI(.connected)
        var ready = 0
        var statuses: [String] = []
        d.onReady = { ready += 1 }
        d.onStatus = { statuses.append($0) }
        d.startAsKioskd()
        loop.runDeferred()
        #expect(ready == 1 && statuses.last?.hasPrefix("scene clock") == true, "\(statuses)")
        for _ in 0..<2 {
            loop.advance(by: 1_000_000_000)
            loop.runDeferred()
            kms.completeFlip()
            loop.runDeferred()
        }

        // Switched off: the kernel reports the connector disconnected (a udev change event).
        let told = statuses.count
        kms.setStatus("HDMI-A-1", .disconnected)
        kms.hotplug()
        loop.runDeferred()
        #expect(statuses.count > told, "a STATUS is sent when the last display goes: \(statuses)")
        let waiting = try #require(statuses.last)
        #expect(waiting.hasPrefix("waiting for a display; ") && waiting.contains("\(kms.path) (no connected output)"), "\(waiting)")
        let status = d.status()
        #expect(status.output == "\(kms.path) (no connected output)" && status.mode == "none", "\(status.output) \(status.mode)")
        let output = try #require(status.outputs?.first)
        #expect(output.logicalSize == nil && output.description == "\(kms.path) (no connected output)", "\(output)")
        loop.advance(by: 3_000_000_000)
        loop.runDeferred()
        #expect(statuses.last == waiting, "still waiting: \(statuses.suffix(2))")

        // Switched on again, without a udev event (the connector poll finds it).
        let modesets = kms.committed.filter { if case .modeset = $0 { return true } else { return false } }.count
        kms.setStatus("HDMI-A-1", .connected)
        loop.advance(by: 500_000_000)
        loop.runDeferred()
        #expect(kms.committed.filter { if case .modeset = $0 { return true } else { return false } }.count == modesets + 1, "\(kms.committed)")
        let back = try #require(statuses.last)
        #expect(back.hasPrefix("scene clock") && back.contains("HDMI-A-1 64x48@60") && !back.contains("waiting"), "\(statuses.suffix(3))")
        #expect(d.status().mode == "64x48")
        #expect(ready == 1, "READY=1 only once")
        d.shutdown()
    }

    /// With a display connected, READY=1 still waits for the first frame.
    @Test func readyComesWithTheFirstFrameWhenADisplayIsConnected() throws {
        let (d, kms, loop) = try Self.clockOnHDMI(.connected)
        var ready = 0
        var statuses: [String] = []
        d.onReady = { ready += 1 }
        d.onStatus = { statuses.append($0) }
        d.startAsKioskd()
        #expect(ready == 0 && statuses.isEmpty, "nothing is on screen before the loop draws")
        loop.runDeferred()
        #expect(ready == 1 && kms.onScreenFB != nil)
        #expect(statuses.allSatisfy { !$0.contains("waiting") }, "\(statuses)")
        d.shutdown()
    }
}
