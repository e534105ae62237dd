import Testing
@testable import KioskCore

@Suite struct ReadableTextTests {
    private func palette(text: String, background: String, highlight: String) -> Palette {
        Palette(primary: .red, neutral: .red, secondary: .red, highlight: Color(hex: highlight)!,
                background: Color(hex: background)!, text: Color(hex: text)!)
    }

    @Test func thePalettesTextIsKeptWhereItReads() {
        // Black on white is 21:1.
        #expect(Theme.default.palette.readableText(on: .white) == .black)
        // #767676 on white is 4.54:1, just enough; the threshold can be raised.
        let p = palette(text: "#767676", background: "#000000", highlight: "#000000")
        #expect(p.readableText(on: .white) == Color(hex: "#767676")!)
        #expect(p.readableText(on: .white, minimumContrast: 7) == Color(hex: "#000000")!)
    }

    @Test func thenThePalettesBackgroundOrHighlightWhicheverContrastsBest() {
        // Light text on yellow fails; of dark background (#121212) and pink highlight, the background wins.
        let dark = Theme.dark.palette
        #expect(dark.readableText(on: .yellow) == dark.background)
        // White text on white fails; of a yellow background (1.07:1) and a navy highlight, the highlight wins.
        let p = palette(text: "#FFFFFF", background: "#FFFF00", highlight: "#000080")
        #expect(p.readableText(on: .white) == Color(hex: "#000080")!)
    }

    @Test func blackOrWhiteWhenNoPaletteColourReads() {
        // Every palette colour is a mid grey: on #777777 black reads at 4.7:1, white only at 4.48:1.
        let p = palette(text: "#808080", background: "#7A7A7A", highlight: "#707070")
        #expect(p.readableText(on: Color(hex: "#777777")!) == .black)
        // Every palette colour is a dark grey: on #383838 only white reads.
        let q = palette(text: "#404040", background: "#505050", highlight: "#303030")
        #expect(q.readableText(on: Color(hex: "#383838")!) == .white)
    }
}

