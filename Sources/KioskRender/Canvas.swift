import CCairo
import KioskCore

/// A drawing surface for scenes: an XRGB8888 image (cairo `CAIRO_FORMAT_RGB24`) with shapes,
/// strokes and pango text. It either owns its pixels or wraps memory it is given.
public final class Canvas {
    public let size: Size
    /// Texts laid out by pango on this canvas so far (measuring and drawing), to check that
    /// frames which should draw text from stamps lay nothing out.
    public internal(set) var textLayouts = 0
    let surface: OpaquePointer
    let cr: OpaquePointer
    var layout: OpaquePointer?
    var fontCache: [FontKey: OpaquePointer] = [:]
    /// How many `withClip`/`translated` bodies are running: while one is, pixels are drawn
    /// through cairo only (its clip and transformation apply).
    var scopedStateDepth = 0
    /// Cairo's pixel values of recent colours (`compose`), made when first needed.
    var probe: PixelProbe?
    /// What owns the pixels of a wrapping canvas, when the canvas keeps it.
    private let owner: AnyObject?

    struct FontKey: Hashable { let family: String; let weight: FontStyle.Weight; let slant: FontStyle.Slant; let px: Int }

    /// A canvas that owns its pixels (cairo_image_surface_create).
    public convenience init(size: Size) throws {
        try self.init(size: size, format: CAIRO_FORMAT_RGB24)
    }

    /// A canvas with an alpha channel (`CAIRO_FORMAT_ARGB32`), transparent at first: something
    /// drawn once and then laid over other canvases many times with `composite`.
    public convenience init(transparentSize size: Size) throws {
        try self.init(size: size, format: CAIRO_FORMAT_ARGB32)
    }

    private init(size: Size, format: cairo_format_t) throws {
        guard size.width > 0, size.height > 0, size.width <= 16384, size.height <= 16384 else {
            throw KioskError(.render, "canvas size \(size) is out of range (1…16384 per side)")
        }
        let s = cairo_image_surface_create(format, Int32(size.width), Int32(size.height))!
        guard cairo_surface_status(s) == CAIRO_STATUS_SUCCESS else {
            cairo_surface_destroy(s)
            throw KioskError(.render, "cannot create a \(size) image (cairo: out of memory)")
        }
        self.owner = nil
        self.size = size
        self.surface = s
        self.cr = cairo_create(s)
        setup()
    }

    /// A canvas drawing into memory owned by someone else (cairo_image_surface_create_for_data);
    /// `owner`, when given, is kept alive as long as the canvas (it owns the memory).
    public init(wrapping buffer: PixelBuffer, owner: AnyObject? = nil) throws {
        let s = cairo_image_surface_create_for_data(buffer.base.assumingMemoryBound(to: UInt8.self), CAIRO_FORMAT_RGB24,
                                                    Int32(buffer.size.width), Int32(buffer.size.height), Int32(buffer.stride))!
        guard cairo_surface_status(s) == CAIRO_STATUS_SUCCESS else {
            cairo_surface_destroy(s)
            throw KioskError(.render, "cannot wrap a \(buffer.size) buffer with stride \(buffer.stride)")
        }
        self.size = buffer.size
        self.surface = s
        self.cr = cairo_create(s)
        self.owner = owner
        setup()
    }

