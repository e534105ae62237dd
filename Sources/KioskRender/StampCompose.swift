#if canImport(Glibc)
import Glibc
#endif
import CCairo
import CKioskPixels
import KioskCore

/// A stamp (text coverage) to fill with a colour, placed for `Canvas.compose`: the top-left
/// of its text's logical rectangle at (x, y), as `TextStamps.draw(_:x:y:color:on:)` places it,
/// drawing nothing outside `clip` (when given).
public struct StampPlacement {
    public let stamp: TextStamps.Stamp
    public let x: Int, y: Int
    public let color: Color
    public let clip: Rect?

    public init(_ stamp: TextStamps.Stamp, x: Int, y: Int, color: Color, clip: Rect? = nil) {
        self.stamp = stamp; self.x = x; self.y = y; self.color = color; self.clip = clip
    }

    /// The pixels the stamp's image covers (before any clip).
    public var imageRect: Rect {
        Rect(x: x + stamp.originX, y: y + stamp.originY, width: stamp.width, height: stamp.height)
    }
}

extension Canvas {
    /// Fills `rect` with `background` and then fills each placement's colour through its stamp,
    /// in order: the same pixels as `clear(background)` limited to `rect` followed by `draw` of
    /// each stamp (cairo's OVER), bit for bit. Stamps are clipped to `rect`, to their own clip and to the
    /// canvas.
    ///
    /// Each pixel of `rect` is written once, row after row from the top, and nothing is read
    /// back from the canvas: rows without text are filled with the pixel value (`wmemset`, one
    /// call for a run of whole rows), and the part of a row that text crosses is composed in a
    /// small row buffer, then copied. That suits scan-out memory, which is slow to read, and
    /// touches a cold frame once instead of twice.
    ///
    /// Opaque colours on an unturned, unclipped XRGB canvas take this path; anything else
    /// (a translucent colour, inside `withClip` or `translated`) is drawn with cairo as before.
    public func compose(_ rect: Rect, background: Color, stamps placements: [StampPlacement]) {
        let area = rect.intersection(Rect(size: size))
        guard !area.isEmpty else { return }
        guard directWritable, background.alpha >= 1, placements.allSatisfy({ $0.color.alpha >= 1 }) else {
            withClip(area) {
                clear(background)
                for p in placements {
                    if let clip = p.clip { withClip(clip) { _ = draw(p.stamp, x: p.x, y: p.y, color: p.color) } }
                    else { _ = draw(p.stamp, x: p.x, y: p.y, color: p.color) }
                }
            }
            return
        }
        cairo_surface_flush(surface)
        let bg = pixelValue(background)
        var blends: [UInt32: PixelBlend] = [:]
        var layers: [StampLayer] = []
        var kept: [CoverageRuns] = []
        layers.reserveCapacity(placements.count)
        for p in placements {
            guard let s = p.stamp.surface, let raw = cairo_image_surface_get_data(s) else { continue }
            let data = UnsafePointer(raw)
            var r = p.imageRect.intersection(area)
            if let clip = p.clip { r = r.intersection(clip) }
            guard !r.isEmpty else { continue }
            // The colour masked through a stamp is opaque: cairo's pixman source has alpha 0xFF
            // (painting black writes zero bytes; masking black writes 0xFF000000).
            let fg = pixelValue(p.color) | 0xFF00_0000
            let blend: PixelBlend
            if let b = blends[fg] { blend = b } else { blend = PixelBlend(foreground: fg, background: bg); blends[fg] = blend }
            let image = p.imageRect
            let stride = Int(cairo_image_surface_get_stride(s))
            let runs: CoverageRuns
            if let known = p.stamp.runs { runs = known } else {
                runs = CoverageRuns(data: data, stride: stride, width: image.width, height: image.height)
                p.stamp.runs = runs
            }
            layers.append(StampLayer(data: data, stride: stride, imageX: image.x, imageY: image.y, area: r,
                                     rowStart: runs.rowStart, runs: runs.runs, foreground: fg, overBackground: blend.overBackground))
            kept.append(runs)
        }
        let frame = FrameRows(base: UnsafeMutableRawPointer(cairo_image_surface_get_data(surface)!),
                              stride: Int(cairo_image_surface_get_stride(surface)), width: size.width)
        // The layers point into the runs and blends: they live until the frame is written.
        withExtendedLifetime((kept, blends)) {
            StampComposer.compose(into: frame, area: area, background: bg, layers: layers)
        }
        markDirty(area)
    }