@Suite struct ColorTests {
    @Test func hexRoundTrip() {
        #expect(Color(hex: "#8A9544")?.hexString == "#8A9544")
        let lit = Color(hex: "133516")!.rgb8
        #expect(lit.r == 0x13 && lit.g == 0x35 && lit.b == 0x16)
        #expect(Color(hex: "#abc")?.hexString == "#AABBCC")
        #expect(Color(hex: "#12345") == nil)
        #expect(Color(hex: "#GG0000") == nil)
    }
    @Test func contrastRatioMatchesWCAG() {
        #expect(abs(Color.black.contrastRatio(with: .white) - 21) < 0.001)
        #expect(abs(Color.white.contrastRatio(with: .white) - 1) < 0.001)
        // #777777 on white is the classic 4.48:1 just below AA.
        let grey = Color(hex: "#777777")!
        #expect(abs(grey.contrastRatio(with: .white) - 4.48) < 0.01)
    }
    @Test func hsbRoundTrip() {
        for (h, s, b) in [(60.0, 0.5, 1.0), (200.0, 0.25, 0.75), (359.0, 1.0, 0.5), (0.0, 0.0, 0.3)] {
            let c = Color(hue: h, saturation: s, brightness: b)
            let back = c.hsb
            if s > 0 { #expect(abs(back.hue - h) < 0.01) }
            #expect(abs(back.saturation - s) < 0.0001)
            #expect(abs(back.brightness - b) < 0.0001)
        }
        #expect(Color(hue: 60, saturation: 0.5, brightness: 1).hexString == "#FFFF80")
    }
}

@Suite struct DamageTests {
    @Test func overlappingRectsMerge() {
        var d = Damage()
        d.add(Rect(x: 0, y: 0, width: 10, height: 10))
        d.add(Rect(x: 5, y: 5, width: 10, height: 10))
        #expect(d.rects == [Rect(x: 0, y: 0, width: 15, height: 15)])
        d.add(Rect(x: 100, y: 100, width: 4, height: 4))
        #expect(d.rects.count == 2)
        #expect(d.area == 15 * 15 + 16)
    }
    @Test func emptyRectsIgnoredAndClipped() {
        var d = Damage()
        d.add(Rect(x: 3, y: 3, width: 0, height: 9))
        #expect(d.isEmpty)
        d.add(Rect(x: -5, y: -5, width: 10, height: 10))
        #expect(d.clipped(to: Rect(x: 0, y: 0, width: 100, height: 100)).rects == [Rect(x: 0, y: 0, width: 5, height: 5)])
    }
    @Test func tooManyRectsCollapseToBounds() {
        var d = Damage(limit: 4)
        for i in 0..<5 { d.add(Rect(x: i * 20, y: 0, width: 5, height: 5)) }
        #expect(d.rects == [Rect(x: 0, y: 0, width: 85, height: 5)])
    }
}

@Suite struct RotationTests {
    @Test func logicalSizeSwapsForPortrait() {
        let p = Size(width: 1280, height: 800)
        #expect(Rotation.r0.logicalSize(physical: p) == p)
        #expect(Rotation.r90.logicalSize(physical: p) == Size(width: 800, height: 1280))
        #expect(Rotation.r270.logicalSize(physical: p) == Size(width: 800, height: 1280))
    }
    @Test(arguments: Rotation.allCases) func pointMappingsAreInverse(_ r: Rotation) {
        for p in [Point(x: 0.1, y: 0.2), Point(x: 0.9, y: 0.05), Point(x: 0.5, y: 0.5)] {
            let back = r.physicalToLogical(r.logicalToPhysical(p))
            #expect(abs(back.x - p.x) < 1e-12 && abs(back.y - p.y) < 1e-12)
        }
    }
    /// The logical top-left corner lands where a clockwise turn by `r` puts it on the panel.
    @Test func logicalTopLeftOnThePanel() {
        let tl = Point(x: 0, y: 0)
        #expect(Rotation.r90.logicalToPhysical(tl) == Point(x: 1, y: 0))   // top-right of the framebuffer
        #expect(Rotation.r180.logicalToPhysical(tl) == Point(x: 1, y: 1))
        #expect(Rotation.r270.logicalToPhysical(tl) == Point(x: 0, y: 1))
    }
    @Test(arguments: Rotation.allCases) func blitPutsEachPixelWhereThePointMapSays(_ r: Rotation) {
        let logical = Size(width: 6, height: 4)
        let physical = r.physicalSize(logical: logical)
        var src = [UInt32](repeating: 0, count: logical.area)
        for y in 0..<logical.height { for x in 0..<logical.width { src[y * logical.width + x] = UInt32(y * 100 + x) } }
        var dst = [UInt32](repeating: 0xFFFF_FFFF, count: physical.area)
        src.withUnsafeMutableBytes { s in
            dst.withUnsafeMutableBytes { d in
                let sb = PixelBuffer(base: s.baseAddress!, size: logical, stride: logical.width * 4)
                let db = PixelBuffer(base: d.baseAddress!, size: physical, stride: physical.width * 4)
                blit(sb, into: db, rect: Rect(x: 1, y: 1, width: 4, height: 2), rotation: r)
            }
        }
        var copied = 0
        for y in 0..<logical.height {
            for x in 0..<logical.width {
                // Pixel centres map through the normalised transform.
                let c = r.logicalToPhysical(Point(x: (Double(x) + 0.5) / Double(logical.width), y: (Double(y) + 0.5) / Double(logical.height)))
                let px = Int(c.x * Double(physical.width)), py = Int(c.y * Double(physical.height))
                let v = dst[py * physical.width + px]
                if x >= 1 && x < 5 && y >= 1 && y < 3 {
                    #expect(v == UInt32(y * 100 + x), "rotation \(r) logical (\(x),\(y))")
                    copied += 1
                } else {
                    #expect(v == 0xFFFF_FFFF, "rotation \(r): pixel outside the rect was written")
                }
            }
        }
        #expect(copied == 8)
        let pr = r.logicalToPhysical(Rect(x: 1, y: 1, width: 4, height: 2), logical: logical)
        #expect(pr.area == 8)
    }
}

@Suite struct ConfigTableTests {
    func table() -> ConfigTable {
        let f = "k.toml"
        return ConfigTable(path: "scene.clock", location: KioskCore.SourceLocation(file: f, line: 3), entries: [
            ("kind", ConfigNode(.string("clock"), at: KioskCore.SourceLocation(file: f, line: 4))),
            ("digits", ConfigNode(.int(12), at: KioskCore.SourceLocation(file: f, line: 5))),
            ("mode", ConfigNode(.string("fancy"), at: KioskCore.SourceLocation(file: f, line: 6))),
            ("colour", ConfigNode(.bool(true), at: KioskCore.SourceLocation(file: f, line: 7))),
        ])
    }
    enum Mode: String, CaseIterable { case scaled, literal }

