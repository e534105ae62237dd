import KioskCore
import KioskRender

/// The pictures of one digit window size, rendered once per size, colours and font size, from
/// which a roll frame is copied row by row: the ten digits on the window colour (only the rows
/// where the digit has ink are kept; the others are the plain window colour), and the window at
/// rest without a digit (the background and the rounded window), whose corner pixels go back
/// over each frame.
final class DigitTiles {
    struct Key: Equatable {
        var size: Size, window: Color, background: Color, digit: Color, px: Double
    }
    let key: Key
    private let width: Int
    /// Per digit: the first window row with ink, and the rows from there (width pixels each).
    private var glyphTop: [Int] = []
    private var glyphRows: [[UInt32]] = []
    /// One row of the plain window colour.
    private let plain: [UInt32]
    /// The window at rest without a digit, and per row how many pixels at the left and right
    /// are not the plain window colour (the rounded corners).
    private let rest: [UInt32]
    private var corners: [(left: Int, right: Int)] = []
    /// Per window row: the shade laid over it (premultiplied ARGB pixels, nil: none), and the
    /// plain window colour under that shade when the shade's row is one colour.
    private var shadeRows: [[UInt32]?] = []
    private var shadedPlain: [UInt32?] = []
    /// Whether `draw` lays the shades itself.
    let shaded: Bool

    /// `drawDigit(d, canvas)` draws digit d on a window-sized canvas at rest (offset 0).
    /// `shades` are the images laid at the top and bottom edge of the window (taken only when
    /// they do not overlap).
    init(key: Key, radius: Double, shades: (top: Canvas, bottom: Canvas)?, drawDigit: (Int, Canvas) -> Void) throws {
        self.key = key
        let w = key.size.width, h = key.size.height
        width = w
        let canvas = try Canvas(size: key.size)
        canvas.clear(key.background)
        canvas.fillRoundedRect(x: 0, y: 0, width: Double(w), height: Double(h), radius: radius, key.window)
        rest = Self.pixels(of: canvas)
        canvas.clear(key.window)
        let windowPixel = Self.pixels(of: canvas)[0]
        plain = Array(repeating: windowPixel, count: w)
        for y in 0..<h {
            var l = 0, r = 0
            while l < w, rest[y * w + l] & 0xFF_FFFF != windowPixel & 0xFF_FFFF { l += 1 }
            while r < w - l, rest[y * w + w - 1 - r] & 0xFF_FFFF != windowPixel & 0xFF_FFFF { r += 1 }
            corners.append((l, r))
        }
        shadeRows = Array(repeating: nil, count: h)
        shadedPlain = Array(repeating: nil, count: h)
        if let shades, shades.top.size.width == w, shades.bottom.size.width == w,
           shades.top.size.height + shades.bottom.size.height <= h {
            let top = Self.pixels(of: shades.top), bottom = Self.pixels(of: shades.bottom)
            for y in 0..<shades.top.size.height { shadeRows[y] = Array(top[(y * w)..<(y * w + w)]) }
            let b0 = h - shades.bottom.size.height
            for y in 0..<shades.bottom.size.height { shadeRows[b0 + y] = Array(bottom[(y * w)..<(y * w + w)]) }
            for y in 0..<h {
                if let row = shadeRows[y], row.allSatisfy({ $0 == row[0] }) { shadedPlain[y] = Self.over(row[0], windowPixel) }
            }
            shaded = true
        } else {
            shaded = false
        }
        for d in 0...9 {
            canvas.clear(key.window)
            drawDigit(d, canvas)
            let px = Self.pixels(of: canvas)
            var top = h, bottom = 0
            for y in 0..<h where px[(y * w)..<(y * w + w)].contains(where: { $0 & 0xFF_FFFF != windowPixel & 0xFF_FFFF }) {
                top = min(top, y); bottom = y + 1
            }
            glyphTop.append(top < bottom ? top : 0)
            glyphRows.append(top < bottom ? Array(px[(top * w)..<(bottom * w)]) : [])
        }
    }

