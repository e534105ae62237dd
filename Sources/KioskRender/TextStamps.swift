import CCairo
import KioskCore

/// Text rendered once and drawn many times. The first time a (text, font, size) is asked for,
/// pango lays it out and renders its coverage into a small alpha-only (A8) image; after that,
/// drawing it in any colour is one masked fill with no layout. Text that changes every second from a small alphabet (the
/// clock's digits, a counter's digits, `#RRGGBB`) is drawn character by character from the
/// stamps of its characters (`drawRun`), so a new string costs no layout either.
///
/// Stamps are drawn at whole-pixel positions: a string drawn twice looks the same wherever it goes.
/// A masked fill reads one byte per pixel of the stamp and skips what the text does not cover.
public final class TextStamps {
    /// One rendered text: its coverage (A8) and where the image sits relative to the top-left
    /// of the text's logical rectangle.
    public final class Stamp {
        let surface: OpaquePointer?
        /// The image's offset from the logical top-left and its size (pixels).
        let originX: Int, originY: Int, width: Int, height: Int
        /// The logical size and baseline (pango's logical rectangle), as `Canvas.measure` gives.
        public let metrics: TextMetrics
        /// The coverage as runs per row (`Canvas.compose`), made when first composed.
        var runs: CoverageRuns?

        init(surface: OpaquePointer?, originX: Int, originY: Int, width: Int, height: Int, metrics: TextMetrics) {
            self.surface = surface; self.originX = originX; self.originY = originY
            self.width = width; self.height = height; self.metrics = metrics
        }
        deinit { if let surface { cairo_surface_destroy(surface) } }
    }

    private struct Key: Hashable {
        let text: String, family: String, weight: FontStyle.Weight, slant: FontStyle.Slant, px: Int
    }

    /// At most this many stamps are kept; past it the cache starts again (text that never
    /// repeats must not grow memory).
    public let limit: Int
    private var stamps: [Key: Stamp] = [:]
    private var scratch: Canvas?
    /// Stamps rendered so far (each is one pango layout).
    public private(set) var rendered = 0
    /// Stamps kept now.
    public var count: Int { stamps.count }

    public init(limit: Int = 256) { self.limit = max(1, limit) }

    /// Drops every stamp (after a theme or size change nothing old is drawn again).
    public func removeAll() { stamps.removeAll() }

    /// The stamp for `text`; nil when nothing would be drawn (a size below `Canvas.minTextPx`).
    public func stamp(_ text: String, _ style: FontStyle, px: Double) -> Stamp? {
        guard let px = Canvas.textPx(px) else { return nil }
        let key = Key(text: text, family: style.family, weight: style.weight, slant: style.slant, px: Int((px * 4).rounded()))
        if let s = stamps[key] { return s }
        if scratch == nil { scratch = try? Canvas(size: Size(width: 1, height: 1)) }
        guard let scratch else { return nil }
        if stamps.count >= limit { stamps.removeAll() }
        let s = scratch.renderStamp(Canvas.layoutText(text), style, px: Double(key.px) / 4)
        rendered += 1
        stamps[key] = s
        return s
    }

    /// Draws `text` with the top-left of its logical rectangle at (x, y) rounded to whole
    /// pixels, from the stamp of the whole text; returns the pixels it covers.
    @discardableResult
    public func draw(_ text: String, _ style: FontStyle, px: Double, color: Color, x: Double, y: Double, on canvas: Canvas) -> Rect {
        guard let s = stamp(text, style, px: px), x.isFinite, y.isFinite else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        return canvas.draw(s, x: Int(x.rounded()), y: Int(y.rounded()), color: color)
    }

    /// Draws a stamp with the top-left of its text's logical rectangle at (x, y); returns the pixels it covers.
    @discardableResult
    public func draw(_ stamp: Stamp, x: Int, y: Int, color: Color, on canvas: Canvas) -> Rect {
        canvas.draw(stamp, x: x, y: y, color: color)
    }

