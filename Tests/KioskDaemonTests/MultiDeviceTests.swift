import Foundation
import KioskCore
import KioskConfig
@testable import KioskDaemon
import KioskDRM
import KioskDRMTesting
import KioskState
import KioskTesting
import Testing

/// `[[output]]`s on several DRM devices, one daemon: each output's `device` (a driver name, a
/// by-path name) or its connector alone finds its device; each device is a card of its own, so
/// one device going away leaves the other's output flipping.
@Suite struct MultiDeviceTests {
    static let mode = DRMMode(width: 64, height: 48, refresh: 60, isPreferred: true)

    /// A seat like QEMU's with a virtio-gpu (card1, Virtual-2) and a bochs-display (card0,
    /// Virtual-1), plus a render-only device (card2).
    static func seat() -> FakeKMSDevices {
        let seat = FakeKMSDevices()
        seat.add(FakeKMS(path: "/dev/dri/card0", resources: FakeKMS.outputs([.init("Virtual-1", modes: [mode])], consoleFB: 7)),
                 driver: "bochs-drm", byPath: "/dev/dri/by-path/pci-0000:00:02.0-card")
        seat.add(FakeKMS(path: "/dev/dri/card1", resources: FakeKMS.outputs([.init("Virtual-2", modes: [mode])], consoleFB: 9)),
                 driver: "virtio_gpu", byPath: "/dev/dri/by-path/pci-0000:00:01.0-card")
        seat.addRenderOnly(path: "/dev/dri/card2", driver: "v3d")
        return seat
    }

    static func config(_ dir: String, _ first: String, _ second: String) throws -> DaemonConfig {
        try loadConfig("""
        state_dir = "\(dir)/state"
        [display]
        backend = "drm"
        [[output]]
        \(first)
        scenes = ["clock"]
        [[output]]
        \(second)
        scenes = ["score"]
        [scene.clock]
        kind = "clock"
        color_mode = "scaled"
        unsynced = "ignore"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        """, dir: dir)
    }

    /// The connector each device set a mode on, by device path.
    static func modesets(_ seat: FakeKMSDevices) -> [String: [String]] {
        var out: [String: [String]] = [:]
        for d in seat.devices {
            guard let k = d.kms else { continue }
            out[k.path] = k.committed.compactMap { if case .modeset(let c, _, _, _, _) = $0 { return c } else { return nil } }
        }
        return out
    }

    /// The bochs device (card0) is bound again and comes back as card3, and a virtio device is
    /// added as card4 at the same time (its udev event first): card4 must not be opened.
    static func bochsBackAsCard3(_ seat: FakeKMSDevices, loop: ManualEventLoop) -> FakeKMS {
        seat.remove("/dev/dri/card0")
        let again = FakeKMS(path: "/dev/dri/card3", resources: FakeKMS.outputs([.init("Virtual-1", modes: [mode])]))
        seat.add(again, driver: "bochs-drm")
        let other = FakeKMS(path: "/dev/dri/card4", resources: FakeKMS.outputs([.init("Virtual-4", modes: [mode])]))
        seat.add(other, driver: "virtio_gpu")
        seat.hotplug(other.path, "add")
        seat.hotplug(again.path, "add")
        loop.runDeferred()
        #expect(seat.opened.filter { $0 == other.path }.isEmpty, "a device of another driver is not taken for it: \(seat.opened)")
        return again
    }

