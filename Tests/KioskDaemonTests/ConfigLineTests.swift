import Foundation
import KioskConfig
import KioskCore
import KioskDaemon
import Testing

/// Config errors name file:line:key for every TOML shape that places a key: arrays of tables,
/// dotted keys, inline tables, quoted keys, and keys after multi-line strings and comments that
/// hold `[`, `=` or `#`. The line numbers are counted by hand from the texts below.
@Suite struct ConfigLineTests {
    func error(_ text: String, _ dir: String) -> String {
        configError { _ = try loadConfig(text, dir: dir) } ?? "no error"
    }

    @Test func aKeyInTheSecondArrayOfTablesElementNamesItsLine() {
        let d = tempDir()
        let e = error("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        [[output]]
        connector = "HDMI-A-1"
        scenes = ["clock"]
        [[output]]
        connector = "HDMI-A-2"
        scenes = ["clock"]
        rotation = 45
        [scene.clock]
        kind = "clock"
        """, d)
        #expect(e == "\(d)/kioskd.toml:10: key 'output[1].rotation': expected 0, 90, 180 or 270, got 45", "\(e)")
    }

    @Test func aSubTableOfAnArrayElementNamesItsLine() {
        let d = tempDir()
        let e = error("""
        state_dir = "\(d)/state"
        [[output]]
        connector = "HDMI-A-1"
        [output.cec]
        adapter = "tv"
        [scene.clock]
        kind = "clock"
        """, d)
        #expect(e.hasPrefix("\(d)/kioskd.toml:5: key 'output[0].cec.adapter': expected \"auto\""), "\(e)")
    }

    @Test func dottedKeysNameTheLineTheyWereWrittenOn() {
        let d = tempDir()
        let e = error("""
        state_dir = "\(d)/state"
        display.backend = "headless"

        display . rotation = 45
        [scene.clock]
        kind = "clock"
        """, d)
        #expect(e == "\(d)/kioskd.toml:4: key 'display.rotation': expected 0, 90, 180 or 270, got 45", "\(e)")
    }

    @Test func aKeyInsideAMultiLineInlineTableArrayNamesItsOwnLine() {
        let d = tempDir()
        let e = error("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        [input]
        device = [
          { match = "a*", output = "output-1" },
          { match = "b*", output = "DSI-9" },
        ]
        [scene.clock]
        kind = "clock"
        """, d)
        #expect(e.hasPrefix("\(d)/kioskd.toml:7: key 'input.device[1].output': no output named \"DSI-9\""), "\(e)")
    }

    @Test func quotedKeysAndHeadersAreFollowed() {
        let d = tempDir()
        let e = error("""
        state_dir = "\(d)/state"
        ["display"]
        'backend' = "headless"
        "rota\\u0074ion" = 45
        [scene.clock]
        kind = "clock"
        """, d)
        #expect(e == "\(d)/kioskd.toml:4: key 'display.rotation': expected 0, 90, 180 or 270, got 45", "\(e)")
    }

    @Test func multiLineStringsHoldingBracketsAndEqualsAreNotKeys() {
        let d = tempDir()
        // The strings' lines look like table headers and keys; the error is on line 12.
        let e = error("""
        state_dir = "\(d)/state"
        theme_dir = '''
        x = [1, 2
        [[output]]
        '''
        [control]
        group = \"\"\"
        [display]
        rotation = 45 \\\"\"\" still inside
        \"\"\"
        socket = "s # [e] = \\" [f]" # [g] = 1
        mode = 1000
        [scene.clock]
        kind = "clock"
        """, d)
        #expect(e.hasPrefix("\(d)/kioskd.toml:12: key 'control.mode': "), "\(e)")
    }

    @Test func theLocatorFollowsNestedArraysOfTables() {
        let loc = ConfigLocator(source: """
        [[a]]
        x = 1
        [[a.b]]
        y = 2
        [[a.b]]
        y = 3
        [[a]]
        [[a.b]]
        y = 4
        [a.b.c]
        z = 5
        """)
        #expect(loc.line(of: "a[0].x") == 2)
        #expect(loc.line(of: "a[0].b[0].y") == 4)
        #expect(loc.line(of: "a[0].b[1].y") == 6)
        #expect(loc.line(of: "a[1]") == 7)
        #expect(loc.line(of: "a[1].b[0].y") == 9)
        #expect(loc.line(of: "a[1].b[0].c.z") == 11)
    }