    /// Whether pixels can be written straight into the memory with the same result as cairo:
    /// an XRGB image with no clip and no transformation in force.
    var directWritable: Bool {
        scopedStateDepth == 0 && cairo_image_surface_get_format(surface) == CAIRO_FORMAT_RGB24
    }

    /// The 32-bit pixel cairo's `clear` writes for `color` (opaque) in this canvas's format:
    /// cairo rounds each channel its own way (and paints black as a clear, zero bytes), so it
    /// is asked once per colour, on a one-pixel image.
    func pixelValue(_ color: Color) -> UInt32 {
        if let p = probe { return p.value(color) }
        let p = PixelProbe()
        probe = p
        return p.value(color)
    }
}

/// Cairo's conversion of a colour to an XRGB pixel, read from a one-pixel image and remembered
/// for the last few colours (the clock asks for two a second).
final class PixelProbe {
    private let surface: OpaquePointer
    private let cr: OpaquePointer
    private var recent: [(color: Color, pixel: UInt32)] = []

    init() {
        surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1)!
        cr = cairo_create(surface)!
        cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE)
    }
    deinit {
        cairo_destroy(cr)
        cairo_surface_destroy(surface)
    }

    func value(_ color: Color) -> UInt32 {
        if let hit = recent.first(where: { $0.color == color }) { return hit.pixel }
        cairo_set_source_rgb(cr, color.red, color.green, color.blue)
        cairo_paint(cr)
        cairo_surface_flush(surface)
        let v = UnsafeRawPointer(cairo_image_surface_get_data(surface)!).load(as: UInt32.self)
        if recent.count >= 8 { recent.removeFirst() }
        recent.append((color, v))
        return v
    }
}

/// A frame's memory: rows of 32-bit pixels `stride` bytes apart.
struct FrameRows {
    let base: UnsafeMutableRawPointer
    let stride: Int
    let width: Int
    func row(_ y: Int) -> UnsafeMutablePointer<UInt32> {
        (base + y * stride).assumingMemoryBound(to: UInt32.self)
    }
}

/// Pixman's OVER of an opaque solid colour through 8-bit coverage onto an XRGB pixel, exactly
/// (each channel `d·(255−m)/255 + s·m/255` with pixman's rounding), with the results over the
/// background precomputed for every coverage value.
final class PixelBlend {
    let foreground: UInt32
    let background: UInt32
    /// Over the background, by coverage (256 entries).
    let overBackground: UnsafeMutablePointer<UInt32>

    init(foreground: UInt32, background: UInt32) {
        self.foreground = foreground
        self.background = background
        overBackground = .allocate(capacity: 256)
        for m in 0..<256 { overBackground[m] = PixelBlend.over(foreground, coverage: UInt32(m), onto: background) }
    }
    deinit { overBackground.deallocate() }

    /// x·a/255 rounded as pixman does (x, a ≤ 255).
    @inline(__always) static func mul(_ x: UInt32, _ a: UInt32) -> UInt32 {
        let t = x &* a &+ 0x80
        return (t &+ (t >> 8)) >> 8
    }

    /// An opaque `source` (alpha byte 0xFF) through coverage `m` over `dest`, per byte as
    /// pixman's `over(in(src, m), dest)`.
    @inline(__always) static func over(_ source: UInt32, coverage m: UInt32, onto dest: UInt32) -> UInt32 {
        let keep = 255 &- m
        @inline(__always) func channel(_ shift: UInt32, _ s: UInt32) -> UInt32 {
            min(255, mul((dest >> shift) & 0xFF, keep) &+ mul(s, m)) << shift
        }
        return channel(0, source & 0xFF) | channel(8, (source >> 8) & 0xFF)
            | channel(16, (source >> 16) & 0xFF) | channel(24, 0xFF)
    }
}

/// A stamp's coverage as runs along each row: spans of full coverage, spans of partial
/// coverage, and nothing for the pixels it does not cover. Made once per stamp, so that a
/// frame visits only the pixels text touches and fills the solid parts of glyphs at once.
final class CoverageRuns {
    struct Run {
        /// Image columns start..<end.
        var start: Int32, end: Int32
        /// Every byte is 255.
        var opaque: Bool
    }
    /// Full coverage this long or longer is a run of its own.
    static let minOpaque = 4
    /// The runs of image row y are `runs[rowStart[y]..<rowStart[y + 1]]`, left to right.
    let rowStart: UnsafeMutablePointer<Int32>
    let runs: UnsafeMutablePointer<Run>
    let count: Int

