import Foundation
import KioskConfig
import KioskCore
import KioskDaemon
import KioskState
import Testing

/// The effective config with provenance (for `kioskctl config show`): written values carry their
/// file:line, values the file leaves out are listed as "default" with the value used.
@Suite struct EffectiveConfigTests {
    @Test func writtenValuesNameTheirLineAndDefaultsSayDefault() throws {
        let d = tempDir()
        let file = "\(d)/kioskd.toml"
        let c = try loadConfig("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        [[output]]
        connector = "HDMI-A-1"
        rotation = 90
        scenes = ["clock"]
        [control]
        group = "a \\"b\\" \\\\ c"
        [scene.clock]
        kind = "clock"
        """, dir: d)
        let values = EffectiveConfig.values(of: c.tree)
        func find(_ key: String) -> EffectiveValue? { values.first { $0.key == key } }

        #expect(find("output[0].rotation") == EffectiveValue(key: "output[0].rotation", value: "90", source: .file(SourceLocation(file: file, line: 6))))
        #expect(find("output[0].connector") == EffectiveValue(key: "output[0].connector", value: "\"HDMI-A-1\"", source: .file(SourceLocation(file: file, line: 5))))
        #expect(find("output[0].scenes")?.value == "[\"clock\"]")
        #expect(find("control.group")?.value == #""a \"b\" \\ c""#)
        #expect(find("scene.clock.kind")?.source == .file(SourceLocation(file: file, line: 11)))
        // Not written: the values the reader used, marked as defaults.
        #expect(find("display.rotation") == EffectiveValue(key: "display.rotation", value: "0", source: .default))
        #expect(find("display.buffers") == EffectiveValue(key: "display.buffers", value: "2", source: .default))
        #expect(find("display.api") == EffectiveValue(key: "display.api", value: "\"auto\"", source: .default))
        #expect(find("theme") == EffectiveValue(key: "theme", value: "\"default\"", source: .default))
        #expect(find("control.mode") == EffectiveValue(key: "control.mode", value: "432", source: .default))
        // A written key is listed once, from the file; optional keys the file leaves out are not listed.
        #expect(values.filter { $0.key == "display.backend" }.map(\.source) == [.file(SourceLocation(file: file, line: 3))])
        #expect(find("display.device") == nil)
        #expect(find("output[0].rotation")?.description == "output[0].rotation = 90  # \(file):6")
        #expect(find("display.buffers")?.description == "display.buffers = 2  # default")
    }

    /// Scene factories read their keys when the scenes are made; their defaults join the list then.
    @Test func sceneKeysAreListedOnceTheScenesAreMade() throws {
        let d = tempDir()
        let file = "\(d)/kioskd.toml"
        let c = try loadConfig("""
        state_dir = "\(d)/state"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "home"
        label = "HOME"
        """, dir: d)
        #expect(!EffectiveConfig.values(of: c.tree).contains { $0.key == "scene.score.digits" })
        _ = try SceneRegistry.standard.make(c.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: d)
        let values = EffectiveConfig.values(of: c.tree)
        #expect(values.first { $0.key == "scene.score.counter[0].label" }
                == EffectiveValue(key: "scene.score.counter[0].label", value: "\"HOME\"", source: .file(SourceLocation(file: file, line: 6))))
        #expect(values.first { $0.key == "scene.score.digits" } == EffectiveValue(key: "scene.score.digits", value: "4", source: .default))
        #expect(values.first { $0.key == "scene.score.tap" } == EffectiveValue(key: "scene.score.tap", value: "\"increment\"", source: .default))
    }
}
