import KioskCore
import KioskRender

/// Draws the strokes a finger is still drawing straight into a canvas's pixels, without cairo's
/// stroker: the stroke is the round brush (an antialiased disc of the stroke's width) laid along
/// the same smooth curve as the finished stroke, at most 2 px apart. The brush's coverage is
/// collected (maximum, so the overlapping discs do not darken each other's edges) in a small
/// coverage buffer, and the ink is blended through it once. The union of the discs is a stroke
/// with round caps and joins; its edges differ from cairo's rasterisation by a few levels of
/// anti-aliasing, its body is exactly the ink.
///
/// The discs are rendered once per width, at `phases`² sub-pixel positions of the centre (each
/// edge pixel's coverage is the disc's area in it, exact along y and sampled at 16 columns),
/// all when the width is first used (a few milliseconds for the widest brushes).
final class PaintBrush {
    /// Sub-pixel positions of a disc's centre per pixel and axis (a power of two).
    static let phases = 16
    static let phaseShift = 4
    /// Columns sampled per edge pixel when a disc is rendered.
    static let grid = 16

    /// The discs of one width: `phases`² images of `side` rows of `rowBytes` coverage bytes
    /// (`side` used, the rest zero so rows can be merged 16 bytes at a time).
    private final class Discs {
        let radius: Double
        /// How far a disc's image starts before the pixel holding its centre.
        let reach: Int
        let side: Int
        let rowBytes: Int
        let imageBytes: Int
        let data: [UInt8]

        init(width: Double) {
            let r = max(width, 0.5) / 2
            radius = r
            reach = Int((r + 1).rounded(.up))
            side = 2 * reach + 2
            rowBytes = (side + 15) / 16 * 16
            imageBytes = rowBytes * side
            let P = PaintBrush.phases, g = PaintBrush.grid, r2 = r * r
            var data = [UInt8](repeating: 0, count: imageBytes * P * P)
            for qy in 0..<P {
                for qx in 0..<P {
                    // The centre is qx/P, qy/P px right of and below pixel (reach, reach)'s corner.
                    let cx = Double(reach) + Double(qx) / Double(P), cy = Double(reach) + Double(qy) / Double(P)
                    let base = (qy * P + qx) * imageBytes
                    for y in 0..<side {
                        for x in 0..<side {
                            let dx = Double(x) + 0.5 - cx, dy = Double(y) + 0.5 - cy
                            let d = (dx * dx + dy * dy).squareRoot()
                            if d <= r - 0.75 { data[base + y * rowBytes + x] = 255; continue }
                            if d >= r + 0.75 { continue }
                            // Near the edge: the disc's area in the pixel, exact along y, at
                            // `grid` columns along x.
                            var area = 0.0
                            for sx in 0..<g {
                                let px = Double(x) + (Double(sx) + 0.5) / Double(g) - cx
                                let h2 = r2 - px * px
                                if h2 <= 0 { continue }
                                let h = h2.squareRoot()
                                let lo = max(Double(y) - cy, -h), hi = min(Double(y) + 1 - cy, h)
                                if hi > lo { area += hi - lo }
                            }
                            data[base + y * rowBytes + x] = UInt8(min(max(area / Double(g) * 255 + 0.5, 0), 255))
                        }
                    }
                }
            }
            self.data = data
        }
    }

    private var discs: [Double: Discs] = [:]
    /// How many discs were laid, and how many pixels blended, since the brush was made (to show
    /// the drawing cost).
    private(set) var discsLaid = 0
    private(set) var pixelsBlended = 0
    /// Coverage of the clip rectangle being drawn, row by row, with slack after the last row.
    private var coverage: [UInt8] = []

    private func discs(width: Double) -> Discs {
        if let d = discs[width] { return d }
        if discs.count >= 8 { discs.removeAll() }
        let d = Discs(width: width)
        discs[width] = d
        return d
    }

