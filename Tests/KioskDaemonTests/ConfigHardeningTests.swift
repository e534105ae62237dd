import Foundation
import KioskConfig
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskScenes
import KioskState
import Testing

/// Config files that are malformed on purpose: too deep, NULs, bad UTF-8, huge strings, odd
/// numbers, names that cannot be stored, paths the daemon could not use. Every error names
/// file:line (and the key) and says what was expected.
@Suite struct ConfigHardeningTests {
    static let good = """
    state_dir = "/tmp/x"
    [display]
    backend = "headless"
    [scene.clock]
    kind = "clock"


    """

    /// Writes raw bytes as `dir/kioskd.toml`.
    func writeBytes(_ bytes: [UInt8], _ dir: String, _ name: String = "kioskd.toml") -> String {
        let p = "\(dir)/\(name)"
        #expect(FileManager.default.createFile(atPath: p, contents: Data(bytes)))
        return p
    }

    /// Loads the config and makes its scenes (what --check-config does).
    func check(_ text: String, dir: String) throws {
        let c = try loadConfig(text, dir: dir)
        _ = try SceneRegistry.standard.make(c.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: "/nonexistent")
    }

    // MARK: depth

    @Test(arguments: [3500, 20000])
    func deeplyNestedDottedKeyIsRefused(levels: Int) {
        let d = tempDir()
        let key = Array(repeating: "a", count: levels).joined(separator: ".")
        let msg = configError { _ = try loadConfig("\(key) = 1\n" + Self.good, dir: d) }
        #expect(msg == "\(d)/kioskd.toml:1: key 'a.a.a.a.a.a.a.a…': nested more than 64 levels (tables, dotted keys, arrays and inline tables count together)", "\(msg ?? "")")
    }

    @Test func deepTableHeadersInlineTablesAndArraysAreRefused() {
        let d = tempDir()
        let header = "[" + Array(repeating: "b", count: 20000).joined(separator: ".") + "]\n"
        let m1 = configError { _ = try loadConfig(Self.good + header, dir: d) }
        #expect(m1 == "\(d)/kioskd.toml:7: key 'b.b.b.b.b.b.b.b…': nested more than 64 levels (tables, dotted keys, arrays and inline tables count together)", "\(m1 ?? "")")
        let inline = "x = " + String(repeating: "{y = ", count: 100) + "1" + String(repeating: "}", count: 100) + "\n"
        let m2 = configError { _ = try loadConfig(inline + Self.good, dir: d) }
        #expect(m2 == "\(d)/kioskd.toml:1: key 'x.y.y.y.y.y.y.y…': nested more than 64 levels (tables, dotted keys, arrays and inline tables count together)", "\(m2 ?? "")")
        let arrays = "x = " + String(repeating: "[", count: 100000) + String(repeating: "]", count: 100000) + "\n"
        let m3 = configError { _ = try loadConfig(arrays + Self.good, dir: d) }
        #expect(m3 == "\(d)/kioskd.toml:1: key 'x[0][0][0][0][0][0][0]…': nested more than 64 levels (tables, dotted keys, arrays and inline tables count together)", "\(m3 ?? "")")
    }

    /// Headers the TOML parser would assert on (debug) or assume away (release) are syntax errors.
    @Test func tableHeadersWithoutAKeyAreSyntaxErrors() {
        let d = tempDir()
        for (header, col, found) in [("[[[x]]]", 3, "'['"), ("[=]", 2, "'='"), ("[ .a]", 3, "'.'"), ("[[#x]]", 3, "'#'"), ("[\n", 2, "end of line")] {
            let msg = configError { _ = try loadConfig(Self.good + header + "\n", dir: d) }
            #expect(msg == "\(d)/kioskd.toml:7:\(col): TOML syntax error: expected a key (bare or quoted) in the table header, saw \(found)", "\(header)")
        }
    }