    init(data: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int) {
        var starts: [Int32] = [0]
        starts.reserveCapacity(height + 1)
        var found: [Run] = []
        for y in 0..<height {
            let row = data + y * stride
            var x = 0
            while x < width {
                if row[x] == 0 { x += 1; continue }
                let spanStart = x
                while x < width && row[x] != 0 { x += 1 }
                // Split the covered span into opaque runs and the partial pixels between them.
                var pending = spanStart, i = spanStart
                while i < x {
                    guard row[i] == 255 else { i += 1; continue }
                    var j = i
                    while j < x && row[j] == 255 { j += 1 }
                    if j - i >= Self.minOpaque {
                        if pending < i { found.append(Run(start: Int32(pending), end: Int32(i), opaque: false)) }
                        found.append(Run(start: Int32(i), end: Int32(j), opaque: true))
                        pending = j
                    }
                    i = j
                }
                if pending < x { found.append(Run(start: Int32(pending), end: Int32(x), opaque: false)) }
            }
            starts.append(Int32(found.count))
        }
        rowStart = .allocate(capacity: starts.count)
        rowStart.initialize(from: starts, count: starts.count)
        runs = .allocate(capacity: max(1, found.count))
        runs.initialize(from: found, count: found.count)
        count = found.count
    }
    deinit {
        rowStart.deallocate()
        runs.deallocate()
    }
}

/// One stamp drawn into a frame: its coverage (`data` at the image's top-left, which is at
/// (`imageX`, `imageY`) on the canvas), its runs, its colour and blends over the background, and
/// `area`, the canvas pixels it may change (within the image, the clip and the composed
/// rectangle). Plain values and pointers: the frame's inner loops copy it freely.
struct StampLayer {
    let data: UnsafePointer<UInt8>
    let stride: Int
    let imageX: Int, imageY: Int
    let area: Rect
    let rowStart: UnsafePointer<Int32>
    let runs: UnsafePointer<CoverageRuns.Run>
    let foreground: UInt32
    let overBackground: UnsafePointer<UInt32>

    init(data: UnsafePointer<UInt8>, stride: Int, imageX: Int, imageY: Int, area: Rect,
         rowStart: UnsafeMutablePointer<Int32>, runs: UnsafeMutablePointer<CoverageRuns.Run>,
         foreground: UInt32, overBackground: UnsafeMutablePointer<UInt32>) {
        self.data = data; self.stride = stride; self.imageX = imageX; self.imageY = imageY; self.area = area
        self.rowStart = UnsafePointer(rowStart); self.runs = UnsafePointer(runs)
        self.foreground = foreground; self.overBackground = UnsafePointer(overBackground)
    }
}

enum StampComposer {
    /// Writes `area` of `frame`: the background, and the layers over it in order.
    static func compose(into frame: FrameRows, area: Rect, background bg: UInt32, layers: [StampLayer]) {
        let contiguous = area.x == 0 && area.width == frame.width && frame.stride == frame.width * 4
        var scratch: UnsafeMutablePointer<UInt32>?
        defer { scratch?.deallocate() }
        var active: [StampLayer] = []
        active.reserveCapacity(layers.count)
        var y = area.y
        while y < area.maxY {
            // Rows up to `next` are crossed by the same layers.
            var next = area.maxY
            active.removeAll(keepingCapacity: true)
            for l in layers {
                if l.area.y > y { next = min(next, l.area.y) }
                else if l.area.maxY > y {
                    next = min(next, l.area.maxY)
                    active.append(l)
                }
            }
            if active.isEmpty {
                if contiguous {
                    fill(frame.row(y), bg, (next - y) * frame.width)
                } else {
                    for row in y..<next { fill(frame.row(row) + area.x, bg, area.width) }
                }
                y = next
                continue
            }
            // Left to right (the order only matters where stamps overlap, which the rows
            // below leave to the blending path).
            let ordered = active.sorted { $0.area.x < $1.area.x }
            ordered.withUnsafeBufferPointer { sorted in
                for row in y..<next {
                    let out = frame.row(row)
                    if write(row: row, out: out, area: area, background: bg, layers: sorted) { continue }
                    // Text that overlaps itself: blended in a row buffer, in order, then copied.
                    let buffer: UnsafeMutablePointer<UInt32>
                    if let scratch { buffer = scratch } else {
                        buffer = .allocate(capacity: frame.width)
                        scratch = buffer
                    }
                    fill(buffer, bg, area.width)
                    for l in active where l.area.y <= row && row < l.area.maxY {
                        blendRow(l, row: row, background: bg, into: buffer + (l.area.x - area.x))
                    }
                    memcpy(out + area.x, buffer, area.width * 4)
                }
            }
            y = next
        }
    }