    @Test func theLocatorSkipsCommentsAndStringsInArraysAndInlineTables() {
        let loc = ConfigLocator(source: """
        list = [ # a = 1
          "]", # [b]
          '''
        c = 2''',
          { d = "}", e = { f = 1 } },
        ]
        g = 3
        """)
        #expect(loc.line(of: "list[1]") == 3)
        #expect(loc.line(of: "list[2].d") == 5)
        #expect(loc.line(of: "list[2].e.f") == 5)
        #expect(loc.line(of: "g") == 7)
        #expect(loc.lines["a"] == nil && loc.lines["b"] == nil && loc.lines["c"] == nil)
    }

    @Test func theLocatorFollowsQuotesAtTheEdgesAndWindowsLineEnds() {
        let text = [
            #"a = """x""""  "#,
            #"b = 1"#,
            #"[ t . "u.v" ]"#,
            #"w = '''it's'''"#,
            #"x = """\"#,
            #"  [y]"#,
            #"  z = 1""""#,
            #"last = 2"#,
        ].joined(separator: "\r\n")
        let loc = ConfigLocator(source: text)
        #expect(loc.line(of: "b") == 2)
        #expect(loc.line(of: "t.u.v") == 3)
        #expect(loc.line(of: "t.u.v.w") == 4)
        #expect(loc.line(of: "t.u.v.x") == 5)
        #expect(loc.line(of: "t.u.v.last") == 8)
        #expect(loc.lines["y"] == nil && loc.lines["t.u.v.z"] == nil)
    }

    /// A quoted key's escapes decode as TOMLKit decodes them, so its path is the one errors name.
    @Test func quotedKeysWithEveryEscapeGetTheirLines() {
        let loc = ConfigLocator(source: #"""
        x = 0
        "a\bb" = 1
        "a\fb" = 2
        "a\rb" = 3
        "a\"b\\c" = 4
        "a\u00e9\U0001F600" = 5
        """#)
        #expect(loc.lines["a\u{08}b"] == 2)
        #expect(loc.lines["a\u{0C}b"] == 3)
        #expect(loc.lines["a\rb"] == 4)
        #expect(loc.lines["a\"b\\c"] == 5)
        #expect(loc.lines["a\u{E9}\u{1F600}"] == 6)
    }

    /// Every key, table and element TOMLKit reads has a line of its own in the locator (none
    /// falls back to its parent's): the shipped configs and themes, and a document of every shape.
    @Test func theLocatorFindsEveryPathTheParserFinds() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        var documents: [(String, String)] = []
        for dir in ["\(root)/config", "\(root)/config/themes"] {
            for f in try FileManager.default.contentsOfDirectory(atPath: dir).sorted() where f.hasSuffix(".toml") {
                documents.append(("\(dir)/\(f)", try String(contentsOfFile: "\(dir)/\(f)", encoding: .utf8)))
            }
        }
        documents.append(("shapes", #"""
        top = "x" # [not] = 1
        "quoted key" = 1
        'lit.key' = 2
        "esc\tkey" = 3
        "esc\bkey" = 6
        a.b . c = 4
        m = [[1, 2], [3, [4, 5]]]
        t = { u = 1, v.w = { x = [ { y = 2 } ] } }
        s = """
        [fake]
        z = 1"""
        l = '''
        [[fake]]'''
        [[arr]]
        k = 1
        [arr.sub]
        k = 2
        [[arr.inner]]
        k = 3
        [[arr]]
        k = 4
        [ "sp ace" . 'q' ]
        k = 5
        """#))
        #expect(documents.count >= 8)
        for (name, text) in documents {
            let tree = try ConfigFile.parse(text, file: name)
            let loc = ConfigLocator(source: text)
            var paths: [String] = []
            func walk(_ node: ConfigNode, _ path: String) {
                paths.append(path)
                switch node.value {
                case .table(let t): for k in t.keys { if let n = t.entries[k] { walk(n, t.fullKey(k)) } }
                case .array(let a): for (i, e) in a.enumerated() { walk(e, "\(path)[\(i)]") }
                default: break
                }
            }
            for k in tree.keys { if let n = tree.entries[k] { walk(n, tree.fullKey(k)) } }
            #expect(paths.count > 3, "\(name)")
            let missing = paths.filter { loc.lines[$0] == nil }
            #expect(missing.isEmpty, "\(name): no line for \(missing)")
        }
    }
}