    /// A byte order mark before the first header (found by the config fuzzer: toml++ skips the
    /// mark and asserted on `[  =`, which the line scanner did not see as a header).
    @Test func aHeaderWithoutAKeyAfterAByteOrderMarkIsASyntaxError() throws {
        let d = tempDir()
        let path = "\(d)/kioskd.toml"
        try Data([0xEF, 0xBB, 0xBF] + Array("[  =e_dir = \"/tmp/s\"\n[display]\nbackend = \"headless\"\n".utf8)).write(to: URL(fileURLWithPath: path))
        let msg = configError { _ = try DaemonConfig.load(path: path, environment: [:]) }
        #expect(msg?.hasPrefix("\(path):1:") == true && msg?.hasSuffix("TOML syntax error: expected a key (bare or quoted) in the table header, saw '='") == true, "\(msg ?? "accepted")")
        // With the mark, a good file still loads and its lines are right.
        try Data([0xEF, 0xBB, 0xBF] + Array("[display]\nrotaton = 90\n".utf8)).write(to: URL(fileURLWithPath: path))
        let m2 = configError { _ = try DaemonConfig.load(path: path, environment: [:]) }
        #expect(m2?.hasPrefix("\(path):2: key 'display.rotaton': unknown key") == true, "\(m2 ?? "accepted")")
    }

    /// A date and `T` with no time after it (found by the theme fuzzer: toml++ asserts in
    /// parse_time) is a syntax error; real date-times and plain dates still reach the parser.
    @Test func aDateWithoutItsTimeIsASyntaxError() {
        let d = tempDir()
        for (value, found) in [("1979-05-27T\"\"\"07:32:00Z", "'\"'"), ("1979-05-27tx", "'x'"), ("[1979-05-27T]", "']'")] {
            let msg = configError { _ = try loadConfig("a = \(value)\n" + Self.good, dir: d) }
            let col = value.hasPrefix("[") ? 17 : 16
            #expect(msg == "\(d)/kioskd.toml:1:\(col): TOML syntax error: expected a time (HH:MM:SS) after the date's 'T', saw \(found)", "\(value)")
        }
        for value in ["1979-05-27T07:32:00Z", "1979-05-27", "1979-05-27 07:32:00"] {
            let msg = configError { _ = try loadConfig("a = \(value)\n" + Self.good, dir: d) }
            #expect(msg == "\(d)/kioskd.toml:1: key 'a': dates and times are not used by kioskd; write the value as a string (e.g. \"23:00\")", "\(value): \(msg ?? "accepted")")
        }
    }

    /// A date-shaped value, a space and a lone digit (found by the config fuzzer: toml++ asserts
    /// in parse_value when it rescans for a time) is a syntax error wherever the value stands;
    /// real date-times with a space still reach the parser.
    @Test func aDateSpaceAndALoneDigitIsASyntaxError() {
        let d = tempDir()
        for (value, col, found) in [("0989-05-2e 7", 17, "end of line"), ("1979-05-27 7 ", 17, "' '"), ("[1979-05-27 7]", 18, "']'"),
                                    ("{ a = 1_979-05-27 7, b = 1 }", 24, "','"), ("1979-05-27 0#", 17, "'#'")] {
            let msg = configError { _ = try loadConfig("x = \(value)\n" + Self.good, dir: d) }
            #expect(msg == "\(d)/kioskd.toml:1:\(col): TOML syntax error: expected a time (HH:MM:SS) after the date and its space, saw \(found)", "\(value): \(msg ?? "accepted")")
        }
        for (value, key) in [("1979-05-27 07:32:00", "x"), ("1979-05-27 07:32:00Z", "x"), ("[1979-05-27, 1979-05-28]", "x[0]")] {
            let msg = configError { _ = try loadConfig("x = \(value)\n" + Self.good, dir: d) }
            #expect(msg == "\(d)/kioskd.toml:1: key '\(key)': dates and times are not used by kioskd; write the value as a string (e.g. \"23:00\")", "\(value): \(msg ?? "accepted")")
        }
    }

    /// An array element starting with `}` (found by the config fuzzer: toml++ asserts in
    /// parse_value) is a syntax error, in arrays at any depth.
    @Test func anArrayElementStartingWithABraceIsASyntaxError() {
        let d = tempDir()
        for (value, col) in [("[}]", 6), ("[\"a.b\",}\"a\"]", 12), ("[[}]]", 7), ("{ a = [}] }", 12)] {
            let msg = configError { _ = try loadConfig("x = \(value)\n" + Self.good, dir: d) }
            #expect(msg == "\(d)/kioskd.toml:1:\(col): TOML syntax error: expected a value or ']' in the array, saw '}'", "\(value)")
        }
    }