    /// A premultiplied ARGB pixel laid over an opaque one (OVER), rounded as pixman does.
    @inline(__always) static func over(_ s: UInt32, _ d: UInt32) -> UInt32 {
        let ia = 255 &- (s >> 24)
        var rb = (d & 0xFF00FF) &* ia &+ 0x80_0080
        rb = ((rb &+ ((rb >> 8) & 0xFF00FF)) >> 8) & 0xFF00FF
        var ag = ((d >> 8) & 0xFF00FF) &* ia &+ 0x80_0080
        ag = (ag &+ ((ag >> 8) & 0xFF00FF)) & 0xFF00_FF00
        return (rb | ag) &+ s
    }

    private static func pixels(of canvas: Canvas) -> [UInt32] {
        let p = canvas.pixels, w = canvas.size.width
        var out = [UInt32](repeating: 0, count: w * canvas.size.height)
        out.withUnsafeMutableBytes { dst in
            for y in 0..<canvas.size.height {
                (dst.baseAddress! + y * w * 4).copyMemory(from: p.base + y * p.stride, byteCount: w * 4)
            }
        }
        return out
    }

    /// Writes the window at `origin` of `pixels`: each row `y` shows row `source(y)` of a digit's
    /// picture (nil: the plain window colour), then the corners of the window at rest.
    func draw(at origin: Point, into pixels: PixelBuffer, clip: Rect, source: (Int) -> (digit: Int, row: Int)?) {
        let w = width, h = key.size.height
        let x0 = Int(origin.x), y0 = Int(origin.y)
        let box = Rect(x: x0, y: y0, width: w, height: h).intersection(clip).intersection(Rect(size: pixels.size))
        guard !box.isEmpty else { return }
        let cx = box.x - x0, cw = box.width
        plain.withUnsafeBytes { plainRow in
            rest.withUnsafeBytes { restPx in
                for y in (box.y - y0)..<(box.maxY - y0) {
                    let dst = pixels.base + (y0 + y) * pixels.stride + box.x * 4
                    var copied = false
                    if let s = source(y), s.digit >= 0, s.digit < 10 {
                        let t = s.row - glyphTop[s.digit]
                        let rows = glyphRows[s.digit]
                        if t >= 0, (t + 1) * w <= rows.count {
                            rows.withUnsafeBytes { dst.copyMemory(from: $0.baseAddress! + (t * w + cx) * 4, byteCount: cw * 4) }
                            copied = true
                        }
                    }
                    if !copied { dst.copyMemory(from: plainRow.baseAddress! + cx * 4, byteCount: cw * 4) }
                    // The rounded corners of the window at rest, where they fall inside the box.
                    let c = corners[y]
                    if c.left > cx {
                        let n = min(c.left, cx + cw) - cx
                        dst.copyMemory(from: restPx.baseAddress! + (y * w + cx) * 4, byteCount: n * 4)
                    }
                    if c.right > 0 {
                        let a = max(w - c.right, cx), b = cx + cw
                        if a < b { (dst + (a - cx) * 4).copyMemory(from: restPx.baseAddress! + (y * w + a) * 4, byteCount: (b - a) * 4) }
                    }
                    // Then the shade over the whole row.
                    if let shade = shaded ? shadeRows[y] : nil {
                        let row = dst.assumingMemoryBound(to: UInt32.self)
                        if shadedPlain[y] != nil {
                            // One shade colour along the row (a vertical gradient).
                            let sp = shade[0]
                            for x in 0..<cw { row[x] = Self.over(sp, row[x]) }
                        } else {
                            shade.withUnsafeBufferPointer { sp in
                                for x in 0..<cw { row[x] = Self.over(sp[cx + x], row[x]) }
                            }
                        }
                    }
                }
            }
        }
    }
}
