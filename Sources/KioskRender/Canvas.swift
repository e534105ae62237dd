import CCairo
import KioskCore

/// Horizontal placement of text inside a box.
public enum TextAlignment: Sendable {
    case leading, center, trailing

    /// Where text measuring `m` starts in `box` (the top-left of its logical rectangle): aligned
    /// this way across, centred on its logical height down.
    func origin(of m: TextMetrics, in box: TextBox) -> (x: Double, y: Double) {
        let x: Double
        switch self {
        case .leading: x = box.x
        case .center: x = box.x + (box.width - m.width) / 2
        case .trailing: x = box.x + box.width - m.width
        }
        return (x, box.y + (box.height - m.height) / 2)
    }
}

/// A box text is drawn in (pixels).
typealias TextBox = (x: Double, y: Double, width: Double, height: Double)

/// Whether text can be placed in `box`: finite, and not empty.
func isUsable(_ box: TextBox) -> Bool {
    box.x.isFinite && box.y.isFinite && box.width.isFinite && box.height.isFinite && box.width > 0 && box.height > 0
}

/// Measured text: logical size in pixels (pango's logical rectangle).
public struct TextMetrics: Sendable, Equatable {
    public var width: Double
    public var height: Double
    /// Distance from the top of the logical rectangle to the baseline.
    public var baseline: Double
}

/// A drawing surface for scenes: an XRGB8888 image (cairo `CAIRO_FORMAT_RGB24`) with shapes,
/// strokes and pango text. It either owns its pixels or wraps memory it is given.
public final class Canvas {
    public let size: Size
    /// Texts laid out by pango on this canvas so far (measuring and drawing), to check that
    /// frames which should draw text from stamps lay nothing out.
    public private(set) var textLayouts = 0
    let surface: OpaquePointer
    let cr: OpaquePointer
    private var layout: OpaquePointer?
    private var fontCache: [FontKey: OpaquePointer] = [:]
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

