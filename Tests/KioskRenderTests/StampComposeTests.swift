import Foundation
import Testing
import KioskCore
@testable import KioskRender

/// `Canvas.compose` against cairo (a fill, then each stamp's colour masked through it): the
/// same 32-bit pixels, everywhere on the canvas, whatever the sizes, strides, clips and overlaps.
@Suite struct StampComposeTests {
    /// A small deterministic generator (the tests must repeat).
    struct Rand {
        var s: UInt64
        mutating func next() -> UInt64 { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s }
        mutating func int(_ r: ClosedRange<Int>) -> Int { r.lowerBound + Int(next() % UInt64(r.count)) }
        mutating func unit() -> Double { Double(next() % 1_000_001) / 1_000_000 }
        mutating func color() -> Color { Color(red: unit(), green: unit(), blue: unit()) }
    }

    /// Coverage like text's: runs of 0 and of 255 (long enough for the 8-byte steps) with
    /// edges of every value between.
    static func coverage(_ w: Int, _ h: Int, _ rng: inout Rand) -> [UInt8] {
        var c = [UInt8](repeating: 0, count: w * h)
        var i = 0
        while i < c.count {
            let run = rng.int(1...20)
            let kind = rng.int(0...2)
            for k in i..<min(c.count, i + run) { c[k] = kind == 0 ? 0 : kind == 1 ? 255 : UInt8(rng.int(1...254)) }
            i += run
        }
        return c
    }

    /// Every 32-bit pixel of the two buffers that differs, as "x,y: got want".
    static func differences(_ a: PixelBuffer, _ b: PixelBuffer, limit: Int = 5) -> [String] {
        var out: [String] = []
        for y in 0..<a.size.height {
            for x in 0..<a.size.width where a.pixel(x: x, y: y) != b.pixel(x: x, y: y) {
                if out.count < limit {
                    out.append("\(x),\(y): \(String(a.pixel(x: x, y: y), radix: 16)) want \(String(b.pixel(x: x, y: y), radix: 16))")
                }
            }
        }
        return out
    }

    /// What compose must equal: cairo's `clear` limited to `rect` and each stamp masked in its
    /// clip, in order. (Cairo paints opaque black as zero bytes, not 0xFF000000 as a rectangle
    /// fill does: compose keeps the clear's bytes.)
    static func reference(_ canvas: Canvas, _ rect: Rect, _ background: Color, _ placements: [StampPlacement]) {
        canvas.withClip(rect) {
            canvas.clear(background)
            for p in placements {
                canvas.withClip(p.clip ?? Rect(size: canvas.size)) { _ = canvas.draw(p.stamp, x: p.x, y: p.y, color: p.color) }
            }
        }
        canvas.flush()
    }

    /// A canvas whose pixels start as a pattern (so untouched pixels are checked too).
    static func patterned(_ size: Size) throws -> Canvas {
        let c = try Canvas(size: size)
        let p = c.pixels
        for y in 0..<size.height { for x in 0..<size.width {
            p.base.storeBytes(of: UInt32(truncatingIfNeeded: x &* 2_654_435_761 ^ y &* 40_503), toByteOffset: y * p.stride + x * 4, as: UInt32.self)
        } }
        c.markDirty(Rect(size: size))
        return c
    }

    @Test func everyCoverageValueOverAnyBackgroundIsCairosBlend() throws {
        var rng = Rand(s: 0x9E37_79B9_7F4A_7C15)
        let ramp = TextStamps.Stamp(coverage: (0..<256).map { UInt8($0) }, width: 64, height: 4)
        var pairs: [(Color, Color)] = [(.black, .white), (.white, .black), (.black, Color(hex: "#F4FBFB")!),
                                       (Color(hex: "#8A9544")!, Color(hex: "#101820")!)]
        for _ in 0..<40 { pairs.append((rng.color(), rng.color())) }
        for (bg, fg) in pairs {
            let size = Size(width: 70, height: 6)
            let got = try Self.patterned(size), want = try Self.patterned(size)
            let stamps = [StampPlacement(ramp, x: 3, y: 1, color: fg)]
            got.compose(Rect(size: size), background: bg, stamps: stamps)
            Self.reference(want, Rect(size: size), bg, stamps)
            #expect(Self.differences(got.pixels, want.pixels) == [], "bg \(bg) fg \(fg)")
        }
    }