    /// Writes `area`'s part of `row` once, from left to right: the background between the
    /// layers' runs, the colour where a run is opaque, and the blend over the background where it
    /// is partial. False, with the row partly written, when two layers' runs overlap (then
    /// nothing written is read; the caller writes the row again).
    @inline(__always)
    static func write(row: Int, out: UnsafeMutablePointer<UInt32>, area: Rect, background bg: UInt32,
                      layers: UnsafeBufferPointer<StampLayer>) -> Bool {
        var cursor = area.x
        for l in layers {
            let r = row - l.imageY
            let lo = l.area.x - l.imageX, hi = l.area.maxX - l.imageX
            var k = Int(l.rowStart[r])
            let end = Int(l.rowStart[r + 1])
            let cov = l.data + r * l.stride
            while k < end {
                let run = l.runs[k]
                k += 1
                let s = max(Int(run.start), lo), e = min(Int(run.end), hi)
                guard s < e else { continue }
                let x0 = s + l.imageX
                guard x0 >= cursor else { return false }
                fill(out + cursor, bg, x0 - cursor)
                if run.opaque {
                    fill(out + x0, l.foreground, e - s)
                } else {
                    let table = l.overBackground
                    for i in s..<e { out[i + l.imageX] = table[Int(cov[i])] }
                }
                cursor = e + l.imageX
            }
        }
        fill(out + cursor, bg, area.maxX - cursor)
        return true
    }

    /// Fills `count` pixels (none when count ≤ 0): short stretches inline, long ones with libc.
    @inline(__always) static func fill(_ p: UnsafeMutablePointer<UInt32>, _ value: UInt32, _ count: Int) {
        if count >= 32 { kiosk_fill32(p, value, count); return }
        var i = 0
        while i < count { p[i] = value; i += 1 }
    }

    /// Blends one row of a layer into `out` (the layer's first pixel of the row), reading what
    /// is there: for text whose stamps overlap.
    static func blendRow(_ l: StampLayer, row: Int, background bg: UInt32, into out: UnsafeMutablePointer<UInt32>) {
        let cov = l.data + (row - l.imageY) * l.stride + (l.area.x - l.imageX)
        let fg = l.foreground, table = l.overBackground
        for i in 0..<l.area.width {
            let m = cov[i]
            guard m != 0 else { continue }
            let d = out[i]
            out[i] = d == bg ? table[Int(m)] : PixelBlend.over(fg, coverage: UInt32(m), onto: d)
        }
    }
}

extension TextStamps.Stamp {
    /// A stamp from coverage bytes (`height` rows of `width`), its image's top-left at
    /// (`originX`, `originY`) from the logical top-left, with zero metrics: a shape that is not
    /// text, or a test pattern.
    convenience init(coverage: [UInt8], width: Int, height: Int, originX: Int = 0, originY: Int = 0) {
        precondition(width > 0 && height > 0 && coverage.count == width * height, "coverage of \(coverage.count) bytes for \(width)x\(height)")
        let s = cairo_image_surface_create(CAIRO_FORMAT_A8, Int32(width), Int32(height))!
        cairo_surface_flush(s)
        let data = cairo_image_surface_get_data(s)!, stride = Int(cairo_image_surface_get_stride(s))
        coverage.withUnsafeBufferPointer { src in
            for y in 0..<height { memcpy(data + y * stride, src.baseAddress! + y * width, width) }
        }
        cairo_surface_mark_dirty(s)
        self.init(surface: s, originX: originX, originY: originY, width: width, height: height,
                  metrics: TextMetrics(width: 0, height: 0, baseline: 0))
    }
}
