import Testing
import KioskCore
import KioskTesting
@testable import KioskRender

@Suite struct TextStampsTests {
    let style = Theme.default.fonts.heading

    /// Pixels of `a` and `b` whose colours differ by more than `tolerance` in some channel.
    func farApart(_ a: Canvas, _ b: Canvas, tolerance: Int) -> Int {
        var n = 0
        for y in 0..<a.size.height { for x in 0..<a.size.width where Pixels.distance(a.color(x: x, y: y), b.color(x: x, y: y)) > tolerance { n += 1 } }
        return n
    }

    @Test func aStampLooksLikeTheTextDrawnDirectly() throws {
        let direct = try Canvas(size: Size(width: 300, height: 100)), stamped = try Canvas(size: Size(width: 300, height: 100))
        let bg = Color(hex: "#8A9544")!, fg = Color(hex: "#101820")!
        direct.clear(bg); stamped.clear(bg)
        let r1 = direct.drawText("20:08", style, px: 60, color: fg, x: 10, y: 12)
        let stamps = TextStamps()
        let r2 = stamps.draw("20:08", style, px: 60, color: fg, x: 10, y: 12, on: stamped)
        #expect(Pixels.count(fg, in: stamped, tolerance: 30) > 300)
        // The same shapes at the same place: only antialiasing rounding may differ a little.
        #expect(farApart(direct, stamped, tolerance: 24) == 0)
        #expect(r2.intersection(r1) == r2)
    }

    @Test func newStringsFromKnownCharactersNeedNoLayout() throws {
        let c = try Canvas(size: Size(width: 400, height: 100))
        c.clear(.white)
        let stamps = TextStamps()
        stamps.drawRun("12:34:56", style, px: 50, color: .black, x: 5, y: 5, on: c)
        #expect(stamps.rendered == 7)   // 1 2 : 3 4 5 6
        stamps.drawRun("12:34:57", style, px: 50, color: .black, x: 5, y: 5, on: c)
        #expect(stamps.rendered == 8)   // 7
        stamps.drawRun("21:43:65", style, px: 50, color: .black, x: 5, y: 5, on: c)
        #expect(stamps.rendered == 8)
        // Another colour is the same stamp; another size is another.
        stamps.drawRun("1", style, px: 50, color: .white, x: 5, y: 5, on: c)
        #expect(stamps.rendered == 8)
        stamps.drawRun("1", style, px: 51, color: .black, x: 5, y: 5, on: c)
        #expect(stamps.rendered == 9)
    }

    @Test func aRunIsAsWideAsItsCharactersAndDrawsWhereItSays() throws {
        let c = try Canvas(size: Size(width: 400, height: 100))
        c.clear(.white)
        let stamps = TextStamps()
        let m = stamps.measureRun("08:08", style, px: 50)
        let single = (0..<5).map { i in c.measure(String(Array("08:08")[i]), style, px: 50).width }.reduce(0, +)
        #expect(abs(m.width - single) < 0.001)
        let r = stamps.drawRun("08:08", style, px: 50, color: .black, in: (x: 0, y: 0, width: 400, height: 100), on: c)
        let inside = Pixels.count(.black, in: c, rect: r, tolerance: 60)
        #expect(inside > 200)
        #expect(inside == Pixels.count(.black, in: c, tolerance: 60))
        // Centred: as much room on the left as on the right, within a pixel and the margin.
        #expect(abs(r.x - (400 - r.maxX)) <= 3)
    }

    @Test func theCacheStaysWithinItsLimit() throws {
        let stamps = TextStamps(limit: 4)
        for i in 0..<20 { _ = stamps.stamp(String(i), style, px: 20) }
        #expect(stamps.rendered == 20)
        #expect(stamps.count <= 4)
        // A size that draws nothing gives no stamp.
        #expect(stamps.stamp("1", style, px: 0) == nil)
    }
}