    private func setup() {
        let fo = cairo_font_options_create()
        cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY)
        cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF)
        cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_SLIGHT)
        cairo_set_font_options(cr, fo)
        cairo_font_options_destroy(fo)
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
    }

    deinit {
        if let l = layout { g_object_unref(UnsafeMutableRawPointer(l)) }
        for (_, d) in fontCache { pango_font_description_free(d) }
        cairo_destroy(cr)
        cairo_surface_destroy(surface)
    }

    // MARK: pixels

    /// The canvas pixels (valid while the canvas lives). Call `flush()` before reading after drawing.
    public var pixels: PixelBuffer {
        cairo_surface_flush(surface)
        return PixelBuffer(base: UnsafeMutableRawPointer(cairo_image_surface_get_data(surface)!), size: size,
                           stride: Int(cairo_image_surface_get_stride(surface)))
    }
    /// Finishes pending drawing so the memory holds it (cairo_surface_flush).
    public func flush() { cairo_surface_flush(surface) }
    /// Tells cairo that pixels were written directly (cairo_surface_mark_dirty_rectangle).
    public func markDirty(_ r: Rect) {
        cairo_surface_mark_dirty_rectangle(surface, Int32(r.x), Int32(r.y), Int32(r.width), Int32(r.height))
    }
    /// The colour at (x, y), alpha 1.
    public func color(x: Int, y: Int) -> Color {
        let p = pixels.pixel(x: x, y: y)
        return Color(r8: Int((p >> 16) & 0xFF), g8: Int((p >> 8) & 0xFF), b8: Int(p & 0xFF))
    }

    /// Encodes the canvas as PNG (cairo_surface_write_to_png).
    public func writePNG(to path: String) throws {
        cairo_surface_flush(surface)
        let st = cairo_surface_write_to_png(surface, path)
        guard st == CAIRO_STATUS_SUCCESS else {
            throw KioskError(.render, "cannot write PNG to \(path): \(String(cString: cairo_status_to_string(st)))")
        }
    }

    /// Encodes the canvas as PNG in memory (cairo_surface_write_to_png_stream).
    public func pngData() throws -> [UInt8] {
        final class Sink { var bytes: [UInt8] = [] }
        let sink = Sink()
        cairo_surface_flush(surface)
        let st = withExtendedLifetime(sink) {
            cairo_surface_write_to_png_stream(surface, { closure, data, length in
                guard let closure, let data else { return CAIRO_STATUS_WRITE_ERROR }
                let sink = Unmanaged<Sink>.fromOpaque(closure).takeUnretainedValue()
                sink.bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: Int(length)))
                return CAIRO_STATUS_SUCCESS
            }, Unmanaged.passUnretained(sink).toOpaque())
        }
        guard st == CAIRO_STATUS_SUCCESS else {
            throw KioskError(.render, "cannot encode a \(size) image as PNG: \(String(cString: cairo_status_to_string(st)))")
        }
        return sink.bytes
    }

    // MARK: state

    /// Runs `body` with the drawing state saved and restored (cairo_save / cairo_restore).
    public func withState(_ body: () throws -> Void) rethrows {
        cairo_save(cr)
        defer { cairo_restore(cr) }
        try body()
    }
    /// Runs `body` with drawing limited to `rect`.
    public func withClip(_ rect: Rect, _ body: () throws -> Void) rethrows {
        cairo_save(cr)
        scopedStateDepth += 1
        defer { scopedStateDepth -= 1; cairo_restore(cr) }
        cairo_rectangle(cr, Double(rect.x), Double(rect.y), Double(rect.width), Double(rect.height))
        cairo_clip(cr)
        try body()
    }
    /// Runs `body` with drawing limited to each rectangle of `damage` (one clip path).
    public func withClip(_ damage: Damage, _ body: () throws -> Void) rethrows {
        cairo_save(cr)
        scopedStateDepth += 1
        defer { scopedStateDepth -= 1; cairo_restore(cr) }
        for r in damage.rects { cairo_rectangle(cr, Double(r.x), Double(r.y), Double(r.width), Double(r.height)) }
        cairo_clip(cr)
        try body()
    }
    /// Moves the origin for the drawing in `body`.
    public func translated(x: Double, y: Double, _ body: () throws -> Void) rethrows {
        cairo_save(cr)
        scopedStateDepth += 1
        defer { scopedStateDepth -= 1; cairo_restore(cr) }
        cairo_translate(cr, x, y)
        try body()
    }

    func setColor(_ c: Color) {
        if c.alpha >= 1 { cairo_set_source_rgb(cr, c.red, c.green, c.blue) }
        else { cairo_set_source_rgba(cr, c.red, c.green, c.blue, c.alpha) }
    }

    // MARK: shapes

    /// Fills the whole canvas.
    public func clear(_ color: Color) {
        cairo_save(cr)
        setColor(color.withAlpha(1))
        cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE)
        cairo_paint(cr)
        cairo_restore(cr)
    }
    /// Fills a pixel rectangle.
    public func fill(_ r: Rect, _ color: Color) {
        fill(x: Double(r.x), y: Double(r.y), width: Double(r.width), height: Double(r.height), color)
    }
    public func fill(x: Double, y: Double, width: Double, height: Double, _ color: Color) {
        setColor(color)
        cairo_rectangle(cr, x, y, width, height)
        cairo_fill(cr)
    }
    public func fillRoundedRect(x: Double, y: Double, width: Double, height: Double, radius: Double, _ color: Color) {
        roundedRectPath(x: x, y: y, width: width, height: height, radius: radius)
        setColor(color)
        cairo_fill(cr)
    }
    public func strokeRoundedRect(x: Double, y: Double, width: Double, height: Double, radius: Double, lineWidth: Double, _ color: Color) {
        roundedRectPath(x: x, y: y, width: width, height: height, radius: radius)
        setColor(color)
        cairo_set_line_width(cr, lineWidth)
        cairo_stroke(cr)
    }
    private func roundedRectPath(x: Double, y: Double, width: Double, height: Double, radius: Double) {
        let r = max(0, min(radius, min(width, height) / 2))
        cairo_new_sub_path(cr)
        cairo_arc(cr, x + width - r, y + r, r, -Double.pi / 2, 0)
        cairo_arc(cr, x + width - r, y + height - r, r, 0, Double.pi / 2)
        cairo_arc(cr, x + r, y + height - r, r, Double.pi / 2, Double.pi)
        cairo_arc(cr, x + r, y + r, r, Double.pi, 3 * Double.pi / 2)
        cairo_close_path(cr)
    }
    /// Fills (and optionally outlines) the polygon through `points` (cairo_line_to, cairo_fill_preserve).
    public func fillPolygon(_ points: [Point], _ color: Color, outline: Color? = nil, lineWidth: Double = 1) {
        guard let first = points.first else { return }
        cairo_new_path(cr)
        cairo_move_to(cr, first.x, first.y)
        for p in points.dropFirst() { cairo_line_to(cr, p.x, p.y) }
        cairo_close_path(cr)
        setColor(color)
        if let outline {
            cairo_fill_preserve(cr)
            setColor(outline)
            cairo_set_line_width(cr, lineWidth)
            cairo_stroke(cr)
        } else {
            cairo_fill(cr)
        }
    }

    public func fillCircle(center: Point, radius: Double, _ color: Color) {
        cairo_new_path(cr)
        cairo_arc(cr, center.x, center.y, radius, 0, 2 * Double.pi)
        setColor(color)
        cairo_fill(cr)
    }
    public func strokeCircle(center: Point, radius: Double, lineWidth: Double, _ color: Color) {
        cairo_new_path(cr)
        cairo_arc(cr, center.x, center.y, radius, 0, 2 * Double.pi)
        setColor(color)
        cairo_set_line_width(cr, lineWidth)
        cairo_stroke(cr)
    }
    /// A vertical linear gradient over a rectangle (cairo_pattern_create_linear), from `top` to `bottom`.
    public func fillVerticalGradient(x: Double, y: Double, width: Double, height: Double, top: Color, bottom: Color) {
        let p = cairo_pattern_create_linear(0, y, 0, y + height)!
        cairo_pattern_add_color_stop_rgba(p, 0, top.red, top.green, top.blue, top.alpha)
        cairo_pattern_add_color_stop_rgba(p, 1, bottom.red, bottom.green, bottom.blue, bottom.alpha)
        cairo_set_source(cr, p)
        cairo_rectangle(cr, x, y, width, height)
        cairo_fill(cr)
        cairo_pattern_destroy(p)
    }

    /// Strokes a line through `points` with round caps and joins; `smooth` draws a Catmull-Rom
    /// curve through every point (as cubic Béziers) instead of a polyline. One point draws a dot.
    public func strokePath(_ points: [Point], width: Double, _ color: Color, smooth: Bool = true) {
        guard let first = points.first else { return }
        cairo_new_path(cr)
        setColor(color)
        cairo_set_line_width(cr, width)
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        cairo_move_to(cr, first.x, first.y)
        if points.count == 1 {
            cairo_line_to(cr, first.x, first.y)
        } else if smooth && points.count > 2 {
            for seg in SmoothCurve.segments(points) {
                cairo_curve_to(cr, seg.c1.x, seg.c1.y, seg.c2.x, seg.c2.y, seg.end.x, seg.end.y)
            }
        } else {
            for p in points.dropFirst() { cairo_line_to(cr, p.x, p.y) }
        }
        cairo_stroke(cr)
    }

    /// Strokes only the part of a smooth path between points `from` and `to` (indices), drawn
    /// with the same curve as the whole path, so an incremental stroke matches a full redraw.
    public func strokePathSegment(_ points: [Point], from: Int, to: Int, width: Double, _ color: Color) {
        guard points.count >= 2, from < to, from >= 0, to < points.count else { return }
        cairo_new_path(cr)
        setColor(color)
        cairo_set_line_width(cr, width)
        cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        cairo_move_to(cr, points[from].x, points[from].y)
        for i in from..<to {
            let s = SmoothCurve.segment(points, i)
            cairo_curve_to(cr, s.c1.x, s.c1.y, s.c2.x, s.c2.y, s.end.x, s.end.y)
        }
        cairo_stroke(cr)
    }

    // MARK: images

    /// Paints another canvas with its top-left at (x, y) (cairo_set_source_surface + paint), limited to `clip` if given.
    public func draw(_ other: Canvas, x: Double = 0, y: Double = 0, clip: Damage? = nil) {
        cairo_save(cr)
        if let clip {
            for r in clip.rects { cairo_rectangle(cr, Double(r.x), Double(r.y), Double(r.width), Double(r.height)) }
            cairo_clip(cr)
        }
        cairo_surface_flush(other.surface)
        cairo_set_source_surface(cr, other.surface, x, y)
        cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE)
        cairo_paint(cr)
        cairo_restore(cr)
    }

    /// Lays another canvas (with its alpha) over this one with its top-left at (x, y) (OVER).
    public func composite(_ other: Canvas, x: Double, y: Double) {
        cairo_surface_flush(other.surface)
        cairo_set_source_surface(cr, other.surface, x, y)
        cairo_rectangle(cr, x, y, Double(other.size.width), Double(other.size.height))
        cairo_fill(cr)
    }
}