    @Test func rangeErrorNamesFileLineAndKey() {
        let t = table()
        #expect(throws: KioskError.config("k.toml:5: key 'scene.clock.digits': 12 is out of range, expected 1…9")) {
            _ = try t.int("digits", default: 4, range: 1...9)
        }
    }
    @Test func choiceErrorListsChoices() {
        let t = table()
        do { _ = try t.choice("mode", default: Mode.scaled); Issue.record("expected an error") } catch {
            #expect("\(error)" == "k.toml:6: key 'scene.clock.mode': expected one of \"scaled\", \"literal\", got \"fancy\"")
        }
    }
    @Test func typeErrorSaysWhatWasFound() {
        let t = table()
        do { _ = try t.string("colour"); Issue.record("expected an error") } catch {
            #expect("\(error)" == "k.toml:7: key 'scene.clock.colour': expected a string, got a boolean (true)")
        }
    }
    @Test func unknownKeysAreReported() throws {
        let t = table()
        _ = try t.string("kind")
        _ = try t.int("digits", default: 4)
        _ = try t.string("mode")
        #expect(t.unknownKeys == ["colour"])
        do { try t.finish(); Issue.record("expected an error") } catch {
            #expect("\(error)".hasPrefix("k.toml:7: key 'scene.clock.colour': unknown key"))
        }
    }
}

@Suite struct TouchScriptTests {
    @Test func pathPassesThroughEveryPointWithEvenSamples() throws {
        let corners = try TouchScript.parsePath("0.1,0.2:0.5,0.8:0.9,0.2")
        #expect(corners == [Point(x: 0.1, y: 0.2), Point(x: 0.5, y: 0.8), Point(x: 0.9, y: 0.2)])
        let path = TouchScript.path(through: corners, spacing: 0.01)
        for c in corners { #expect(path.contains { $0.distance(to: c) < 1e-12 }) }
        let steps = zip(path, path.dropFirst()).map { $0.distance(to: $1) }
        #expect(steps.max()! < 0.02)
        #expect(path.allSatisfy { (0...1).contains($0.x) && (0...1).contains($0.y) })
    }

    @Test func badPathsNameTheFaultyPoint() {
        for (spec, part) in [("0.1,0.2", "at least two points"), ("0.1,0.2:1.5,0", "'1.5,0'"), ("a,b:0,0", "'a,b'"), ("0.1:0.2,0.3", "'0.1'")] {
            do { _ = try TouchScript.parsePath(spec); Issue.record("\(spec) was accepted") } catch {
                #expect("\(error)".contains(part), "\(spec): \(error)")
            }
        }
    }

    @Test func strokesInterleaveFingersAndEndEachOne() {
        let events = TouchScript.strokes([[Point(x: 0, y: 0), Point(x: 1, y: 0)], [Point(x: 0, y: 1), Point(x: 1, y: 1)]])
        let touches = events.compactMap { e -> TouchEvent? in if case .touch(let t) = e { return t } else { return nil } }
        #expect(touches.map(\.phase) == [.down, .down, .motion, .motion, .up, .up])
        #expect(touches.map(\.slot) == [0, 1, 0, 1, 0, 1])
        #expect(touches[5].position == Point(x: 1, y: 1))
    }
}
