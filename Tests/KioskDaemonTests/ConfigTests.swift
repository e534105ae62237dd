import Foundation
import KioskConfig
import KioskCore
@testable import KioskDaemon
import KioskState
import Testing

@Suite struct ConfigLocatorTests {
    @Test func locatesTablesKeysArraysAndInlineTables() {
        let text = """
        # comment
        theme = "dark"   # 2

        [display]
        rotation = 90
        blank.schedule = [
          "23:00-07:00",
          "12:00-13:00",
        ]
        [scene.score]
        kind = "counter"
        note = \"\"\"
        fake = 1
        [not.a.table]
        \"\"\"
        [[scene.score.counter]]
        name = "HOME"
        [[scene.score.counter]]
        name = "AWAY"
        label = { text = "Away", size = 3 }
        "quoted.key" = 1
        """
        let loc = ConfigLocator(source: text)
        #expect(loc.line(of: "theme") == 2)
        #expect(loc.line(of: "display") == 4)
        #expect(loc.line(of: "display.rotation") == 5)
        #expect(loc.line(of: "display.blank.schedule") == 6)
        #expect(loc.line(of: "display.blank.schedule[1]") == 8)
        #expect(loc.line(of: "scene.score.kind") == 11)
        #expect(loc.lines["fake"] == nil)
        #expect(loc.lines["not"] == nil)
        #expect(loc.line(of: "scene.score.counter[0].name") == 17)
        #expect(loc.line(of: "scene.score.counter[1]") == 18)
        #expect(loc.line(of: "scene.score.counter[1].name") == 19)
        #expect(loc.line(of: "scene.score.counter[1].label.size") == 20)
        #expect(loc.line(of: "scene.score.counter[1].quoted.key") == 21)
        // Unknown paths fall back to the nearest ancestor.
        #expect(loc.line(of: "scene.score.counter[1].missing") == 18)
    }
}

@Suite struct ConfigErrorTests {
    static let good = """
    theme = "default"
    state_dir = "/tmp/x"

    [display]
    backend = "headless"

    [scene.clock]
    kind = "clock"
    """

    @Test func goodConfigLoads() throws {
        let c = try loadConfig(Self.good)
        #expect(c.display.backend == .headless)
        #expect(c.scenes.map(\.name) == ["clock"])
        #expect(c.theme == .default)
        #expect(c.stateDirectory == "/tmp/x")
    }

    @Test func syntaxErrorNamesFileLineColumn() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig("theme = \"dark\"\n[display]\nrotation = = 90\n", dir: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:3:") == true, "\(msg ?? "")")
        #expect(msg?.contains("TOML syntax error") == true)
    }

