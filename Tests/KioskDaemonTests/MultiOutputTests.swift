import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskDRM
import KioskDRMTesting
import KioskPosix
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import Testing

/// `[[output]]`: several outputs, each with its scenes, theme and blanking; touches routed to
/// their device's output; a counter shown on two outputs is one value.
@Suite struct MultiOutputTests {
    static let scenes = """
    [scene.clock]
    kind = "clock"
    [scene.score]
    kind = "counter"
    [[scene.score.counter]]
    name = "HOME"
    """

    /// Two outputs: the clock on HDMI-A-1 (160x90), the scoreboard on DSI-1 (turned 90°, 80x120 logical).
    static func config(_ dir: String, second: String = "scenes = [\"score\"]", extra: String = "") -> String {
        """
        state_dir = "\(dir)/state"
        \(extra)
        [display]
        backend = "headless"
        [[output]]
        connector = "HDMI-A-1"
        mode = "160x90"
        scenes = ["clock"]
        [[output]]
        connector = "DSI-1"
        mode = "120x80"
        rotation = 90
        \(second)
        \(scenes)
        """
    }

    /// A daemon over one headless display per output, with scripted input.
    static func daemon(_ path: String, state: StateStore = MemoryStateStore(), time: TimeSource = SystemTimeSource())
        throws -> (Daemon, [HeadlessDisplay], ScriptedInput) {
        let config = try DaemonConfig.load(path: path, environment: [:])
        let loop = try EventLoop()
        let displays = try Backends.makeDisplays(config, loop: loop, logger: quietLogger).outputs.map { $0 as! HeadlessDisplay }
        let input = ScriptedInput()
        let d = try Daemon(config: config, displays: displays, input: input, state: state, loop: loop, time: time, logger: quietLogger)
        return (d, displays, input)
    }

    /// Runs the loop until nothing is left to draw (frames are drawn at the end of an iteration).
    static func settle(_ d: Daemon) throws {
        for _ in 0..<5 { try d.step() }
    }

    /// A tap at the centre of the output (touch times on the monotonic clock).
    static func tap(_ input: ScriptedInput, output: Int) {
        let t = UInt64(nowNanos(.monotonic) / 1000)
        input.send([.touch(TouchEvent(.down, slot: 1000, x: 0.5, y: 0.5, timeUsec: t)), .touchFrame(timeUsec: t),
                    .touch(TouchEvent(.up, slot: 1000, x: 0.5, y: 0.5, timeUsec: t + 50_000)), .touchFrame(timeUsec: t + 50_000)],
                   output: output)
    }

    /// The value of counter HOME, as `kioskctl counter HOME` answers it.
    static func home(_ d: Daemon) -> Int? {
        try? JSONDecoder().decode(CounterAnswer.self, from: Data(d.handle(.counter(name: "HOME", op: .get, value: nil)).body)).value
    }

    // MARK: config

    @Test func outputsAreReadWithTheirScenesThemesAndBlanking() throws {
        let dir = tempDir()
        let c = try loadConfig(Self.config(dir, second: """
        scenes = ["score", "clock"]
        theme = "high-contrast"
        calibration = [0, 1, 0, 1, 0, 0]
        [output.blank]
        idle_seconds = 30
        """), dir: dir)
        #expect(c.outputs.map(\.name) == ["HDMI-A-1", "DSI-1"])
        #expect(c.outputs.map(\.scenes) == [["clock"], ["score", "clock"]])
        #expect(c.outputs[1].rotation == .r90 && c.outputs[1].mode == "120x80")
        #expect(c.outputs[0].themeName == nil && c.outputs[1].themeName == "high-contrast")
        #expect(c.outputs[0].calibration == nil && c.outputs[1].calibration == [0, 1, 0, 1, 0, 0])
        #expect(c.outputs[1].blankSettings(c.display).idleBlankSeconds == 30 && c.outputs[0].blankSettings(c.display).idleBlankSeconds == 0)
        #expect(c.scenes.map(\.name) == ["clock", "score"])
    }

    @Test func theSingleDisplayFormIsOneOutput() throws {
        let c = try loadConfig("[display]\noutput = \"DSI-1\"\nrotation = 270\n" + Self.scenes)
        #expect(c.outputs.count == 1)
        #expect(c.outputs[0].connector == "DSI-1" && c.outputs[0].rotation == .r270 && c.outputs[0].scenes == ["clock", "score"])
    }