    /// The logical size of `text` drawn by `drawRun`: the characters' widths added up, the
    /// tallest height and baseline.
    public func measureRun(_ text: String, _ style: FontStyle, px: Double) -> TextMetrics {
        var m = TextMetrics(width: 0, height: 0, baseline: 0)
        for ch in text {
            guard let s = stamp(String(ch), style, px: px) else { continue }
            m.width += s.metrics.width
            m.height = max(m.height, s.metrics.height)
            m.baseline = max(m.baseline, s.metrics.baseline)
        }
        return m
    }

    /// Draws `text` character by character from the characters' stamps, each at the whole pixel
    /// nearest to where the widths before it put it, on a common baseline; the top-left of the
    /// run's logical rectangle is at (x, y). Returns the pixels it covers.
    @discardableResult
    public func drawRun(_ text: String, _ style: FontStyle, px: Double, color: Color, x: Double, y: Double, on canvas: Canvas) -> Rect {
        let run = layoutRun(text, style, px: px, x: x, y: y, canvasSize: canvas.size)
        for p in run.placed { _ = canvas.draw(p.stamp, x: p.x, y: p.y, color: color) }
        return run.covered
    }

    /// Where `drawRun(_:_:px:color:x:y:on:)` puts each character's stamp on a canvas of
    /// `canvasSize`, and the pixels the run covers there.
    private func layoutRun(_ text: String, _ style: FontStyle, px: Double, x: Double, y: Double,
                           canvasSize: Size) -> (placed: [(stamp: Stamp, x: Int, y: Int)], covered: Rect) {
        guard x.isFinite, y.isFinite else { return ([], Rect(x: 0, y: 0, width: 0, height: 0)) }
        let run = measureRun(text, style, px: px)
        var pen = x
        // Like `Canvas.drawText`: the logical rectangle and the ink together, a pixel around.
        func bounded(_ v: Double) -> Double { min(max(v, -1e9), 1e9) }
        var covered = Rect.covering(minX: bounded(x - 1), minY: bounded(y - 1),
                                    maxX: bounded(x + run.width + 1), maxY: bounded(y + run.height + 1))
        var placed: [(stamp: Stamp, x: Int, y: Int)] = []
        placed.reserveCapacity(text.utf8.count)
        let canvasRect = Rect(size: canvasSize)
        for ch in text {
            guard let s = stamp(String(ch), style, px: px) else { continue }
            let sx = Int(pen.rounded()), sy = Int((y + run.baseline - s.metrics.baseline).rounded())
            placed.append((s, sx, sy))
            if s.surface != nil {
                let r = Rect(x: sx + s.originX, y: sy + s.originY, width: s.width, height: s.height).intersection(canvasRect)
                if !r.isEmpty { covered = covered.union(r) }
            }
            pen += s.metrics.width
        }
        return (placed, covered)
    }

    /// Draws `text` as `drawRun` centred (or aligned) in a box, vertically centred on its
    /// logical height, clipped to the box. Returns the pixels it covers.
    @discardableResult
    public func drawRun(_ text: String, _ style: FontStyle, px: Double, color: Color,
                        in box: (x: Double, y: Double, width: Double, height: Double),
                        alignment: TextAlignment = .center, on canvas: Canvas) -> Rect {
        let run = placeRun(text, style, px: px, color: color, in: box, alignment: alignment, canvasSize: canvas.size)
        guard let clip = run.placements.first?.clip else { return run.covered }
        canvas.withClip(clip) {
            for p in run.placements { _ = canvas.draw(p.stamp, x: p.x, y: p.y, color: color) }
        }
        return run.covered
    }

    /// `text` from the stamp of the whole text (laid out once, with its kerning), aligned in a
    /// box and vertically centred on its logical height at whole pixels, clipped to the box: the
    /// placement for `Canvas.compose` and the pixels it covers. For text that never changes
    /// (a notice), so that drawing it again costs no layout.
    public func placeText(_ text: String, _ style: FontStyle, px: Double, color: Color,
                          in box: (x: Double, y: Double, width: Double, height: Double),
                          alignment: TextAlignment = .center, canvasSize: Size) -> (placements: [StampPlacement], covered: Rect) {
        let empty = Rect(x: 0, y: 0, width: 0, height: 0)
        guard isUsable(box), let s = stamp(text, style, px: px), s.surface != nil else { return ([], empty) }
        let at = alignment.origin(of: s.metrics, in: box)
        guard abs(at.x) < 1e9, abs(at.y) < 1e9 else { return ([], empty) }
        let boxRect = Rect.covering(minX: box.x, minY: box.y, maxX: box.x + box.width, maxY: box.y + box.height)
        let placement = StampPlacement(s, x: Int(at.x.rounded()), y: Int(at.y.rounded()), color: color, clip: boxRect)
        return ([placement], placement.imageRect.intersection(boxRect).intersection(Rect(size: canvasSize)))
    }

