import Glibc
import Testing
import KioskCore
import KioskTesting
@testable import KioskRender

@Suite struct CanvasTests {
    @Test func fillAndReadBackExactColours() throws {
        let c = try Canvas(size: Size(width: 40, height: 30))
        c.clear(Color(hex: "#8A9544")!)
        c.fill(Rect(x: 10, y: 5, width: 5, height: 5), Color(hex: "#123456")!)
        #expect(c.color(x: 0, y: 0).hexString == "#8A9544")
        #expect(c.color(x: 12, y: 7).hexString == "#123456")
        #expect(c.color(x: 15, y: 7).hexString == "#8A9544")
    }

    @Test func textDrawsInkInsideTheReturnedRectOnly() throws {
        let c = try Canvas(size: Size(width: 400, height: 120))
        c.clear(.white)
        let r = c.drawText("13:35:16", Theme.default.fonts.heading, px: 60, color: .black, x: 20, y: 20)
        let inside = Pixels.count(.black, in: c, rect: r, tolerance: 60)
        let everywhere = Pixels.count(.black, in: c, tolerance: 60)
        #expect(inside > 200)
        #expect(inside == everywhere)
    }

    @Test func differentTextGivesDifferentPixelsAndShapesOtherScripts() throws {
        let a = try Canvas(size: Size(width: 300, height: 80)), b = try Canvas(size: Size(width: 300, height: 80))
        for (c, t) in [(a, "#8A9544"), (b, "#133516")] {
            c.clear(.white)
            c.drawText(t, Theme.default.fonts.body, px: 40, color: .black, x: 5, y: 5)
        }
        #expect(Pixels.differingPixels(a, b) > 100)
        // Cyrillic and Greek shape through pango with DejaVu: ink appears.
        let m = a.measure("Счёт Σκορ", Theme.default.fonts.body, px: 40)
        #expect(m.width > 100)
        a.clear(.white)
        a.drawText("Счёт", Theme.default.fonts.body, px: 40, color: .black, x: 5, y: 5)
        #expect(Pixels.count(.black, in: a, tolerance: 60) > 100)
    }

    @Test func fittingSizeFitsTheBox() throws {
        let c = try Canvas(size: Size(width: 10, height: 10))
        let px = c.fittingSize("00:00:00", Theme.default.fonts.heading, maxPx: 1000, width: 800, height: 300)
        let m = c.measure("00:00:00", Theme.default.fonts.heading, px: px)
        #expect(m.width <= 801 && m.height <= 301)
        #expect(m.width > 780 || m.height > 290)
    }