    private func setColor(_ c: Color) {
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

    // MARK: text (pango)

    /// Text is drawn at most this many pixels high (larger sizes are clamped). Together with
    /// `maxTextScalars` it keeps every pango extent far inside its Int32 range of 1/1024 px.
    public static let maxTextPx: Double = 1024
    /// Sizes below this (and zero, negative, NaN) draw nothing.
    public static let minTextPx: Double = 0.25
    /// Longer text is cut to this many Unicode scalars and ends with "…".
    public static let maxTextScalars = 512

    /// `px` clamped to what pango can lay out, or nil when nothing should be drawn.
    static func textPx(_ px: Double) -> Double? {
        guard px.isFinite, px >= minTextPx else { return nil }
        return min(px, maxTextPx)
    }

    /// `text` cut to `maxTextScalars` (ending with "…"), NUL bytes shown as U+FFFD.
    static func layoutText(_ text: String) -> String {
        let scalars = text.unicodeScalars
        var t = text
        var i = scalars.startIndex, n = 0
        while i != scalars.endIndex && n < maxTextScalars { scalars.formIndex(after: &i); n += 1 }
        if i != scalars.endIndex {
            t = String(scalars[..<scalars.index(scalars.startIndex, offsetBy: maxTextScalars - 1)]) + "…"
        }
        if t.utf8.contains(0) { t = t.replacingNULs() }
        return t
    }

    private func fontDescription(_ style: FontStyle, px: Double) -> OpaquePointer {
        let key = FontKey(family: style.family, weight: style.weight, slant: style.slant, px: Int((px * 4).rounded()))
        if let d = fontCache[key] { return d }
        let d = pango_font_description_new()!
        pango_font_description_set_family(d, style.family)
        let w: PangoWeight
        switch style.weight {
        case .light: w = PANGO_WEIGHT_LIGHT
        case .normal: w = PANGO_WEIGHT_NORMAL
        case .medium: w = PANGO_WEIGHT_MEDIUM
        case .semibold: w = PANGO_WEIGHT_SEMIBOLD
        case .bold: w = PANGO_WEIGHT_BOLD
        case .heavy: w = PANGO_WEIGHT_HEAVY
        }
        pango_font_description_set_weight(d, w)
        pango_font_description_set_style(d, style.slant == .italic ? PANGO_STYLE_ITALIC : PANGO_STYLE_NORMAL)
        pango_font_description_set_absolute_size(d, Double(key.px) / 4 * Double(PANGO_SCALE))
        fontCache[key] = d
        return d
    }

    /// Pango units (1/1024 px) for a box side, within Int32; -1 (no limit) when not positive.
    private static func pangoUnits(_ v: Double?) -> Int32 {
        guard let v, v.isFinite, v > 0 else { return -1 }
        return Int32(min(v, 1_000_000) * Double(PANGO_SCALE))
    }

    /// The layout for `text` (already cut by `layoutText`) at `px` (already clamped by `textPx`);
    /// with a box, lines wider or taller than it are ellipsized.
    private func prepareLayout(_ text: String, _ style: FontStyle, px: Double, box: (width: Double, height: Double)? = nil) -> OpaquePointer {
        textLayouts &+= 1
        let l: OpaquePointer
        if let existing = layout { l = existing } else {
            l = pango_cairo_create_layout(cr)!
            layout = l
        }
        pango_layout_set_font_description(l, fontDescription(style, px: px))
        let w = Self.pangoUnits(box?.width), h = Self.pangoUnits(box?.height)
        pango_layout_set_width(l, w)
        pango_layout_set_height(l, w < 0 ? -1 : h)
        pango_layout_set_ellipsize(l, w < 0 ? PANGO_ELLIPSIZE_NONE : PANGO_ELLIPSIZE_END)
        pango_layout_set_text(l, text, Int32(text.utf8.count))
        return l
    }

    /// The size `text` takes in `style` at `px` pixels (pango_layout_get_extents, logical rectangle).
    /// Sizes are clamped (`maxTextPx`) and long text cut (`maxTextScalars`) as when drawing;
    /// a size that draws nothing measures zero.
    public func measure(_ text: String, _ style: FontStyle, px: Double) -> TextMetrics {
        measure(Self.layoutText(text), style, px: px, box: nil)
    }

    private func measure(_ text: String, _ style: FontStyle, px: Double, box: (width: Double, height: Double)?) -> TextMetrics {
        guard let px = Self.textPx(px) else { return TextMetrics(width: 0, height: 0, baseline: 0) }
        let l = prepareLayout(text, style, px: px, box: box)
        var ink = PangoRectangle(), logical = PangoRectangle()
        pango_layout_get_extents(l, &ink, &logical)
        let s = Double(PANGO_SCALE)
        return TextMetrics(width: Double(logical.width) / s, height: Double(logical.height) / s,
                           baseline: Double(pango_layout_get_baseline(l)) / s)
    }

    /// The ink rectangle of `text` (already cut) relative to the top-left of its logical rectangle, in pixels.
    func inkExtents(_ text: String, _ style: FontStyle, px: Double) -> (minX: Double, minY: Double, maxX: Double, maxY: Double) {
        guard let px = Self.textPx(px) else { return (0, 0, 0, 0) }
        let l = prepareLayout(text, style, px: px)
        var ink = PangoRectangle(), logical = PangoRectangle()
        pango_layout_get_extents(l, &ink, &logical)
        let s = Double(PANGO_SCALE)
        return (Double(ink.x - logical.x) / s, Double(ink.y - logical.y) / s,
                Double(ink.x + ink.width - logical.x) / s, Double(ink.y + ink.height - logical.y) / s)
    }

    /// This canvas's layout set up for `text` (already cut) at `px` (already clamped), to render it elsewhere.
    func prepareLayoutForStamp(_ text: String, _ style: FontStyle, px: Double) -> OpaquePointer {
        prepareLayout(text, style, px: px)
    }

    /// Draws `text` with the top-left of its logical rectangle at (x, y) (pango_cairo_show_layout).
    /// Returns the pixel rectangle it covers (ink and logical extents together). Any string and
    /// size is safe: sizes are clamped to `maxTextPx` (below `minTextPx`, NaN or a non-finite
    /// position draw nothing) and text is cut to `maxTextScalars`.
    @discardableResult
    public func drawText(_ text: String, _ style: FontStyle, px: Double, color: Color, x: Double, y: Double) -> Rect {
        drawText(Self.layoutText(text), style, px: px, color: color, x: x, y: y, box: nil)
    }

    private func drawText(_ text: String, _ style: FontStyle, px: Double, color: Color, x: Double, y: Double,
                          box: (width: Double, height: Double)?) -> Rect {
        guard let px = Self.textPx(px), x.isFinite, y.isFinite else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        let l = prepareLayout(text, style, px: px, box: box)
        var ink = PangoRectangle(), logical = PangoRectangle()
        pango_layout_get_extents(l, &ink, &logical)
        cairo_save(cr)
        setColor(color)
        cairo_move_to(cr, x, y)
        pango_cairo_update_layout(cr, l)
        pango_cairo_show_layout(cr, l)
        cairo_restore(cr)
        let s = Double(PANGO_SCALE)
        let minX = min(Double(ink.x), Double(logical.x)) / s, minY = min(Double(ink.y), Double(logical.y)) / s
        let maxX = max(Double(ink.x) + Double(ink.width), Double(logical.x) + Double(logical.width)) / s
        let maxY = max(Double(ink.y) + Double(ink.height), Double(logical.y) + Double(logical.height)) / s
        func bounded(_ v: Double) -> Double { min(max(v, -1e9), 1e9) }
        return Rect.covering(minX: bounded(x + minX - 1), minY: bounded(y + minY - 1),
                             maxX: bounded(x + maxX + 1), maxY: bounded(y + maxY + 1))
    }

    /// Draws `text` centred (or aligned) in a box, vertically centred on its logical height.
    /// Text wider or taller than the box is ellipsized, and nothing is drawn outside the box.
    @discardableResult
    public func drawText(_ text: String, _ style: FontStyle, px: Double, color: Color,
                         in box: (x: Double, y: Double, width: Double, height: Double),
                         alignment: TextAlignment = .center) -> Rect {
        let empty = Rect(x: 0, y: 0, width: 0, height: 0)
        guard isUsable(box) else { return empty }
        let t = Self.layoutText(text)
        let size = (width: box.width, height: box.height)
        let at = alignment.origin(of: measure(t, style, px: px, box: size), in: box)
        var drawn = empty
        withClip(x: box.x, y: box.y, width: box.width, height: box.height) {
            drawn = drawText(t, style, px: px, color: color, x: at.x, y: at.y, box: size)
        }
        func bounded(_ v: Double) -> Double { min(max(v, -1e9), 1e9) }
        let boxRect = Rect.covering(minX: bounded(box.x), minY: bounded(box.y),
                                    maxX: bounded(box.x + box.width), maxY: bounded(box.y + box.height))
        return drawn.intersection(boxRect)
    }

    private func withClip(x: Double, y: Double, width: Double, height: Double, _ body: () -> Void) {
        cairo_save(cr)
        scopedStateDepth += 1
        cairo_rectangle(cr, x, y, width, height)
        cairo_clip(cr)
        body()
        scopedStateDepth -= 1
        cairo_restore(cr)
    }

    /// The largest pixel size (≤ `maxPx`) at which `text` fits in width × height.
    public func fittingSize(_ text: String, _ style: FontStyle, maxPx: Double, width: Double, height: Double) -> Double {
        let m = measure(text, style, px: 100)
        let limit = maxPx.isFinite ? min(maxPx, Self.maxTextPx) : Self.maxTextPx
        guard m.width > 0, m.height > 0 else { return max(1, limit) }
        let fit = 100 * min(width / m.width, height / m.height)
        return fit.isNaN ? 1 : max(1, min(limit, fit))
    }
}

extension String {
    /// The string with every NUL shown as U+FFFD (pango takes C strings).
    func replacingNULs() -> String {
        String(String.UnicodeScalarView(unicodeScalars.map { $0 == "\0" ? "\u{FFFD}" : $0 }))
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