/// Catmull-Rom curves through points, as cubic Bézier segments.
public enum SmoothCurve {
    public struct Segment: Sendable, Equatable { public var c1: Point; public var c2: Point; public var end: Point }

    /// One segment per consecutive pair of points; the curve passes through every point.
    public static func segments(_ p: [Point]) -> [Segment] {
        guard p.count >= 2 else { return [] }
        var out: [Segment] = []
        out.reserveCapacity(p.count - 1)
        for i in 0..<(p.count - 1) { out.append(segment(p, i)) }
        return out
    }

    /// Segment `i` (from point i to point i+1) alone: it depends only on points i-1…i+2.
    public static func segment(_ p: [Point], _ i: Int) -> Segment {
        let p0 = p[max(i - 1, 0)], p1 = p[i], p2 = p[i + 1], p3 = p[min(i + 2, p.count - 1)]
        let c1 = Point(x: p1.x + (p2.x - p0.x) / 6, y: p1.y + (p2.y - p0.y) / 6)
        let c2 = Point(x: p2.x - (p3.x - p1.x) / 6, y: p2.y - (p3.y - p1.y) / 6)
        return Segment(c1: c1, c2: c2, end: p2)
    }

    /// The box (in pixels) that segments `from`…`to`-1 of a curve can touch (points and Bézier
    /// control points, which bound the curve), widened by half the stroke width.
    public static func bounds(_ p: [Point], from: Int, to: Int, width: Double) -> Rect {
        guard !p.isEmpty else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        var minX = Double.infinity, minY = Double.infinity, maxX = -Double.infinity, maxY = -Double.infinity
        func add(_ q: Point) { minX = min(minX, q.x); minY = min(minY, q.y); maxX = max(maxX, q.x); maxY = max(maxY, q.y) }
        let lo = max(0, min(from, p.count - 1)), hi = max(lo, min(to, p.count - 1))
        for i in lo...hi { add(p[i]) }
        for i in lo..<hi {
            let s = segment(p, i)
            add(s.c1); add(s.c2)
        }
        let h = width / 2 + 2
        return Rect.covering(minX: minX - h, minY: minY - h, maxX: maxX + h, maxY: maxY + h)
    }
}
