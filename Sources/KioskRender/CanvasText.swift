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

/// Text on a canvas with pango: measuring, drawing, fitting, and the limits that keep any
/// string and size safe.
extension Canvas {
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
            // fontconfig loaded here, or waited for if another thread is loading it.
            FontSetup.prepare()
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