    /// What `drawRun(_:_:px:color:in:alignment:on:)` would draw on a canvas of `canvasSize`, as
    /// stamps for `Canvas.compose` (each clipped to the box), and the pixels it would cover.
    public func placeRun(_ text: String, _ style: FontStyle, px: Double, color: Color,
                         in box: (x: Double, y: Double, width: Double, height: Double),
                         alignment: TextAlignment = .center, canvasSize: Size) -> (placements: [StampPlacement], covered: Rect) {
        guard isUsable(box) else { return ([], Rect(x: 0, y: 0, width: 0, height: 0)) }
        let at = alignment.origin(of: measureRun(text, style, px: px), in: box)
        let boxRect = Rect.covering(minX: box.x, minY: box.y, maxX: box.x + box.width, maxY: box.y + box.height)
        let run = layoutRun(text, style, px: px, x: at.x, y: at.y, canvasSize: canvasSize)
        let placements = run.placed.map { StampPlacement($0.stamp, x: $0.x, y: $0.y, color: color, clip: boxRect) }
        return (placements, run.covered.intersection(boxRect))
    }
}

extension Canvas {
    /// Renders the coverage of `text` (already cut) into a new A8 image just large enough for
    /// its ink, with this canvas's font settings.
    func renderStamp(_ text: String, _ style: FontStyle, px: Double) -> TextStamps.Stamp {
        let m = measure(text, style, px: px)
        let ink = inkExtents(text, style, px: px)
        let x0 = Int(ink.minX.rounded(.down)) - 1, y0 = Int(ink.minY.rounded(.down)) - 1
        let x1 = Int(ink.maxX.rounded(.up)) + 1, y1 = Int(ink.maxY.rounded(.up)) + 1
        let w = x1 - x0, h = y1 - y0
        guard w > 2, h > 2, w <= 16384, h <= 16384 else {
            return TextStamps.Stamp(surface: nil, originX: 0, originY: 0, width: 0, height: 0, metrics: m)
        }
        let s = cairo_image_surface_create(CAIRO_FORMAT_A8, Int32(w), Int32(h))!
        let c = cairo_create(s)!
        let fo = cairo_font_options_create()
        cairo_get_font_options(cr, fo)
        cairo_set_font_options(c, fo)
        cairo_font_options_destroy(fo)
        let l = prepareLayoutForStamp(text, style, px: px)
        cairo_set_source_rgb(c, 0, 0, 0)
        cairo_move_to(c, Double(-x0), Double(-y0))
        pango_cairo_update_layout(c, l)
        pango_cairo_show_layout(c, l)
        cairo_destroy(c)
        cairo_surface_flush(s)
        // The layout goes back to this canvas's context for later measuring.
        pango_cairo_update_layout(cr, l)
        return TextStamps.Stamp(surface: s, originX: x0, originY: y0, width: w, height: h, metrics: m)
    }

    /// Fills `color` through a stamp's coverage with the top-left of its text's logical
    /// rectangle at (x, y) (cairo_mask_surface); returns the pixels it covers.
    func draw(_ stamp: TextStamps.Stamp, x: Int, y: Int, color: Color) -> Rect {
        guard let s = stamp.surface else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        let r = Rect(x: x + stamp.originX, y: y + stamp.originY, width: stamp.width, height: stamp.height)
        if color.alpha >= 1 { cairo_set_source_rgb(cr, color.red, color.green, color.blue) }
        else { cairo_set_source_rgba(cr, color.red, color.green, color.blue, color.alpha) }
        cairo_mask_surface(cr, s, Double(r.x), Double(r.y))
        return r.intersection(Rect(size: size))
    }
}