    @Test func outputsNamingDriversAreDrawnOnTheirDevices() throws {
        let dir = tempDir(), seat = Self.seat()
        let config = try Self.config(dir, "device = \"virtio_gpu\"", "device = \"/dev/dri/by-path/pci-0000:00:02.0-card\"")
        #expect(config.outputs.map(\.device) == ["virtio_gpu", "/dev/dri/by-path/pci-0000:00:02.0-card"])
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: seat.backend)
        #expect(made.outputs.map(\.connectorName) == ["Virtual-2", "Virtual-1"])
        #expect(seat.opened.sorted() == ["/dev/dri/card0", "/dev/dri/card1"], "the render-only card2 is never opened: \(seat.opened)")
        let d = try Daemon(config: config, displays: made.outputs, input: nil, state: MemoryStateStore(), loop: loop, time: loop,
                           logger: quietLogger)
        d.displayOwner = made.owner
        d.start()
        loop.runDeferred()
        #expect(Self.modesets(seat) == ["/dev/dri/card1": ["Virtual-2"], "/dev/dri/card0": ["Virtual-1"]])
        // Each device shows its own scene: the clock's background is not the counter's white.
        let clockFB = try #require(seat.kms("/dev/dri/card1")?.onScreenFB), scoreFB = try #require(seat.kms("/dev/dri/card0")?.onScreenFB)
        let clockPixel = seat.kms("/dev/dri/card1")?.pixel(fb: clockFB, x: 1, y: 1)
        let scorePixel = seat.kms("/dev/dri/card0")?.pixel(fb: scoreFB, x: 1, y: 1)
        #expect(scorePixel.map { $0 & 0xFF_FFFF } == 0xFF_FFFF, "the counter's background is white: \(String(scorePixel ?? 0, radix: 16))")
        #expect(clockPixel != scorePixel, "the clock's background differs from the counter's")
        d.shutdown()
        // Each card gives its own CRTC back to the console it found (framebuffers 9 and 7).
        for (path, fb) in [("/dev/dri/card1", UInt32(9)), ("/dev/dri/card0", UInt32(7))] {
            let k = try #require(seat.kms(path))
            #expect(k.onScreenFB(crtc: 10) == fb && k.committed.last == .restore(SavedCrtc(crtc: 10, fb: fb, x: 0, y: 0, mode: Self.mode, connector: 30)),
                    "\(path): \(k.committed.suffix(2))")
            #expect(!k.isMaster, "\(path): DRM master dropped")
        }
    }

    /// The bochs device goes away (unbound): the virtio output keeps its one frame a second,
    /// each flip completed by its own device's events.
    @Test func oneDeviceGoneLeavesTheOtherFlipping() throws {
        let dir = tempDir(), seat = Self.seat()
        let config = try Self.config(dir, "connector = \"Virtual-2\"", "device = \"bochs-drm\"")
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: seat.backend)
        let d = try Daemon(config: config, displays: made.outputs, input: nil, state: MemoryStateStore(), loop: loop, time: loop,
                           logger: quietLogger)
        d.displayOwner = made.owner
        d.start()
        loop.runDeferred()
        let virtio = try #require(seat.kms("/dev/dri/card1")), bochs = try #require(seat.kms("/dev/dri/card0"))
        #expect(Self.modesets(seat) == ["/dev/dri/card1": ["Virtual-2"], "/dev/dri/card0": ["Virtual-1"]])
        seat.hotplug(bochs.path, "remove")
        let before = virtio.committed.count
        for _ in 0..<5 {
            loop.advance(by: 1_000_000_000)
            loop.runDeferred()
            virtio.completeFlip()
            loop.runDeferred()
        }
        let flips = virtio.committed[before...].filter { if case .flip = $0 { return true } else { return false } }
        #expect(flips.count >= 4, "the clock on the virtio device flips on every second after the bochs device left: \(virtio.committed)")
        let status = try #require(d.status().outputs)
        #expect(status.map(\.name) == ["Virtual-2", "output-2"])
        #expect((status[0].framesShownLastMinute ?? 0) >= 5, "\(status[0])")

        // The bochs device is bound again and comes back as card3: its output follows it there,
        // and a virtio device added later is not taken for it.
        let again = Self.bochsBackAsCard3(seat, loop: loop)
        guard case .modeset("Virtual-1", _, _, _, true)? = again.committed.first else {
            Issue.record("the counter is not shown on the bochs device back as card3: \(again.committed)")
            return
        }
        d.shutdown()
    }

    /// One output, its device named by driver: the device is unbound and comes back as card3;
    /// the output follows it there, and a device of another driver added meanwhile is not taken
    /// for it.
    @Test func aSingleOutputFollowsItsDeviceToAnotherCardNumber() throws {
        let dir = tempDir(), seat = Self.seat()
        let config = try loadConfig("""
        state_dir = "\(dir)/state"
        [display]
        backend = "drm"
        device = "bochs-drm"
        [scene.clock]
        kind = "clock"
        """, dir: dir)
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: seat.backend)
        let d = try Daemon(config: config, displays: made.outputs, input: nil, state: MemoryStateStore(), loop: loop, time: loop,
                           logger: quietLogger)
        d.displayOwner = made.owner
        d.start()
        loop.runDeferred()
        #expect(Self.modesets(seat)["/dev/dri/card0"] == ["Virtual-1"], "\(Self.modesets(seat))")
        seat.hotplug("/dev/dri/card0", "remove")
        loop.runDeferred()
        #expect(d.waitingForDisplay)
        let again = Self.bochsBackAsCard3(seat, loop: loop)
        guard case .modeset("Virtual-1", _, _, _, true)? = again.committed.first else {
            Issue.record("the clock is not shown on the bochs device back as card3: \(again.committed)")
            return
        }
        #expect(!d.waitingForDisplay && d.display.connectorName == "Virtual-1")
        d.shutdown()
    }

    @Test func anAmbiguousOrUnknownDeviceIsAConfigErrorNamingTheKey() throws {
        let dir = tempDir(), seat = Self.seat()
        seat.add(FakeKMS(path: "/dev/dri/card3", resources: FakeKMS.outputs([.init("Virtual-3", modes: [Self.mode])])), driver: "virtio_gpu")
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        func error(_ first: String, _ second: String) throws -> String {
            let config = try Self.config(dir, first, second)
            return configError { _ = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: seat.backend) } ?? "no error"
        }
        let twoVirtio = try error("device = \"bochs-drm\"", "device = \"virtio_gpu\"")
        #expect(twoVirtio.hasSuffix(".toml:7: key 'output[1].device': driver \"virtio_gpu\" names 2 DRM devices: /dev/dri/card1 (virtio_gpu, "
            + "/dev/dri/by-path/pci-0000:00:01.0-card), /dev/dri/card3 (virtio_gpu); name this output's connector, or the device by its "
            + "/dev/dri/by-path name"), "\(twoVirtio)")
        #expect(try error("device = \"bochs-drm\"", "device = \"virtio_gpu\"\nconnector = \"Virtual-3\"") == "no error")
        let v3d = try error("device = \"v3d\"", "connector = \"Virtual-1\"")
        #expect(v3d.contains(":4: key 'output[0].device': driver \"v3d\" has no device with connectors"), "\(v3d)")
    }

    /// A device `[display] device` names that fits no device, or two, is refused with the line
    /// the key is written on — for one output and for `[[output]]`s that take it from there —
    /// as is a connector `[display] output` asks for that the device lacks.
    @Test func displayDeviceErrorsNameTheirLine() throws {
        let dir = tempDir(), seat = Self.seat()
        seat.add(FakeKMS(path: "/dev/dri/card3", resources: FakeKMS.outputs([.init("Virtual-3", modes: [Self.mode])])), driver: "virtio_gpu")
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        func error(_ text: String) throws -> String {
            let config = try loadConfig("state_dir = \"\(dir)/state\"\n" + text + "\n[scene.clock]\nkind = \"clock\"\n", dir: dir)
            return configError { _ = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: seat.backend) } ?? "no error"
        }
        let single = try error("[display]\nbackend = \"drm\"\ndevice = \"virtio_gpu\"")
        #expect(single.hasSuffix("/kioskd.toml:4: key 'display.device': driver \"virtio_gpu\" names 2 DRM devices: /dev/dri/card1 (virtio_gpu, "
            + "/dev/dri/by-path/pci-0000:00:01.0-card), /dev/dri/card3 (virtio_gpu); name this output's connector, or the device by its "
            + "/dev/dri/by-path name"), "\(single)")
        let shared = try error("[display]\nbackend = \"drm\"\n\ndevice = \"nouveau\"\n[[output]]\nconnector = \"Virtual-1\"\n[[output]]\nconnector = \"Virtual-2\"")
        #expect(shared.contains("/kioskd.toml:5: key 'display.device': no DRM device has driver \"nouveau\""), "\(shared)")
        let connector = try error("[display]\nbackend = \"drm\"\ndevice = \"bochs-drm\"\noutput = \"HDMI-A-9\"")
        #expect(connector.contains("/kioskd.toml:5: key 'display.output': output \"HDMI-A-9\" does not exist on /dev/dri/card0"), "\(connector)")
    }

    @Test func deviceKeysAreChecked() throws {
        let dir = tempDir()
        func err(_ device: String) -> String {
            configError { _ = try Self.config(dir, "device = \(device)", "") } ?? "no error"
        }
        #expect(err("\"\"").contains("key 'output[0].device': expected a DRM device: a driver name like"))
        #expect(err("\"vc4\\n\"").contains("key 'output[0].device': expected a DRM device"))
        #expect(err("\"vc4\"") == "no error")
        #expect(err("\"/dev/dri/by-path/platform-axi:gpu-card\"") == "no error")
        let display = try loadConfig("state_dir = \"\(dir)/state\"\n[display]\ndevice = \"drm-rp1-dsi\"\n[scene.c]\nkind = \"clock\"\n", dir: dir)
        #expect(display.display.device == "drm-rp1-dsi", "a driver name in [display] is kept, not taken as a file next to the config")
    }

    /// config/pi5-hdmi-dsi.toml on a Raspberry Pi 5's devices as the kernel shows them (v3d
    /// render-only as card0, RP1's DSI as card1, vc4 as card2): HDMI-A-1 on vc4, the Touch
    /// Display 2 on RP1's DSI turned to landscape, its touch controller following it.
    @Test func thePi5ExampleFindsItsTwoDevices() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        var config = try DaemonConfig.load(path: "\(root)/config/pi5-hdmi-dsi.toml", environment: [:])
        #expect(config.outputs.map(\.device) == ["vc4", "drm-rp1-dsi"])
        #expect(config.outputs.map(\.rotation) == [.r0, .r90])
        #expect(config.input.devices == [InputDeviceRule(match: "*Goodix*", output: "output-2")])
        config.display.backend = .drm
        let seat = FakeKMSDevices()
        seat.addRenderOnly(path: "/dev/dri/card0", driver: "v3d", byPath: "/dev/dri/by-path/platform-1002000000.v3d-card")
        let panel = DRMMode(width: 720, height: 1280, refresh: 60, isPreferred: true)
        seat.add(FakeKMS(path: "/dev/dri/card1", resources: FakeKMS.outputs([.init("DSI-1", modes: [panel])])),
                 driver: "drm-rp1-dsi", byPath: "/dev/dri/by-path/platform-1f00130000.dsi-card")
        seat.add(FakeKMS(path: "/dev/dri/card2", resources: FakeKMS.outputs([.init("HDMI-A-1", modes: [Self.mode]),
                                                                             .init("HDMI-A-2", modes: [Self.mode], status: .disconnected)])),
                 driver: "vc4", byPath: "/dev/dri/by-path/platform-axi:gpu-card")
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: seat.backend)
        #expect(made.outputs.map(\.connectorName) == ["HDMI-A-1", "DSI-1"])
        #expect(made.outputs.map(\.logicalSize) == [Size(width: 64, height: 48), Size(width: 1280, height: 720)])
        #expect(seat.opened.sorted() == ["/dev/dri/card1", "/dev/dri/card2"])
    }
}