    @Test func overlappingClippedAndPartlyOutsideStampsMatchCairo() throws {
        var rng = Rand(s: 12345)
        // Odd sizes; rectangles smaller than the canvas (rows written in parts), stamps
        // overlapping each other, crossing every edge, and clipped.
        for round in 0..<120 {
            let size = Size(width: rng.int(1...97), height: rng.int(1...61))
            let got = try Self.patterned(size), want = try Self.patterned(size)
            let rect = round % 3 == 0 ? Rect(size: size)
                : Rect(x: rng.int(-5...size.width / 2), y: rng.int(-5...size.height / 2),
                       width: rng.int(0...size.width + 5), height: rng.int(0...size.height + 5))
            var placements: [StampPlacement] = []
            for _ in 0..<rng.int(0...5) {
                let w = rng.int(1...40), h = rng.int(1...30)
                let stamp = TextStamps.Stamp(coverage: Self.coverage(w, h, &rng), width: w, height: h,
                                             originX: rng.int(-3...3), originY: rng.int(-3...3))
                let clip: Rect? = rng.int(0...1) == 0 ? nil
                    : Rect(x: rng.int(-5...size.width), y: rng.int(-5...size.height), width: rng.int(0...60), height: rng.int(0...40))
                placements.append(StampPlacement(stamp, x: rng.int(-20...size.width), y: rng.int(-15...size.height),
                                                 color: rng.int(0...3) == 0 ? .black : rng.color(), clip: clip))
            }
            let bg = rng.color()
            got.compose(rect, background: bg, stamps: placements)
            Self.reference(want, rect, bg, placements)
            #expect(Self.differences(got.pixels, want.pixels) == [], "round \(round): \(size) rect \(rect)")
        }
    }

    @Test func aBufferWithPaddedRowsIsWrittenOnlyWithinItsWidth() throws {
        var rng = Rand(s: 777)
        let size = Size(width: 53, height: 29), stride = 53 * 4 + 44
        let bytes = stride * size.height
        let a = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64), b = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer { a.deallocate(); b.deallocate() }
        for i in 0..<bytes { a.storeBytes(of: UInt8(truncatingIfNeeded: i &* 31), toByteOffset: i, as: UInt8.self) }
        b.copyMemory(from: a, byteCount: bytes)
        let got = try Canvas(wrapping: PixelBuffer(base: a, size: size, stride: stride))
        let want = try Canvas(wrapping: PixelBuffer(base: b, size: size, stride: stride))
        let stamp = TextStamps.Stamp(coverage: Self.coverage(30, 20, &rng), width: 30, height: 20)
        let placements = [StampPlacement(stamp, x: 10, y: 4, color: .white), StampPlacement(stamp, x: 30, y: 12, color: rng.color())]
        let bg = Color(hex: "#8A9544")!
        // The whole frame (every row through the padding), then rows partly covered.
        got.compose(Rect(size: size), background: bg, stamps: placements)
        Self.reference(want, Rect(size: size), bg, placements)
        got.compose(Rect(x: 7, y: 3, width: 40, height: 20), background: .black, stamps: placements)
        Self.reference(want, Rect(x: 7, y: 3, width: 40, height: 20), .black, placements)
        got.flush()
        // The padding after each row keeps its bytes, and so does every pixel outside the rectangles.
        #expect(memcmp(a, b, bytes) == 0)
        #expect(Self.differences(got.pixels, want.pixels) == [])
    }

    @Test func insideAClipOrWithATranslucentColourItDrawsAsCairoDoes() throws {
        var rng = Rand(s: 4242)
        let size = Size(width: 40, height: 30)
        let stamp = TextStamps.Stamp(coverage: Self.coverage(25, 20, &rng), width: 25, height: 20)
        let bg = Color(hex: "#203040")!
        for translucent in [false, true] {
            let got = try Self.patterned(size), want = try Self.patterned(size)
            let fg = translucent ? Color(red: 1, green: 0.5, blue: 0.2, alpha: 0.5) : .white
            let stamps = [StampPlacement(stamp, x: 5, y: 4, color: fg)]
            let clip = Rect(x: 10, y: 8, width: 12, height: 9)
            got.withClip(clip) { got.compose(Rect(size: size), background: bg, stamps: stamps) }
            want.withClip(clip) { Self.reference(want, Rect(size: size), bg, stamps) }
            got.flush()
            #expect(Self.differences(got.pixels, want.pixels) == [], "translucent \(translucent)")
            // Outside the clip nothing was written.
            let fresh = try Self.patterned(size)
            #expect(got.pixels.pixel(x: 0, y: 0) == fresh.pixels.pixel(x: 0, y: 0))
        }
    }

    @Test func textRunsPlacedForComposeAreTheRunsDrawnWithCairo() throws {
        let stamps = TextStamps()
        let style = Theme.default.fonts.heading
        for size in [Size(width: 333, height: 211), Size(width: 480, height: 270)] {
            let got = try Self.patterned(size), want = try Self.patterned(size)
            let box = (x: 16.65, y: 46.42, width: 299.7, height: 84.4)
            let bg = Color(hex: "#8A9544")!, fg = Color(hex: "#101820")!
            let run = stamps.placeRun("20:08:59", style, px: 70, color: fg, in: box, canvasSize: size)
            got.compose(Rect(size: size), background: bg, stamps: run.placements)
            want.clear(bg)
            let drawn = stamps.drawRun("20:08:59", style, px: 70, color: fg, in: box, on: want)
            want.flush()
            #expect(run.covered == drawn)
            #expect(run.placements.count == 8)
            #expect(Self.differences(got.pixels, want.pixels) == [], "\(size)")
        }
    }
}