    @Test func wrongTypeNamesLineAndKey() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig(Self.good + "\n[control]\nmode = \"rw\"\n", dir: d) }
        #expect(msg == "\(d)/kioskd.toml:10: key 'control.mode': expected an integer, got a string (\"rw\")")
    }

    @Test func unknownKeyNamesLineAndKey() {
        let d = tempDir()
        let text = Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nrotaton = 90")
        let msg = configError { _ = try loadConfig(text, dir: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:6: key 'display.rotaton': unknown key") == true, "\(msg ?? "")")
        let top = configError { _ = try loadConfig("colour = 1\n" + Self.good, dir: d) }
        #expect(top?.hasPrefix("\(d)/kioskd.toml:1: key 'colour': unknown key") == true, "\(top ?? "")")
    }

    @Test func unknownSceneKindListsKinds() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig(Self.good + "\n[scene.x]\nkind = \"slideshow\"\n", dir: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:10: key 'scene.x.kind': unknown scene kind \"slideshow\"; kinds: ") == true, "\(msg ?? "")")
        #expect(msg?.contains("clock") == true && msg?.contains("counter") == true)
    }

    @Test func unknownThemeListsThemes() {
        let d = tempDir()
        try! FileManager.default.createDirectory(atPath: "\(d)/themes", withIntermediateDirectories: true)
        write("[palette]\nprimary=\"#000000\"\nneutral=\"#111111\"\nsecondary=\"#222222\"\nhighlight=\"#333333\"\nbackground=\"#444444\"\ntext=\"#555555\"\n", "\(d)/themes", "mine.toml")
        let msg = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "\"default\"", with: "\"nigth\""), dir: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:1: key 'theme': unknown theme \"nigth\"") == true, "\(msg ?? "")")
        #expect(msg?.contains("themes: alternative, dark, default, high-contrast, light, mine") == true, "\(msg ?? "")")
        // The file theme itself loads.
        let c = try? loadConfig(Self.good.replacingOccurrences(of: "\"default\"", with: "\"mine\""), dir: d)
        #expect(c?.theme.palette.text == Color(hex: "#555555"))
    }

    @Test func outOfRangeNamesRange() {
        let d = tempDir()
        let text = Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nbuffers = 7")
        let m2 = configError { _ = try loadConfig(text, dir: d) }
        #expect(m2 == "\(d)/kioskd.toml:6: key 'display.buffers': 7 is out of range, expected 2…3")
        let rot = configError { _ = try loadConfig(text.replacingOccurrences(of: "buffers = 7", with: "rotation = 45"), dir: d) }
        #expect(rot == "\(d)/kioskd.toml:6: key 'display.rotation': expected 0, 90, 180 or 270, got 45")
    }

    @Test func sceneOrderAndKeysAreChecked() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig(Self.good + "\n[scenes]\norder = [\"clock\", \"clok\"]\n", dir: d) }
        #expect(msg == "\(d)/kioskd.toml:10: key 'scenes.order[1]': no scene named \"clok\"; scenes: clock")
        let key = configError { _ = try loadConfig(Self.good + "\n[scenes]\nnext_key = \"KEY_RIGTH\"\n", dir: d) }
        #expect(key == "\(d)/kioskd.toml:10: key 'scenes.next_key': unknown key name \"KEY_RIGTH\" (evdev names like KEY_RIGHT, KEY_SPACE, KEY_KP_PLUS)")
        let sched = configError { _ = try loadConfig(Self.good + "\n[display.blank]\nschedule = [\"23:00-07:00\",\n  \"25:00-07:00\"]\n", dir: d) }
        #expect(sched?.hasPrefix("\(d)/kioskd.toml:11: key 'display.blank.schedule[1]': expected a period") == true, "\(sched ?? "")")
    }

    /// Overlapping blank periods are an error naming the element and both periods, also across
    /// midnight and in an output's own schedule; periods that only touch are fine.
    @Test func overlappingBlankPeriodsAreAnError() throws {
        let d = tempDir()
        func blank(_ periods: [String], table: String = "[display.blank]") -> String? {
            let list = periods.map { "\"\($0)\"" }.joined(separator: ",\n  ")
            return configError { _ = try loadConfig(Self.good + "\n\(table)\nschedule = [\(list)]\n", dir: d) }
        }
        #expect(blank(["22:00-02:00", "01:00-03:00"]) == "\(d)/kioskd.toml:11: key 'display.blank.schedule[1]': blank period \"01:00-03:00\" overlaps \"22:00-02:00\" (display.blank.schedule[0]); blank periods must not overlap; join them into one, like \"22:00-03:00\"")
        #expect(blank(["12:00-13:00", "08:00-09:00", "12:30-12:45"])?.contains("key 'display.blank.schedule[2]': blank period \"12:30-12:45\" overlaps \"12:00-13:00\" (display.blank.schedule[0]); blank periods must not overlap; join them into one, like \"12:00-13:00\"") == true)
        #expect(blank(["23:00-07:00", "23:00-07:00"])?.contains("key 'display.blank.schedule[1]': blank period \"23:00-07:00\" overlaps \"23:00-07:00\"") == true)
        #expect(blank(["20:00-08:00", "06:00-22:00"])?.hasSuffix("blank periods must not overlap; together they blank the whole day") == true)
        #expect(blank(["23:00-07:00", "07:00-08:00", "12:00-23:00"]) == nil, "periods that only touch do not overlap")
        let output = configError { _ = try loadConfig(Self.good + "\n[[output]]\nscenes = [\"clock\"]\n[output.blank]\nschedule = [\"01:00-05:00\", \"04:59-06:00\"]\n", dir: d) }
        #expect(output?.contains("key 'output[0].blank.schedule[1]': blank period \"04:59-06:00\" overlaps \"01:00-05:00\" (output[0].blank.schedule[0])") == true, "\(output ?? "")")
    }

    @Test func sceneFactoryErrorsCarryFileLineAndKey() throws {
        let d = tempDir()
        let c = try loadConfig(Self.good + "\ncolor_mode = \"purple\"\n", dir: d)
        let msg = configError { _ = try SceneRegistry.standard.make(c.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:9: key 'scene.clock.color_mode': expected one of") == true, "\(msg ?? "")")
        let c2 = try loadConfig(Self.good + "\ncolour_mode = \"literal\"\n", dir: d)
        let m2 = configError { _ = try SceneRegistry.standard.make(c2.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: d) }
        #expect(m2?.hasPrefix("\(d)/kioskd.toml:9: key 'scene.clock.colour_mode': unknown key") == true, "\(m2 ?? "")")
    }

    @Test func socketPathLongerThanASocketCanHoldIsRefused() {
        let d = tempDir()
        let long = "/run/" + String(repeating: "k", count: 92) + ".sock"
        #expect(long.utf8.count == 102)
        #expect(configError { _ = try loadConfig(Self.good + "\n[control]\nsocket = \"\(long)\"\n", dir: d) } == nil)
        let tooLong = "/run/" + String(repeating: "k", count: 94) + ".sock"
        let msg = configError { _ = try loadConfig(Self.good + "\n[control]\nsocket = \"\(tooLong)\"\n", dir: d) }
        #expect(msg == "\(d)/kioskd.toml:10: key 'control.socket': path is 104 bytes long; the control socket path must be at most 103 bytes")
    }

    @Test func defaultsComeFromSystemdDirectories() throws {
        let c = try loadConfig(Self.good.replacingOccurrences(of: "state_dir = \"/tmp/x\"\n", with: ""),
                               env: ["STATE_DIRECTORY": "/var/lib/kioskd", "RUNTIME_DIRECTORY": "/run/kioskd", "CONFIGURATION_DIRECTORY": "/etc/kioskd"])
        #expect(c.stateDirectory == "/var/lib/kioskd")
        #expect(c.control.socketPath == "/run/kioskd/control.sock")
        #expect(c.themeDirectory == "/etc/kioskd/themes")
        #expect(c.control.mode == 0o660)
    }

    @Test func shippedConfigAndThemesLoad() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let c = try DaemonConfig.load(path: "\(root)/config/kioskd.toml", environment: [:])
        _ = try SceneRegistry.standard.make(c.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: "/nonexistent")
        #expect(c.themeDirectory == "\(root)/config/themes")
        for name in ThemeLoader.fileThemes(in: c.themeDirectory) {
            let t = try ThemeLoader.load(named: name, directory: c.themeDirectory)
            #expect(t.name == name)
        }
        let night = try ThemeLoader.load(named: "night", directory: c.themeDirectory)
        #expect(night.palette.background == Color(hex: "#0A0505"))
        #expect(night.fonts.body == Theme.dark.fonts.body)
    }

    /// Every example config loads with its themes and scenes, given as an absolute path and as a
    /// path relative to the working directory (theme files sit next to the config either way).
    @Test func exampleConfigsLoadFromRelativeAndAbsolutePaths() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let examples = try FileManager.default.contentsOfDirectory(atPath: "\(root)/config").filter { $0.hasSuffix(".toml") }.sorted()
        #expect(examples.count >= 4)
        let cwd = FileManager.default.currentDirectoryPath
        for name in examples {
            var paths = ["\(root)/config/\(name)"]
            if root.hasPrefix(cwd + "/") { paths.append(String(root.dropFirst(cwd.count + 1)) + "/config/\(name)") }
            if root == cwd { paths.append("config/\(name)") }
            for path in paths {
                let c = try DaemonConfig.load(path: path, environment: [:])
                #expect(c.themeDirectory.hasSuffix("config/themes"), "\(path): theme folder \(c.themeDirectory)")
                #expect(FileManager.default.fileExists(atPath: c.themeDirectory), "\(path): \(c.themeDirectory) missing")
                _ = try SceneRegistry.standard.make(c.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: "/nonexistent")
            }
        }
    }

    @Test func badThemeFileNamesItsLine() {
        let d = tempDir()
        try! FileManager.default.createDirectory(atPath: "\(d)/themes", withIntermediateDirectories: true)
        write("base = \"dark\"\n[palette]\nprimary = \"blue\"\n", "\(d)/themes", "bad.toml")
        let msg = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "\"default\"", with: "\"bad\""), dir: d) }
        #expect(msg == "\(d)/themes/bad.toml:3: key 'palette.primary': expected a colour like \"#RRGGBB\", got \"blue\"")
    }
}