    @Test func sixtyFourLevelsAreStillParsed() {
        let d = tempDir()
        let key = Array(repeating: "a", count: 64).joined(separator: ".")
        let msg = configError { _ = try loadConfig("\(key) = 1\n" + Self.good, dir: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:1: key 'a': unknown key") == true, "\(msg ?? "")")
    }

    @Test func reloadWithADeepConfigFailsAndKeepsTheRunningConfig() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        daemon.startAsKioskd()
        defer { daemon.shutdown() }
        let path = daemon.config.file
        let good = try String(contentsOfFile: path, encoding: .utf8)
        let key = Array(repeating: "k", count: 20000).joined(separator: ".")
        try (good + "\n\(key) = 1\n").write(toFile: path, atomically: true, encoding: .utf8)
        let lines = good.split(separator: "\n", omittingEmptySubsequences: false).count
        switch daemon.reload() {
        case .success(let m): Issue.record("reload succeeded: \(m)")
        case .failure(let e):
            #expect(e.kind == .config)
            #expect(e.message.hasPrefix("\(path):\(lines + 1): key 'control.k.k.k.k.k.k.k…': nested more than 64 levels"), "\(e.message)")
        }
        #expect(daemon.manager.scenes.map(\.name) == ["score", "clock"])
        #expect(daemon.config.scenes.map(\.name) == ["score", "clock"])
    }

    // MARK: bytes

    @Test func rawNulByteIsRefusedWithItsLine() {
        let d = tempDir()
        let bytes = Array((Self.good + "[display.blank]\n").utf8) + [0] + Array("\nrotation = 7\nbogus = 1\n".utf8)
        let path = writeBytes(bytes, d)
        let msg = configError { _ = try DaemonConfig.load(path: path, environment: [:]) }
        #expect(msg == "\(path):8:1: the file contains a NUL byte; a config file is UTF-8 text without NUL bytes")
    }

    @Test func nulEscapesInStringsAndKeysAreRefused() {
        let d = tempDir()
        let m1 = configError { _ = try loadConfig(Self.good + "[control]\nsocket = \"\(d)/a\\u0000b\"\n", dir: d) }
        #expect(m1 == "\(d)/kioskd.toml:8: key 'control.socket': contains a NUL character (\\u0000); config strings cannot hold NUL")
        let m2 = configError { _ = try loadConfig("\"a\\u0000b\" = 1\n" + Self.good, dir: d) }
        #expect(m2 == "\(d)/kioskd.toml:1: key 'a\\u0000b': contains a NUL character (\\u0000); config keys cannot hold NUL")
        let m3 = configError { _ = try loadConfig(Self.good + "[input]\nseat = \"\"\"seat\n\\u0000\"\"\"\n", dir: d) }
        #expect(m3 == "\(d)/kioskd.toml:8: key 'input.seat': contains a NUL character (\\u0000); config strings cannot hold NUL")
    }

    @Test func invalidUTF8NamesLineAndColumn() {
        let d = tempDir()
        let bytes = Array("theme = \"default\"\nstate_dir = \"/tmp/".utf8) + [0xC3, 0x28] + Array("\"\n".utf8)
        let path = writeBytes(bytes, d)
        let msg = configError { _ = try DaemonConfig.load(path: path, environment: [:]) }
        #expect(msg == "\(path):2:19: not valid UTF-8 (byte 0xC3); a config file is UTF-8 text")
        // Overlong encodings and UTF-16 surrogates are not UTF-8 either.
        let p2 = writeBytes(Array("x = \"".utf8) + [0xC0, 0xAF] + Array("\"\n".utf8), d, "b.toml")
        #expect(configError { _ = try DaemonConfig.load(path: p2, environment: [:]) } == "\(p2):1:6: not valid UTF-8 (byte 0xC0); a config file is UTF-8 text")
        let p3 = writeBytes(Array("x = \"".utf8) + [0xED, 0xA0, 0x80] + Array("\"\n".utf8), d, "c.toml")
        #expect(configError { _ = try DaemonConfig.load(path: p3, environment: [:]) } == "\(p3):1:6: not valid UTF-8 (byte 0xED); a config file is UTF-8 text")
        // Valid multi-byte text still loads.
        #expect(configError { _ = try loadConfig("# Größe ✓ 🙂\n" + Self.good, dir: d) } == nil)
    }

    @Test func directoryAndMissingFileSayWhatIsWrong() {
        let d = tempDir()
        let m1 = configError { _ = try DaemonConfig.load(path: d, environment: [:]) }
        #expect(m1 == "\(d): cannot read the config file: it is a directory, expected a file")
        let m2 = configError { _ = try DaemonConfig.load(path: "\(d)/none.toml", environment: [:]) }
        #expect(m2 == "\(d)/none.toml: cannot read the config file: open \(d)/none.toml failed: No such file or directory (errno 2)")
    }

    @Test func hugeFileIsRefused() {
        let d = tempDir()
        let text = Self.good + "# " + String(repeating: "x", count: 1_100_000) + "\n"
        let msg = configError { _ = try loadConfig(text, dir: d) }
        #expect(msg == "\(d)/kioskd.toml: the file is \(text.utf8.count) bytes; a config file may have at most 1048576 bytes")
    }

    // MARK: numbers

    @Test func nanInfAndHugeNumbersAreNamed() {
        let d = tempDir()
        let cal = configError { _ = try loadConfig(Self.good + "[input]\ncalibration = [nan, 0, 0, 0, 1, 0]\n", dir: d) }
        #expect(cal == "\(d)/kioskd.toml:8: key 'input.calibration[0]': expected a finite number, got nan")
        let inf = configError { _ = try loadConfig(Self.good + "[display.blank]\nwake_seconds = -inf\n", dir: d) }
        #expect(inf == "\(d)/kioskd.toml:8: key 'display.blank.wake_seconds': expected a finite number, got -inf")
        let widths = configError { try check(Self.good + "[scene.p]\nkind = \"paint\"\nbrush_widths = [4, inf]\n", dir: d) }
        #expect(widths == "\(d)/kioskd.toml:9: key 'scene.p.brush_widths[1]': expected a finite number, got inf")
        let intAsDouble = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nrotation = 90.0"), dir: d) }
        #expect(intAsDouble == "\(d)/kioskd.toml:4: key 'display.rotation': expected an integer, got a number (90.0)")
        let huge = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nbuffers = 99999999999999999999"), dir: d) }
        #expect(huge?.hasPrefix("\(d)/kioskd.toml:4:") == true && huge?.contains("TOML syntax error") == true, "\(huge ?? "")")
        let big = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nrotation = 9223372036854775807"), dir: d) }
        #expect(big == "\(d)/kioskd.toml:4: key 'display.rotation': expected 0, 90, 180 or 270, got 9223372036854775807")
        // Negative zero is zero.
        let c = try? loadConfig(Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\nrotation = -0\n[display.blank]\nidle_seconds = -0.0"), dir: d)
        #expect(c?.display.rotation == .r0)
        #expect(c?.display.idleBlankSeconds == 0)
    }

    /// Every numeric key with odd numbers: loads (within range) or names file:line and the key.
    @Test func everyNumericKeyTakesOddNumbersSafely() throws {
        let d = tempDir()
        let keys: [(table: String, key: String, extra: String)] = [
            ("display", "buffers", ""), ("display", "rotation", ""),
            ("display.blank", "wake_seconds", ""), ("display.blank", "idle_seconds", ""),
            ("gestures", "tap_max_ms", ""), ("gestures", "long_press_ms", ""),
            ("gestures", "tap_max_movement", ""), ("gestures", "swipe_min_distance", ""),
            ("scenes", "rotate_seconds", ""), ("control", "mode", "socket = \"\(d)/c.sock\"\n"),
            ("scene.n", "digits", "kind = \"counter\"\n"), ("scene.n", "min", "kind = \"counter\"\n"),
            ("scene.n", "roll_ms", "kind = \"counter\"\n"), ("scene.n", "reset_hold_ms", "kind = \"counter\"\n"),
            ("scene.clock", "hour_format", ""),
            ("scene.p", "default_width", "kind = \"paint\"\n"), ("scene.p", "max_undo", "kind = \"paint\"\n"),
            ("scene.p", "idle_reset_seconds", "kind = \"paint\"\n"),
        ]
        let values = ["nan", "+nan", "inf", "-inf", "1e308", "-1", "-0", "-0.0", "0", "9223372036854775807", "-9223372036854775808", "5e-324"]
        for (table, key, extra) in keys {
            for v in values {
                // The table comes last so the key's line is the file's last line.
                let base = "state_dir = \"/tmp/x\"\n[scene.clock]\nkind = \"clock\"\n"
                let text = table == "scene.clock" ? base + "\(key) = \(v)\n" : base + "[\(table)]\n\(extra)\(key) = \(v)\n"
                let line = text.split(separator: "\n", omittingEmptySubsequences: false).count - 1
                let msg = configError { try check(text, dir: d) }
                guard let msg else { continue }
                #expect(msg.hasPrefix("\(d)/kioskd.toml:\(line): key '\(table).\(key)': "), "\(table).\(key) = \(v): \(msg)")
            }
        }
        for v in values where v.hasSuffix("nan") || v.hasSuffix("inf") {
            let m = configError { _ = try loadConfig(Self.good + "[input]\ncalibration = [1, 0, 0, 0, 1, \(v)]\n", dir: d) }
            #expect(m?.hasPrefix("\(d)/kioskd.toml:8: key 'input.calibration") == true, "\(v): \(m ?? "")")
        }
    }

    @Test func gestureLimitsAreNamedByTheirKeys() {
        let d = tempDir()
        let m1 = configError { _ = try loadConfig(Self.good + "[gestures]\ntap_max_ms = 500\nlong_press_ms = 400\n", dir: d) }
        #expect(m1 == "\(d)/kioskd.toml:9: key 'gestures.long_press_ms': 400 ms must be longer than gestures.tap_max_ms (500 ms)")
        let m2 = configError { _ = try loadConfig(Self.good + "[gestures]\ntap_max_ms = 900\n", dir: d) }
        #expect(m2 == "\(d)/kioskd.toml:8: key 'gestures.tap_max_ms': 900 ms must be shorter than gestures.long_press_ms (800 ms)")
        let m3 = configError { _ = try loadConfig(Self.good + "[gestures]\ntap_max_movement = 0.2\nswipe_min_distance = 0.1\n", dir: d) }
        #expect(m3 == "\(d)/kioskd.toml:9: key 'gestures.swipe_min_distance': 0.1 must be larger than gestures.tap_max_movement (0.2)")
    }

    // MARK: strings and names

    @Test func longStringsAreRefused() {
        let d = tempDir()
        let label = String(repeating: "W", count: 200_000)
        let m1 = configError { try check(Self.good + "[scene.s]\nkind = \"counter\"\n[[scene.s.counter]]\nname = \"home\"\nlabel = \"\(label)\"\n", dir: d) }
        #expect(m1 == "\(d)/kioskd.toml:11: key 'scene.s.counter[0].label': a string of 200000 bytes is too long; config strings have at most 4096 bytes")
        let label65 = String(repeating: "é", count: 65)
        let m2 = configError { try check(Self.good + "[scene.s]\nkind = \"counter\"\n[[scene.s.counter]]\nname = \"home\"\nlabel = \"\(label65)\"\n", dir: d) }
        #expect(m2 == "\(d)/kioskd.toml:11: key 'scene.s.counter[0].label': 65 characters is too long; a label has at most 64 characters")
        let label64 = String(repeating: "é", count: 64)
        #expect(configError { try check(Self.good + "[scene.s]\nkind = \"counter\"\n[[scene.s.counter]]\nname = \"home\"\nlabel = \"\(label64)\"\n", dir: d) } == nil)
        let out = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\noutput = \"\(String(repeating: "H", count: 5000))\""), dir: d) }
        #expect(out == "\(d)/kioskd.toml:4: key 'display.output': a string of 5000 bytes is too long; config strings have at most 4096 bytes")
    }

    @Test func namesThatCannotBeStoredAreRefused() {
        let d = tempDir()
        let s1 = configError { _ = try loadConfig(Self.good + "[scene.\"a/b\"]\nkind = \"clock\"\n", dir: d) }
        #expect(s1 == "\(d)/kioskd.toml:7: key 'scene.\"a/b\"': a scene name has 1…64 characters, no spaces, control characters or /, got \"a/b\"")
        // Dots and letters beyond ASCII are fine: the state key and file name encode them.
        #expect(configError { _ = try loadConfig(Self.good + "[scene.\"a.b\"]\nkind = \"clock\"\n[scene.\"Gäste\"]\nkind = \"clock\"\n", dir: d) } == nil)
        let s2 = configError { _ = try loadConfig(Self.good + "[scene.\"x\\ty\"]\nkind = \"clock\"\n", dir: d) }
        #expect(s2 == "\(d)/kioskd.toml:7: key 'scene.\"x\\ty\"': a scene name has 1…64 characters, no spaces, control characters or /, got \"x\\ty\"")
        let long = String(repeating: "s", count: 65)
        let s3 = configError { _ = try loadConfig(Self.good + "[scene.\(long)]\nkind = \"clock\"\n", dir: d) }
        #expect(s3 == "\(d)/kioskd.toml:7: key 'scene.\(long)': a scene name has 1…64 characters, no spaces, control characters or /, got \"\(long)\" (65 characters)")
        #expect(configError { _ = try loadConfig(Self.good + "[scene.\(String(repeating: "s", count: 64))]\nkind = \"clock\"\n", dir: d) } == nil)

        let c1 = configError { try check(Self.good + "[scene.a]\nkind = \"counter\"\n[[scene.a.counter]]\nname = \"b/c\"\n", dir: d) }
        #expect(c1 == "\(d)/kioskd.toml:10: key 'scene.a.counter[0].name': a counter name has 1…64 characters, no spaces, control characters or / and is not \"all\", got \"b/c\"")
        let c2 = configError { try check(Self.good + "[scene.a]\nkind = \"counter\"\n[[scene.a.counter]]\nname = \"\(long)\"\n", dir: d) }
        #expect(c2 == "\(d)/kioskd.toml:10: key 'scene.a.counter[0].name': a counter name has 1…64 characters, no spaces, control characters or / and is not \"all\", got \"\(long)\" (65 characters)")
        let c3 = configError { try check(Self.good + "[scene.a]\nkind = \"counter\"\n[[scene.a.counter]]\nname = \"x\\ny\"\n", dir: d) }
        #expect(c3 == "\(d)/kioskd.toml:10: key 'scene.a.counter[0].name': a counter name has 1…64 characters, no spaces, control characters or / and is not \"all\", got \"x\\ny\"")
    }

    @Test func themeNamesAreChecked() {
        let d = tempDir()
        let long = String(repeating: "t", count: 65)
        let m = configError { _ = try loadConfig("theme = \"\(long)\"\n" + Self.good, dir: d) }
        #expect(m?.hasPrefix("\(d)/kioskd.toml:1: key 'theme': \"\(long)\" (65 characters) is not a theme name (1…64 characters, no / or control characters, not starting with .); themes: ") == true, "\(m ?? "")")
    }

    @Test func sameCounterNameInTwoScenesIsRefused() {
        let d = tempDir()
        let text = Self.good + """
        [scene.a]
        kind = "counter"
        [[scene.a.counter]]
        name = "home"
        [scene.b]
        kind = "counter"
        [[scene.b.counter]]
        name = "away"
        [[scene.b.counter]]
        name = "home"

        """
        let m = configError { try check(text, dir: d) }
        #expect(m == "\(d)/kioskd.toml:16: key 'scene.b.counter[1].name': counter \"home\" is also defined at \(d)/kioskd.toml:10 (key 'scene.a.counter[0].name'); counters are addressed by name alone, so each name may be used once")
        // Two scenes with the default counter "count" collide as well.
        let m2 = configError { try check(Self.good + "[scene.a]\nkind = \"counter\"\n[scene.b]\nkind = \"counter\"\n", dir: d) }
        #expect(m2 == "\(d)/kioskd.toml:9: key 'scene.b.counter': counter \"count\" (the default counter) is also defined at \(d)/kioskd.toml:7 (key 'scene.a.counter'); counters are addressed by name alone, so each name may be used once")
    }

    // MARK: paths

    @Test func emptyPathsAreRefused() {
        let d = tempDir()
        let s = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "state_dir = \"/tmp/x\"", with: "state_dir = \"\""), dir: d) }
        #expect(s == "\(d)/kioskd.toml:1: key 'state_dir': expected a directory path, got an empty string")
        let c = configError { _ = try loadConfig(Self.good + "[control]\nsocket = \"\"\n", dir: d) }
        #expect(c == "\(d)/kioskd.toml:8: key 'control.socket': expected a socket path, got an empty string")
        let t = configError { _ = try loadConfig("theme_dir = \"\"\n" + Self.good, dir: d) }
        #expect(t == "\(d)/kioskd.toml:1: key 'theme_dir': expected a directory path, got an empty string")
        let dev = configError { _ = try loadConfig(Self.good.replacingOccurrences(of: "backend = \"headless\"", with: "backend = \"headless\"\ndevice = \"\""), dir: d) }
        #expect(dev == "\(d)/kioskd.toml:4: key 'display.device': expected a DRM device: a driver name like \"vc4\" (1…64 characters) or a path like "
            + "\"/dev/dri/by-path/platform-1f00130000.dsi-card\" (no control characters; kioskd --list-outputs shows them), got an empty string")
    }

    @Test func checkSystemFindsWhatTheDaemonWouldTripOver() throws {
        let d = tempDir()
        func sys(_ text: String) -> String? { configError { try loadConfig(text, dir: d).checkSystem() } }
        let base = Self.good.replacingOccurrences(of: "/tmp/x", with: "\(d)/state")
        // Good: nothing is created by the check.
        #expect(sys(base + "[control]\nsocket = \"\(d)/run/c.sock\"\n") == nil)
        #expect(!FileManager.default.fileExists(atPath: "\(d)/state"))
        #expect(!FileManager.default.fileExists(atPath: "\(d)/run"))

        let g = sys(base + "[control]\nsocket = \"\(d)/c.sock\"\ngroup = \"no-such-group-kt\"\n")
        #expect(g == "\(d)/kioskd.toml:9: key 'control.group': no group named \"no-such-group-kt\" on this system")
        try FileManager.default.createDirectory(atPath: "\(d)/sockdir", withIntermediateDirectories: true)
        let s = sys(base + "[control]\nsocket = \"\(d)/sockdir\"\n")
        #expect(s == "\(d)/kioskd.toml:8: key 'control.socket': \(d)/sockdir is a directory; expected the path of the socket file kioskd creates")
        write("x", d, "plain")
        let s2 = sys(base + "[control]\nsocket = \"\(d)/plain/c.sock\"\n")
        #expect(s2 == "\(d)/kioskd.toml:8: key 'control.socket': cannot create \(d)/plain/c.sock: \(d)/plain is not a directory")
        let s3 = sys(base + "[control]\nsocket = \"\(d)/plain\"\n")
        #expect(s3 == "\(d)/kioskd.toml:8: key 'control.socket': \(d)/plain exists and is not a socket; kioskd does not replace other files")
        let st = sys(Self.good.replacingOccurrences(of: "/tmp/x", with: "\(d)/plain/state") + "[control]\nsocket = \"\(d)/c.sock\"\n")
        #expect(st == "\(d)/kioskd.toml:1: key 'state_dir': cannot create \(d)/plain/state: \(d)/plain is not a directory")
        let st2 = sys(Self.good.replacingOccurrences(of: "/tmp/x", with: "\(d)/plain") + "[control]\nsocket = \"\(d)/c.sock\"\n")
        #expect(st2 == "\(d)/kioskd.toml:1: key 'state_dir': \(d)/plain is not a directory")
    }

    // MARK: theme files

    @Test func themeFilesGetTheSameChecks() {
        let d = tempDir()
        try! FileManager.default.createDirectory(atPath: "\(d)/themes", withIntermediateDirectories: true)
        let text = "theme = \"t\"\n" + Self.good
        _ = writeBytes(Array("base = \"dark\"\n".utf8) + [0] + Array("\n".utf8), "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:2:1: the file contains a NUL byte; a config file is UTF-8 text without NUL bytes")
        _ = writeBytes(Array("base = \"da".utf8) + [0xFF] + Array("rk\"\n".utf8), "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:1:11: not valid UTF-8 (byte 0xFF); a config file is UTF-8 text")
        let deep = Array(repeating: "f", count: 20000).joined(separator: ".")
        write("base = \"dark\"\n\(deep) = 1\n", "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:2: key 'f.f.f.f.f.f.f.f…': nested more than 64 levels (tables, dotted keys, arrays and inline tables count together)")
        write("base = \"dark\"\n[fonts.body]\nsize = nan\n", "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:3: key 'fonts.body.size': expected a finite number, got nan")
        write("base = \"dark\"\n[fonts.body]\nfamily = \"Sans\\u0000Serif\"\n", "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:3: key 'fonts.body.family': contains a NUL character (\\u0000); config strings cannot hold NUL")
        write("base = \"dark\"\n[fonts.body]\nfamily = \"\(String(repeating: "F", count: 129))\"\n", "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:3: key 'fonts.body.family': 129 characters is too long; a font family has at most 128 characters")
        write("base = \"dark\"\n[fonts.body]\nfamily = \"\"\n", "\(d)/themes", "t.toml")
        #expect(configError { _ = try loadConfig(text, dir: d) } == "\(d)/themes/t.toml:3: key 'fonts.body.family': expected a font family like \"Sans\", got an empty string")
        try! FileManager.default.createDirectory(atPath: "\(d)/themes/dir.toml", withIntermediateDirectories: true)
        #expect(configError { _ = try loadConfig("theme = \"dir\"\n" + Self.good, dir: d) } == "\(d)/themes/dir.toml: cannot read the config file: it is a directory, expected a file")
    }

    // MARK: mutations

    /// Random edits of the shipped configs (TOML punctuation, escapes, deep nesting, stray and
    /// invalid bytes) only ever give config errors naming the file: no crash, no other error.
    @Test func mutatedConfigsGiveConfigErrorsOnly() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let seeds = try ["kioskd.toml", "scoreboard.toml"].map { Array(try String(contentsOfFile: "\(root)/config/\($0)", encoding: .utf8).utf8) }
        let pieces: [[UInt8]] = ["[", "]", "{", "}", "=", ".", "\"", "'", "\\", "\n", ",", "#", "\\u0000", "\\U00000000",
                                 "\"\"\"", "[[", "]]", "a.", "x = ", "nan", "inf", "-0", "99999999999999999999", "1e999",
                                 String(repeating: "a.", count: 70), String(repeating: "[", count: 300), "\u{1F642}", "é"].map { Array($0.utf8) }
            + [[0], [0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80]]
        var rng = SplitMix(seed: 0x6b696f736b64)
        let file = "/fuzz/kioskd.toml"
        var errors = 0
        // KT_MUTATIONS=N runs more (20 000 ran clean).
        let count = Int(ProcessInfo.processInfo.environment["KT_MUTATIONS"] ?? "") ?? 500
        for n in 0..<count {
            var b = seeds[n % seeds.count]
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at = Int(rng.next() % UInt64(b.count + 1))
                switch rng.next() % 3 {
                case 0: b.insert(contentsOf: pieces[Int(rng.next() % UInt64(pieces.count))], at: at)
                case 1: b.removeSubrange(at..<min(b.count, at + Int(rng.next() % 40)))
                default: b.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                }
            }
            // KT_DUMP=path keeps the input being parsed (to find the one that crashed).
            if let dump = ProcessInfo.processInfo.environment["KT_DUMP"] { #expect(FileManager.default.createFile(atPath: dump, contents: Data(b))) }
            do {
                let t = try ConfigFile.parse(bytes: b, file: file)
                let c = try DaemonConfig(root: t, file: file, environment: ["CONFIGURATION_DIRECTORY": "\(root)/config"])
                _ = try SceneRegistry.standard.make(c.scenes, state: MemoryStateStore(), intents: { _ in }, logger: quietLogger, dataDirectory: "/nonexistent")
            } catch let e as KioskError {
                errors += 1
                #expect(e.kind == .config && e.message.hasPrefix(file), "\(e.kind): \(e.message)")
            }
        }
        #expect(errors > count / 2)
    }
}

/// A small deterministic random number generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}