    /// Draws the segments of the smooth curve through `points` listed in `segments` (segment i
    /// runs from point i to i+1), or for a single point a dot, with `width` and `color` into
    /// `pixels` (XRGB8888), only inside `clip`.
    func draw(_ points: [Point], segments: [Int], width: Double, color: Color, clip: Rect, into pixels: PixelBuffer) {
        let clip = clip.intersection(Rect(size: pixels.size))
        guard !clip.isEmpty, !points.isEmpty, width > 0, width.isFinite else { return }
        let d = discs(width: width)
        let cw = clip.width, n = cw * clip.height
        // Room for a 16-byte merge that starts in the last row and runs past it.
        if coverage.count < n + d.rowBytes { coverage = [UInt8](repeating: 0, count: n + d.rowBytes) }
        var coverageBuffer = coverage
        coverage = []
        defer { coverage = coverageBuffer }
        coverageBuffer.withUnsafeMutableBufferPointer { $0.baseAddress!.update(repeating: 0, count: n) }
        // Where coverage was laid (relative to clip), to blend only there.
        var minX = Int.max, minY = Int.max, maxX = Int.min, maxY = Int.min
        // Disc centres farther than this outside the clip touch nothing in it.
        let margin = d.radius + 2
        let left = Double(clip.x) - margin, right = Double(clip.maxX) + margin
        let top = Double(clip.y) - margin, bottom = Double(clip.maxY) + margin
        let P = Double(PaintBrush.phases)
        d.data.withUnsafeBufferPointer { images in
            coverageBuffer.withUnsafeMutableBufferPointer { cov in
                let covBase = cov.baseAddress!, imgBase = images.baseAddress!
                let side = d.side, rowBytes = d.rowBytes, reach = d.reach
                var last = -1
                var laid = 0
                defer { discsLaid += laid }
                @inline(__always) func stamp(_ x: Double, _ y: Double) {
                    guard x > left, x < right, y > top, y < bottom else { return }
                    // The centre rounded to the nearest sub-pixel position (the offset makes
                    // the conversion round down also a little left of or above the screen).
                    let sx = Int(x * P + 0.5 + 65536) - 65536, sy = Int(y * P + 0.5 + 65536) - 65536
                    let key = sy &* 1_048_576 &+ sx
                    if key == last { return }
                    last = key
                    let ix = sx >> PaintBrush.phaseShift, iy = sy >> PaintBrush.phaseShift
                    let qx = sx & (PaintBrush.phases - 1), qy = sy & (PaintBrush.phases - 1)
                    let ox = ix - reach - clip.x, oy = iy - reach - clip.y   // image origin in coverage coordinates
                    let x0 = max(ox, 0), x1 = min(ox + side, cw)
                    let y0 = max(oy, 0), y1 = min(oy + side, clip.height)
                    guard x0 < x1, y0 < y1 else { return }
                    minX = min(minX, x0); maxX = max(maxX, x1); minY = min(minY, y0); maxY = max(maxY, y1)
                    laid += 1
                    let img = imgBase + (qy * PaintBrush.phases + qx) * d.imageBytes
                    // Unclipped on the right, the image's zero padding may run past x1 (into the
                    // next row or the slack): merging zeros changes nothing.
                    let end = x1 == ox + side ? min(ox + rowBytes, cw + rowBytes) : x1
                    for y in y0..<y1 {
                        let srow = img + (y - oy) * rowBytes - ox
                        let drow = covBase + y * cw
                        for x in x0..<end {
                            let a = srow[x], b = drow[x]
                            drow[x] = a > b ? a : b
                        }
                    }
                }
                if points.count == 1 {
                    stamp(points[0].x, points[0].y)
                    return
                }
                // Discs at most `step` px apart: between two of them the union's edge dips by
                // r − √(r² − step²/4), at most 0.05 px (at the 20 px brush).
                let step = min(2, max(0.25, d.radius / 5))
                for i in segments where i >= 0 && i < points.count - 1 {
                    let s = SmoothCurve.segment(points, i)
                    let p0 = points[i]
                    let len = p0.distance(to: s.c1) + s.c1.distance(to: s.c2) + s.c2.distance(to: s.end)
                    guard len.isFinite else { continue }
                    let count = max(1, min(Int(len / step) + 1, 100_000))
                    let dt = 1 / Double(count)
                    for k in 0...count {
                        let t = Double(k) * dt, u = 1 - t
                        let a = u * u * u, b = 3 * u * u * t, c = 3 * u * t * t, e = t * t * t
                        stamp(a * p0.x + b * s.c1.x + c * s.c2.x + e * s.end.x, a * p0.y + b * s.c1.y + c * s.c2.y + e * s.end.y)
                    }
                }
            }
        }
        guard minX < maxX else { return }
        pixelsBlended += (maxX - minX) * (maxY - minY)
        coverageBuffer.withUnsafeBufferPointer { cov in
            blend(color, coverage: cov.baseAddress!, clip: clip, minX: minX, maxX: maxX, minY: minY, maxY: maxY, into: pixels)
        }
    }

    /// Lays `color` over the pixels through the coverage collected for `clip`.
    private func blend(_ color: Color, coverage: UnsafePointer<UInt8>, clip: Rect, minX: Int, maxX: Int, minY: Int, maxY: Int,
                       into pixels: PixelBuffer) {
        // The 8-bit channels cairo stores for this colour (16-bit, then the high byte).
        func channel(_ v: Double) -> UInt32 { UInt32(UInt16(min(max(v, 0), 1) * 65535 + 0.5) >> 8) }
        let ir = channel(color.red), ig = channel(color.green), ib = channel(color.blue)
        let alpha = channel(color.alpha)
        let ink: UInt32 = 0xFF00_0000 | ir << 16 | ig << 8 | ib
        let cw = clip.width
        @inline(__always) func mix(_ s: UInt32, _ d: UInt32, _ a: UInt32) -> UInt32 {
            let t = s * a + d * (255 - a) + 128
            return (t + (t >> 8)) >> 8
        }
        for y in minY..<maxY {
            let crow = coverage + y * cw
            let prow = (pixels.base + (clip.y + y) * pixels.stride + clip.x * 4).assumingMemoryBound(to: UInt32.self)
            var x = minX
            while x < maxX {
                let n = min(16, maxX - x)
                if n == 16 {
                    let c0 = UnsafeRawPointer(crow + x).loadUnaligned(as: UInt64.self)
                    let c1 = UnsafeRawPointer(crow + x + 8).loadUnaligned(as: UInt64.self)
                    if c0 | c1 == 0 { x += 16; continue }
                    if alpha == 255, c0 & c1 == .max {
                        for j in x..<(x + 16) { prow[j] = ink }
                        x += 16
                        continue
                    }
                }
                for j in x..<(x + n) {
                    var a = UInt32(crow[j])
                    if a == 0 { continue }
                    if alpha != 255 { a = (a * alpha + 127) / 255 }
                    if a == 255 {
                        prow[j] = ink
                    } else {
                        let p = prow[j]
                        prow[j] = 0xFF00_0000 | mix(ir, (p >> 16) & 0xFF, a) << 16 | mix(ig, (p >> 8) & 0xFF, a) << 8 | mix(ib, p & 0xFF, a)
                    }
                }
                x += n
            }
        }
    }
}