@Suite struct ConfigLocatorMoreTests {
    @Test func arraysOfInlineTablesAndDottedKeysInTables() {
        let text = """
        [scene.score]
        counters = [
          { name = "HOME", label = "Home" },
          { name = "AWAY", label = "Away" },
        ]
        style.size = 3
        'odd key' = "x"
        """
        let loc = ConfigLocator(source: text)
        #expect(loc.line(of: "scene.score.counters[0].label") == 3)
        #expect(loc.line(of: "scene.score.counters[1]") == 4)
        #expect(loc.line(of: "scene.score.counters[1].label") == 4)
        #expect(loc.line(of: "scene.score.style.size") == 6)
        #expect(loc.line(of: "scene.score.odd key") == 7)
    }

    @Test func inlineTableValuesGetTheirOwnLines() throws {
        let d = tempDir()
        let msg = configError {
            _ = try loadConfig("""
            state_dir = "/tmp/x"
            display = { backend = "headless", rotation = 45 }
            [scene.clock]
            kind = "clock"
            """, dir: d)
        }
        #expect(msg == "\(d)/kioskd.toml:2: key 'display.rotation': expected 0, 90, 180 or 270, got 45")
    }
}

@Suite struct JournalLogHandlerTests {
    @Test func priorityPrefixesAndMetadata() {
        let h = JournalLogHandler(label: "t", level: .debug, prefixed: true)
        #expect(h.format(level: .error, message: "cannot open", metadata: ["drm.device": "/dev/dri/card0"]) == "<3>cannot open [drm.device=/dev/dri/card0]")
        #expect(h.format(level: .info, message: "two\nlines", metadata: nil) == "<6>two lines")
        #expect(JournalLogHandler.priority(.warning) == 4)
        #expect(JournalLogHandler.priority(.debug) == 7)
        #expect(JournalLogHandler.priority(.critical) == 2)
        let plain = JournalLogHandler(label: "t", prefixed: false)
        #expect(plain.format(level: .notice, message: "hi", metadata: nil) == "notice: hi")
    }
}