    @Test func smoothStrokePassesThroughEveryPointWithRoundCaps() throws {
        let c = try Canvas(size: Size(width: 200, height: 200))
        c.clear(.white)
        let pts = [Point(x: 20, y: 100), Point(x: 60, y: 40), Point(x: 120, y: 160), Point(x: 180, y: 100)]
        c.strokePath(pts, width: 10, .red)
        for p in pts { #expect(c.color(x: Int(p.x), y: Int(p.y)) == .red) }
        // Round cap: a point 4 px before the first point along the (curve) tangent is painted.
        #expect(Pixels.distance(c.color(x: 17, y: 103), .red) < 10)
        #expect(c.color(x: 5, y: 5) == .white)
    }

    @Test func segmentDrawingMatchesTheWholeCurve() throws {
        let whole = try Canvas(size: Size(width: 200, height: 200)), parts = try Canvas(size: Size(width: 200, height: 200))
        whole.clear(.white); parts.clear(.white)
        var pts: [Point] = []
        for i in 0..<12 {
            let sign: Double = i % 2 == 0 ? -1 : 1
            let y: Double = 100 + 60 * sign * Double(i % 3) / 2
            pts.append(Point(x: 10 + Double(i) * 15, y: y))
        }
        whole.strokePath(pts, width: 8, .blue)
        for i in 0..<(pts.count - 1) { parts.strokePathSegment(pts, from: i, to: i + 1, width: 8, .blue) }
        // Joints may differ by anti-aliasing where segments overlap; the ink is the same.
        var far = 0
        for y in 0..<200 { for x in 0..<200 where Pixels.distance(whole.color(x: x, y: y), parts.color(x: x, y: y)) > 100 { far += 1 } }
        #expect(far == 0)
        // Each segment's damage bound covers its ink.
        for i in 0..<(pts.count - 1) {
            let one = try Canvas(size: Size(width: 200, height: 200))
            one.clear(.white)
            one.strokePathSegment(pts, from: i, to: i + 1, width: 8, .blue)
            let b = SmoothCurve.bounds(pts, from: i, to: i + 1, width: 8)
            let total = 40_000 - Pixels.count(.white, in: one)
            let inside = b.area - Pixels.count(.white, in: one, rect: b)
            #expect(total > 0, "segment \(i) drew nothing")
            #expect(total == inside, "segment \(i) ink outside its bounds \(b)")
        }
    }

    @Test func pngIsWritten() throws {
        let c = try Canvas(size: Size(width: 8, height: 8))
        c.clear(.green)
        let path = "/tmp/kiosk-canvas-test-\(getpid()).png"
        try c.writePNG(to: path)
        var st = stat()
        #expect(stat(path, &st) == 0)
        #expect(st.st_size > 40)
        unlink(path)
        #expect(throws: KioskError.self) { try c.writePNG(to: "/nonexistent-dir/x.png") }
    }
}

@Suite struct HeadlessDisplayTests {
    @Test(arguments: Rotation.allCases) func presentCopiesOnlyDamageAndRotates(_ r: Rotation) throws {
        let d = try HeadlessDisplay(size: Size(width: 64, height: 48), rotation: r)
        let logical = d.logicalSize!
        let frame = try Canvas(size: logical)
        frame.clear(.white)
        frame.fill(Rect(x: 0, y: 0, width: 8, height: 8), .red)   // marks the logical top-left
        try d.present(frame.pixels, damage: Damage.full(logical))
        // The panel is turned clockwise by r: the logical top-left is the panel's top-left (0°),
        // top-right (90°), bottom-right (180°) or bottom-left (270°), on the 64 × 48 panel.
        let corner: [Rotation: Rect] = [.r0: Rect(x: 0, y: 0, width: 8, height: 8), .r90: Rect(x: 56, y: 0, width: 8, height: 8),
                                        .r180: Rect(x: 56, y: 40, width: 8, height: 8), .r270: Rect(x: 0, y: 40, width: 8, height: 8)]
        #expect(Pixels.count(.red, in: d.framebuffer, rect: corner[r]!) == 64)
        #expect(Pixels.count(.red, in: d.framebuffer) == 64)
        // A partial present copies only its damage: logical (10, 10) 4 × 4 turned the same way.
        frame.clear(.blue)
        try d.present(frame.pixels, damage: Damage([Rect(x: 10, y: 10, width: 4, height: 4)]))
        let block: [Rotation: Rect] = [.r0: Rect(x: 10, y: 10, width: 4, height: 4), .r90: Rect(x: 50, y: 10, width: 4, height: 4),
                                       .r180: Rect(x: 50, y: 34, width: 4, height: 4), .r270: Rect(x: 10, y: 34, width: 4, height: 4)]
        #expect(Pixels.count(.blue, in: d.framebuffer, rect: block[r]!) == 16)
        #expect(Pixels.count(.blue, in: d.framebuffer) == 16)
        #expect(d.presentCount == 2)
    }

    /// A new display shows black before its first present, without being cleared: its frame is
    /// fresh memory. 1920x1080 spans whole 2 MiB stretches (huge pages where the kernel gives
    /// them) and a tail in small pages.
    @Test(arguments: [Size(width: 64, height: 48), Size(width: 1920, height: 1080)])
    func startsBlack(_ size: Size) throws {
        let d = try HeadlessDisplay(size: size)
        #expect(Pixels.count(.black, in: d.framebuffer) == size.width * size.height)
        #expect(d.color(x: size.width - 1, y: size.height - 1) == .black)
    }

    @Test func wrongFrameSizeIsAnError() throws {
        let d = try HeadlessDisplay(size: Size(width: 64, height: 48), rotation: .r90)
        let frame = try Canvas(size: Size(width: 64, height: 48))
        #expect(throws: KioskError.self) { try d.present(frame.pixels, damage: Damage.full(frame.size)) }
    }
}
