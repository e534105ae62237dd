import Testing
import KioskCore
import KioskTesting
@testable import KioskRender

/// Text drawing must be safe for any string and any size: nothing traps, and boxed text never
/// leaves its box.
@Suite struct TextSafetyTests {
    static let hostile: [(String, String)] = [
        ("200 000 digits", String(repeating: "8", count: 200_000)),
        ("200 000 wide letters", String(repeating: "W", count: 200_000)),
        ("newline storm", String(repeating: "8\n", count: 20_000)),
        ("combining-mark storm", "a" + String(repeating: "\u{0301}\u{0308}\u{0323}", count: 5_000)),
        ("right-to-left", String(repeating: "שלום مرحبا ", count: 5_000)),
        ("emoji sequences", String(repeating: "👩🏽‍🚀🇫🇷", count: 5_000)),
        ("zero-width", String(repeating: "\u{200B}\u{200D}\u{FEFF}", count: 20_000)),
        ("NUL bytes", "ab\u{0}cd\u{0}" + String(repeating: "\u{0}", count: 1000)),
        ("empty", ""),
    ]
    static let sizes: [Double] = [0, -5, 1e-12, 0.1, 12, 500, 40_000, 1e9, 1e300, .greatestFiniteMagnitude,
                                  .nan, .infinity, -.infinity]

    /// Non-white pixels outside `r`.
    func inkOutside(_ c: Canvas, _ r: Rect) -> Int {
        var n = 0
        for y in 0..<c.size.height {
            for x in 0..<c.size.width where !(x >= r.x && x < r.maxX && y >= r.y && y < r.maxY) {
                if c.color(x: x, y: y) != .white { n += 1 }
            }
        }
        return n
    }

    @Test func anyStringAtAnySizeStaysInsideItsBox() throws {
        let c = try Canvas(size: Size(width: 200, height: 90))
        let box = (x: 30.0, y: 20.0, width: 120.0, height: 40.0)
        let boxRect = Rect(x: 30, y: 20, width: 120, height: 40)
        var inked: Set<String> = []
        for (what, text) in Self.hostile {
            for px in Self.sizes {
                for alignment in [TextAlignment.leading, .center, .trailing] {
                    c.clear(.white)
                    let r = c.drawText(text, Theme.default.fonts.body, px: px, color: .black, in: box, alignment: alignment)
                    #expect(inkOutside(c, boxRect) == 0, "\(what) at \(px) px, \(alignment): ink outside the box")
                    #expect(r.isEmpty || boxRect.intersection(r) == r, "\(what) at \(px) px: returned \(r)")
                    if Pixels.count(.white, in: c) < c.size.area { inked.insert(what) }
                }
            }
        }
        // Not a pass by drawing nothing: the visible texts did put ink in the box.
        #expect(inked.isSuperset(of: ["200 000 digits", "200 000 wide letters", "newline storm", "right-to-left", "emoji sequences"]), "\(inked)")
    }

    @Test func anyStringAtAnySizeDrawsAtAPointWithinItsReturnedRect() throws {
        let c = try Canvas(size: Size(width: 200, height: 90))
        var inked: Set<String> = []
        for (what, text) in Self.hostile {
            for px in Self.sizes {
                c.clear(.white)
                let r = c.drawText(text, Theme.default.fonts.heading, px: px, color: .black, x: 10, y: 10)
                #expect(inkOutside(c, r) == 0, "\(what) at \(px) px: ink outside \(r)")
                if Pixels.count(.white, in: c) < c.size.area { inked.insert(what) }
                let m = c.measure(text, Theme.default.fonts.heading, px: px)
                #expect(m.width >= 0 && m.width.isFinite && m.height >= 0 && m.height.isFinite, "\(what) at \(px) px: \(m)")
                let f = c.fittingSize(text, Theme.default.fonts.body, maxPx: px, width: 120, height: 40)
                #expect(f.isFinite && f >= 1 && f <= Canvas.maxTextPx, "\(what) maxPx \(px): fitting size \(f)")
            }
        }
        #expect(inked.isSuperset(of: ["200 000 digits", "200 000 wide letters", "newline storm", "right-to-left", "emoji sequences"]), "\(inked)")
    }

    @Test func nonFinitePositionsDrawNothing() throws {
        let c = try Canvas(size: Size(width: 60, height: 40))
        c.clear(.white)
        for v in [Double.nan, .infinity, -.infinity] {
            #expect(c.drawText("88", Theme.default.fonts.body, px: 20, color: .black, x: v, y: 5).isEmpty)
            #expect(c.drawText("88", Theme.default.fonts.body, px: 20, color: .black, in: (x: 5, y: v, width: 40, height: 30)).isEmpty)
            #expect(c.drawText("88", Theme.default.fonts.body, px: 20, color: .black, in: (x: 5, y: 5, width: v, height: 30)).isEmpty)
        }
        #expect(Pixels.count(.white, in: c) == 60 * 40)
    }

    @Test func longTextIsCutWithAnEllipsisAndShortTextIsKept() {
        let long = String(repeating: "x", count: 200_000)
        let cut = Canvas.layoutText(long)
        #expect(cut.unicodeScalars.count == Canvas.maxTextScalars)
        #expect(cut.hasSuffix("…"))
        #expect(Canvas.layoutText("13:35") == "13:35")
        #expect(Canvas.layoutText("a\u{0}b") == "a\u{FFFD}b")
    }

    @Test func ordinaryTextStillDrawsWhereItDid() throws {
        // A label that fits is neither cut nor moved by the box: the same pixels as before.
        let a = try Canvas(size: Size(width: 200, height: 60)), b = try Canvas(size: Size(width: 200, height: 60))
        a.clear(.white); b.clear(.white)
        let m = a.measure("HOME 12", Theme.default.fonts.body, px: 24)
        a.drawText("HOME 12", Theme.default.fonts.body, px: 24, color: .black, in: (x: 10, y: 10, width: 180, height: 40))
        b.drawText("HOME 12", Theme.default.fonts.body, px: 24, color: .black, x: 10 + (180 - m.width) / 2, y: 10 + (40 - m.height) / 2)
        #expect(Pixels.differingPixels(a, b) == 0)
        #expect(Pixels.count(.black, in: a, tolerance: 60) > 50)
    }
}
