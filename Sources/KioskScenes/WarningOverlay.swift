import KioskCore
import KioskRender

/// A short warning (such as "state not saved") drawn small in the bottom-right corner over the
/// scene's frame, and the frame pixels it covers, put back before the scene draws again so
/// scenes never see it.
final class WarningOverlay: FrameOverlay {
    /// The warning shown; nil: none.
    var text: String?
    private var under: SavedPixels?

    /// The pixels kept are stale (the screen changed size, or the frame went to another buffer).
    func resize(to size: Size) { under = nil }

    /// Puts back the pixels under the warning; returns where.
    func remove(from canvas: Canvas) -> Rect? {
        defer { under = nil }
        return under?.restore(to: canvas)
    }

    /// Keeps the pixels under the warning, then draws it: `text` in the theme's highlight colour
    /// on a background-coloured tab in the bottom-right corner; returns where (nil for no text).
    func draw(on canvas: Canvas, theme: Theme) -> Rect? {
        guard let text, !text.isEmpty else { return nil }
        let px = max(9, Double(min(canvas.size.width, canvas.size.height)) / 36)
        let m = canvas.measure(text, theme.fonts.caption, px: px)
        let pad = px / 3
        let w = min(m.width + 2 * pad, Double(canvas.size.width)), h = m.height + 2 * pad
        let x = Double(canvas.size.width) - w - pad, y = Double(canvas.size.height) - h - pad
        let r = Rect.covering(minX: x - 1, minY: y - 1, maxX: x + w + 1, maxY: y + h + 1).intersection(Rect(size: canvas.size))
        guard !r.isEmpty else { return nil }
        under = SavedPixels(r, of: canvas)
        canvas.withClip(r) {
            canvas.fillRoundedRect(x: x, y: y, width: w, height: h, radius: pad, theme.palette.background)
            canvas.strokeRoundedRect(x: x, y: y, width: w, height: h, radius: pad, lineWidth: 1, theme.palette.highlight)
            canvas.drawText(text, theme.fonts.caption, px: px, color: theme.palette.highlight, x: x + pad, y: y + pad)
        }
        return r
    }
}