    @Test func badOutputsAreNamedWithTheirPlace() throws {
        let dir = tempDir()
        func err(_ text: String) -> String { configError { _ = try loadConfig(text, dir: dir) } ?? "no error" }
        #expect(err(Self.config(dir).replacingOccurrences(of: "\"DSI-1\"", with: "\"hdmi-a-1\"")).contains("kioskd.toml:10: key 'output[1].connector': connector \"hdmi-a-1\" is already used by the output at"))
        #expect(err(Self.config(dir, second: "scenes = [\"score\", \"nope\"]")).contains("key 'output[1].scenes[1]': no scene named \"nope\"; scenes: clock, score"))
        #expect(err(Self.config(dir, second: "scenes = [\"clock\"]")).contains("table '[scene.score]': defined but shown by no output"))
        #expect(err(Self.config(dir, second: "scenes = []")).contains("key 'output[1].scenes': expected at least one scene name"))
        #expect(err(Self.config(dir, second: "scenes = [\"score\"]\ncalibration = [1, 2, 0, 2, 4, 0]")).contains("key 'output[1].calibration':"))
        #expect(err(Self.config(dir, extra: "[display.blank]\n").replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nrotation = 90"))
            .contains("key 'display.rotation': with [[output]] tables each output has its own rotation"))
        #expect(err(Self.config(dir, second: "scenes = [\"score\"]\n[[input.device]]\nmatch = \"ILITEK*\"\noutput = \"HDMI-A-2\""))
            .contains("key 'input.device[0].output': no output named \"HDMI-A-2\"; outputs: HDMI-A-1, DSI-1"))
        #expect(err(Self.config(dir, second: "scenes = [\"score\"]\n[input]\nkeys_output = \"VGA-1\"")).contains("key 'input.keys_output': no output named \"VGA-1\""))
        let nine = (0..<9).map { "[[output]]\nconnector = \"C\($0)\"\n" }.joined()
        #expect(err("[display]\nbackend = \"headless\"\n" + nine + Self.scenes).contains("at most 8 outputs"))
    }

    // MARK: the daemon

    @Test func eachOutputShowsItsOwnSceneTurnedAsItsPanel() throws {
        let dir = tempDir()
        let (d, displays, _) = try Self.daemon(write(Self.config(dir), dir))
        d.startAsKioskd()
        try Self.settle(d)
        #expect(d.heads.map(\.manager.current.name) == ["clock", "score"])
        #expect(displays[0].logicalSize == Size(width: 160, height: 90))
        #expect(displays[1].logicalSize == Size(width: 80, height: 120))
        #expect(displays.allSatisfy { $0.presentCount > 0 })
        // The clock fills its output with the colour of the time; the counter's is the theme's background with digit tiles.
        let clockColour = displays[0].framebuffer.pixels.pixel(x: 2, y: 88)
        #expect(Set((0..<160).map { displays[0].framebuffer.pixels.pixel(x: $0, y: 88) }).count == 1)
        #expect(displays[1].framebuffer.pixels.pixel(x: 2, y: 2) != clockColour)
        let status = d.status()
        #expect(status.outputs?.map(\.name) == ["HDMI-A-1", "DSI-1"])
        #expect(status.outputs?.map(\.scene) == ["clock", "score"])
        #expect(status.outputs?[1].logicalSize == "80x120")
        d.shutdown()
    }

    @Test func aTouchGoesToItsOutputOnly() throws {
        let dir = tempDir()
        let (d, displays, input) = try Self.daemon(write(Self.config(dir), dir))
        d.startAsKioskd()
        try Self.settle(d)
        let before = displays[0].presentCount
        Self.tap(input, output: 1)
        try Self.settle(d)
        #expect(Self.home(d) == 1)
        // The same tap on the clock's output changes no counter.
        Self.tap(input, output: 0)
        try Self.settle(d)
        #expect(Self.home(d) == 1)
        #expect(displays[0].presentCount - before <= 2, "the clock's output drew only its own ticks")
        d.shutdown()
    }

    @Test func aCounterOnTwoOutputsIsOneValue() throws {
        let dir = tempDir()
        let path = write(Self.config(dir, second: "scenes = [\"score\"]").replacingOccurrences(of: "scenes = [\"clock\"]", with: "scenes = [\"score\", \"clock\"]"), dir)
        let (d, _, input) = try Self.daemon(path)
        d.startAsKioskd()
        try Self.settle(d)
        let a = try #require(d.heads[0].manager.current as? CounterScene)
        let b = try #require(d.heads[1].manager.current as? CounterScene)
        #expect(a !== b && a.name == b.name)
        Self.tap(input, output: 1)
        try Self.settle(d)
        #expect(try a.value(of: "HOME") == 1 && b.value(of: "HOME") == 1)
        Self.tap(input, output: 0)
        try Self.settle(d)
        #expect(try a.value(of: "HOME") == 2 && b.value(of: "HOME") == 2)
        _ = try d.answer(.counter(name: "HOME", op: .set, value: 7))
        #expect(try a.value(of: "HOME") == 7 && b.value(of: "HOME") == 7)
        d.shutdown()
    }

    @Test func sceneScreenshotAndBlankAddressAnOutput() throws {
        let dir = tempDir()
        let state = MemoryStateStore()
        let path = write(Self.config(dir, second: "scenes = [\"score\", \"clock\"]"), dir)
        var (d, displays, _) = try Self.daemon(path, state: state)
        d.startAsKioskd()
        try Self.settle(d)
        #expect(try d.answer(.scene(name: "clock", output: "DSI-1")).status == 200)
        #expect(d.heads.map(\.manager.current.name) == ["clock", "clock"])
        // Unknown outputs and scenes another output does not show are refused, naming what exists.
        let unknown = try d.answer(.scene(name: "clock", output: "VGA-1"))
        #expect(unknown.status == 404 && unknown.errorMessage == "no output named 'VGA-1'; outputs: HDMI-A-1, DSI-1")
        #expect(try d.answer(.scene(name: "score", output: "HDMI-A-1")).status == 404)
        let shot = d.handle(.screenshot(output: "dsi-1"))
        #expect(shot.status == 200 && shot.contentType == "image/png")
        #expect(Array(shot.body[16..<24]) == [0, 0, 0, 80, 0, 0, 0, 120], "the PNG is DSI-1's logical 80x120")
        #expect(d.handle(.blank(on: true, output: "DSI-1")).status == 200)
        #expect(displays[1].isBlanked && !displays[0].isBlanked)
        d.shutdown()
        // Each output's scene is kept under its own key: the first output's as a single output's.
        #expect(state.load(Daemon.sceneKey) == nil || state.load(Daemon.sceneKey) == "clock")
        #expect(state.load("daemon.scene.output.DSI-1") == "clock")
        (d, displays, _) = try Self.daemon(path, state: state)
        d.startAsKioskd()
        #expect(d.heads.map(\.manager.current.name) == ["clock", "clock"])
        d.shutdown()
    }

    /// What web pages and MQTT see: every output with its scene, scenes and panel, following
    /// each output's changes; a single output's state has no `outputs` on the wire.
    @Test func theRemoteStateListsEachOutput() throws {
        let dir = tempDir()
        let (d, _, _) = try Self.daemon(write(Self.config(dir, second: "scenes = [\"score\", \"clock\"]"), dir))
        d.startAsKioskd()
        try Self.settle(d)
        var told: [KioskState] = []
        d.changes.observe { told.append($0) }
        #expect(d.kioskState().outputs == [.init(name: "HDMI-A-1", scene: "clock", scenes: ["clock"], blanked: false),
                                           .init(name: "DSI-1", scene: "score", scenes: ["score", "clock"], blanked: false)])
        #expect(try d.answer(.scene(name: "clock", output: "DSI-1")).status == 200)
        #expect(d.handle(.blank(on: true, output: "DSI-1")).status == 200)
        try Self.settle(d)
        #expect(told.last?.outputs?.map(\.scene) == ["clock", "clock"])
        #expect(told.last?.outputs?.map(\.blanked) == [false, true])
        #expect(told.last?.scene == "clock" && told.last?.blanked == false, "the top-level fields stay the first output's")
        let json = try #require(String(bytes: try ControlJSON.encode(d.kioskState()), encoding: .utf8))
        #expect(json.contains("\"outputs\":[{\"blanked\":false,\"name\":\"HDMI-A-1\",\"scene\":\"clock\",\"scenes\":[\"clock\"]}"), "\(json)")
        d.shutdown()

        let single = write("state_dir = \"\(dir)/one\"\n[display]\nbackend = \"headless\"\n" + Self.scenes, tempDir())
        let (one, _, _) = try Self.daemon(single)
        one.startAsKioskd()
        #expect(one.kioskState().outputs == nil)
        #expect(try !String(decoding: ControlJSON.encode(one.kioskState()), as: UTF8.self).contains("outputs"))
        one.shutdown()
    }

    @Test func aReloadWithOtherOutputsIsRefusedAndKeepsTheRunningConfig() throws {
        let dir = tempDir()
        let path = write(Self.config(dir), dir)
        let (d, _, _) = try Self.daemon(path)
        d.startAsKioskd()
        write(Self.config(dir).replacingOccurrences(of: "DSI-1", with: "HDMI-A-2"), dir)
        let r = d.handle(.reload)
        #expect(r.status == 422)
        #expect(r.errorMessage?.contains("the outputs changed (HDMI-A-1, DSI-1 → HDMI-A-1, HDMI-A-2)") == true)
        #expect(d.config.outputs.map(\.name) == ["HDMI-A-1", "DSI-1"])
        // The same outputs with other scenes: reloaded, each output its new list.
        write(Self.config(dir, second: "scenes = [\"clock\", \"score\"]"), dir)
        #expect(d.handle(.reload).status == 200)
        #expect(d.heads[1].manager.scenes.map(\.name) == ["clock", "score"])
        d.shutdown()
    }

    @Test func aSnapshotWritesEveryOutput() throws {
        let dir = tempDir()
        let config = try loadConfig(Self.config(dir, extra: "state = \"volatile\""), dir: dir)
        try DaemonRunner.snapshot(config: config, to: "\(dir)/shot.png", afterSeconds: 0, logger: quietLogger)
        let first = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/shot.png"))
        let second = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/shot-DSI-1.png"))
        #expect(Array(first[16..<24]) == [0, 0, 0, 160, 0, 0, 0, 90])
        #expect(Array(second[16..<24]) == [0, 0, 0, 80, 0, 0, 0, 120])
        #expect(DaemonRunner.snapshotPath("/a/b.png", output: "HDMI A/1") == "/a/b-HDMI_A_1.png")
    }

    // MARK: one DRM card

    /// The two outputs on a fake card: HDMI-A-1 160x90 (CRTC 10), DSI-1 120x80 (CRTC 11).
    static func drmConfig(_ dir: String, kms: FakeKMS, second: String = "DSI-1") -> String {
        Self.config(dir).replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"drm\"\ndevice = \"\(kms.path)\"")
            .replacingOccurrences(of: "mode = \"160x90\"\n", with: "").replacingOccurrences(of: "mode = \"120x80\"\n", with: "")
            .replacingOccurrences(of: "\"DSI-1\"", with: "\"\(second)\"")
    }

    static func fakeCard() -> FakeKMS {
        FakeKMS(resources: FakeKMS.outputs([.init("HDMI-A-1", modes: [DRMMode(width: 160, height: 90, refresh: 60, isPreferred: true)]),
                                            .init("DSI-1", modes: [DRMMode(width: 120, height: 80, refresh: 60, isPreferred: true)])]))
    }

    @Test func twoOutputsOfOneDRMCardEachShowTheirScene() throws {
        let dir = tempDir()
        let kms = Self.fakeCard()
        let config = try loadConfig(Self.drmConfig(dir, kms: kms), dir: dir)
        let loop = try EventLoop()
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: kms.backend)
        let displays = made.outputs
        #expect(displays.count == 2 && made.owner is DRMCard)
        let input = ScriptedInput()
        let d = try Daemon(config: config, displays: displays, input: input, state: MemoryStateStore(), loop: loop, logger: quietLogger)
        d.displayOwner = made.owner
        d.startAsKioskd()
        try Self.settle(d)
        let crtcs = kms.resources.crtcs.map(\.id)
        let fbs = crtcs.compactMap { kms.onScreenFB(crtc: $0) }
        #expect(fbs.count == 2, "both CRTCs show a frame: \(kms.committed)")
        guard fbs.count == 2 else { return }
        // CRTC 0 scans out the clock (one colour along a row), CRTC 1 the counter turned 90°.
        let clock = (0..<160).compactMap { kms.pixel(fb: fbs[0], x: $0, y: 88) }
        #expect(clock.count == 160 && Set(clock).count == 1)
        #expect(kms.pixel(fb: fbs[1], x: 1, y: 1) != clock.first)
        #expect(d.status().outputs?.map(\.logicalSize) == ["160x90", "80x120"])
        // A tap on the panel's output changes the counter and only CRTC 1 flips for it.
        let committedBefore = kms.committed.count
        _ = kms.completeFlip()
        Self.tap(input, output: 1)
        try Self.settle(d)
        #expect(Self.home(d) == 1)
        let flipped = kms.committed[committedBefore...].compactMap { c -> String? in "\(c)".contains("flip") ? "\(c)" : nil }
        #expect(!flipped.isEmpty && flipped.allSatisfy { !$0.contains("crtc \(crtcs[0])") || $0.contains("crtc \(crtcs[1])") }, "\(flipped)")
        d.shutdown()
        // Both CRTCs were given back what they showed before.
        #expect(crtcs.allSatisfy { kms.scanouts[$0]?.onScreenFB != fbs[crtcs.firstIndex(of: $0)!] })
    }

    @Test func aConnectorTheCardLacksIsAConfigErrorNamingTheOutput() throws {
        let dir = tempDir()
        let kms = Self.fakeCard()
        let config = try loadConfig(Self.drmConfig(dir, kms: kms, second: "DSI-2"), dir: dir)
        let e = configError { _ = try Backends.makeDisplays(config, loop: try EventLoop(), logger: quietLogger, kms: kms.backend) }
        #expect(e?.contains("kioskd.toml:9: key 'output[1].connector': output \"DSI-2\" does not exist on /dev/dri/card0; connectors: HDMI-A-1 (connected), DSI-1 (connected)") == true, "\(e ?? "no error")")
    }

    /// An output configured as "*" answers to the connector the card gave it.
    @Test func anOutputTakenByStarAnswersToItsConnector() throws {
        let dir = tempDir()
        let kms = Self.fakeCard()
        let config = try loadConfig(Self.drmConfig(dir, kms: kms, second: "*"), dir: dir)
        let loop = try EventLoop()
        let made = try Backends.makeDisplays(config, loop: loop, logger: quietLogger, kms: kms.backend)
        let d = try Daemon(config: config, displays: made.outputs, input: ScriptedInput(), state: MemoryStateStore(), loop: loop, logger: quietLogger)
        d.displayOwner = made.owner
        d.startAsKioskd()
        #expect(d.handle(.blank(on: true, output: "dsi-1")).status == 200)
        #expect(d.heads[1].display.isBlanked && !d.heads[0].display.isBlanked)
        #expect(d.handle(.blank(on: true, output: "DSI")).status == 404, "a part of the connector's name is not its name")
        d.shutdown()
    }

    /// A mode the card does not offer names the key that asked for it: the output's `mode`, or
    /// `display.mode` for the single-output form.
    @Test func aModeTheCardLacksIsAConfigErrorNamingTheOutputsMode() throws {
        let dir = tempDir()
        let kms = Self.fakeCard()
        let two = Self.drmConfig(dir, kms: kms).replacingOccurrences(of: "rotation = 90", with: "mode = \"800x480\"\nrotation = 90")
        let e = configError { _ = try Backends.makeDisplays(try loadConfig(two, dir: dir), loop: try EventLoop(), logger: quietLogger, kms: kms.backend) }
        #expect(e?.contains("kioskd.toml:9: key 'output[1].mode': mode 800x480 is not offered by DSI-1; modes: 120x80@60") == true, "\(e ?? "no error")")

        let one = """
        state_dir = "\(dir)/state"
        [display]
        backend = "drm"
        device = "\(kms.path)"
        output = "DSI-1"
        mode = "800x480"
        [scene.clock]
        kind = "clock"
        """
        let e1 = configError { _ = try Backends.makeDisplays(try loadConfig(one, dir: dir), loop: try EventLoop(), logger: quietLogger, kms: kms.backend) }
        #expect(e1?.contains("key 'display.mode': mode 800x480 is not offered by DSI-1; modes: 120x80@60") == true, "\(e1 ?? "no error")")
    }
}
