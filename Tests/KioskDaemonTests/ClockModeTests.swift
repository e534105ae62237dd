import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import KioskTestTraits
import Testing
import KioskPosix

/// The clock's colour mode switched at run time (`POST /clock/mode`, `kioskctl clock mode`).
@Suite(.ownThreads) struct ClockModeTests {
    /// 2023-11-14 13:35:16 UTC: literal #133516, scaled #8A9544.
    static let t133516 = 1_699_968_916.0

    func daemon(_ dir: String, colorMode: String = "scaled", time: ManualTimeSource) throws -> (Daemon, HeadlessDisplay) {
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [scene.clock]
        kind = "clock"
        time_zone = "UTC"
        color_mode = "\(colorMode)"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        """, dir)
        return try headlessDaemon(path, state: try FileStateStore(directory: "\(dir)/state", logger: quietLogger), time: time)
    }

    /// The background (the time's colour) after drawing what is pending.
    func shown(_ d: Daemon, _ display: HeadlessDisplay) throws -> String {
        try d.step()
        d.manager.renderIfPossible()
        return display.framebuffer.color(x: 1, y: 1).hexString
    }

    @Test func modeChangesThePixelsAndSurvivesARestart() throws {
        let dir = tempDir()
        let time = ManualTimeSource(epochSeconds: Self.t133516)
        let (d, display) = try daemon(dir, time: time)
        d.startAsKioskd()
        #expect(try shown(d, display) == "#8A9544")
        #expect(d.kioskState().clocks == [.init(scene: "clock", mode: "scaled", modes: ["scaled", "literal"])])

        let r = try d.answer(.clockMode(mode: "literal", scene: nil))
        #expect(r.status == 200)
        #expect(try r.decode(ClockModeAnswer.self) == ClockModeAnswer(mode: "literal", scenes: ["clock"]))
        #expect(try shown(d, display) == "#133516", "same second, other mode: other colour")
        #expect(d.kioskState().clocks.first?.mode == "literal")
        // Saved before it was acknowledged.
        #expect(d.state.load(Daemon.clockModeKey("clock")) == "literal")
        d.shutdown()

        // A restart shows the chosen mode.
        let (again, display2) = try daemon(dir, time: time)
        again.startAsKioskd()
        #expect((again.manager.scenes.first { $0.name == "clock" } as? ClockScene)?.colorMode == .literal)
        #expect(try shown(again, display2) == "#133516")
        again.shutdown()

        // Under an edited config the config's color_mode shows, and a choice made under it is kept.
        let (edited, _) = try daemon(dir, colorMode: "literal", time: time)
        edited.startAsKioskd()
        _ = try edited.answer(.clockMode(mode: "scaled", scene: "clock")).decode(ClockModeAnswer.self)
        edited.shutdown()
        let (later, display4) = try daemon(dir, colorMode: "literal", time: time)
        later.startAsKioskd()
        #expect(try shown(later, display4) == "#8A9544")
        later.shutdown()
    }

    @Test func theSceneRepaintsInTheNewModeWithinTheSameSecond() throws {
        let scene = ClockScene(name: "c", colorMode: .scaled, timeZone: LocalZone.fixed(0))
        let canvas = try Canvas(size: Size(width: 64, height: 48))
        scene.layout(size: canvas.size)
        scene.apply(theme: .default)
        scene.didAppear(now: WallTime(realtimeNs: Int64(Self.t133516) * 1_000_000_000, monotonicNs: 1_000_000_000))
        _ = scene.draw(into: canvas)
        #expect(canvas.color(x: 1, y: 1).hexString == "#8A9544")
        #expect(scene.draw(into: canvas).isEmpty, "nothing pending")
        #expect(scene.setColorMode(.literal))
        #expect(!scene.setColorMode(.literal), "already literal")
        #expect(scene.draw(into: canvas) == Damage.full(canvas.size))
        #expect(canvas.color(x: 1, y: 1).hexString == "#133516")
        #expect(scene.configuredColorMode == .scaled)
    }

    @Test func unknownModeOrSceneIsRefusedNamingTheChoices() throws {
        let time = ManualTimeSource(epochSeconds: Self.t133516)
        let (d, display) = try daemon(tempDir(), time: time)
        d.startAsKioskd()
        let bad = try d.answer(.clockMode(mode: "night", scene: nil))
        #expect(bad.status == 422)
        #expect(bad.jsonObject?["error"] as? String == "unknown clock mode 'night'; modes: scaled, literal")
        #expect(bad.jsonObject?["field"] as? String == "mode")
        let noScene = try d.answer(.clockMode(mode: "literal", scene: "score"))
        #expect(noScene.status == 404)
        #expect(noScene.jsonObject?["error"] as? String == "unknown clock scene 'score'; clock scenes: clock")
        // Nothing changed and nothing was saved.
        #expect(try shown(d, display) == "#8A9544")
        #expect(d.state.load(Daemon.clockModeKey("clock")) == nil)
        d.shutdown()
    }

    @Test func routeParsesAndRefusesBadBodies() throws {
        #expect(try ControlRouter.parse(method: "POST", uri: "/clock/mode", body: Array(#"{"mode":"literal"}"#.utf8))
                == .clockMode(mode: "literal", scene: nil))
        #expect(try ControlRouter.parse(method: "POST", uri: "/clock/mode", body: Array(#"{"mode":"scaled","scene":"wall"}"#.utf8))
                == .clockMode(mode: "scaled", scene: "wall"))
        let r = ControlCommand.clockMode(mode: "literal", scene: "wall").request
        #expect(try ControlRouter.parse(method: r.method, uri: r.path, body: r.body) == .clockMode(mode: "literal", scene: "wall"))
        #expect(throws: ControlRequestError(400, "missing field 'mode' (a string)", field: "mode")) {
            try ControlRouter.parse(method: "POST", uri: "/clock/mode", body: Array("{}".utf8))
        }
        #expect(throws: ControlRequestError(405, "method GET not allowed on /clock/mode; use POST")) {
            try ControlRouter.parse(method: "GET", uri: "/clock/mode", body: [])
        }
    }
}
