import KioskCore
import KioskRender

/// The mouse cursor drawn over the scene's frame: where it is, whether its button is held, and
/// the frame pixels it covers, put back before the scene draws again so scenes never see it.
/// Relative motion moves it, clamped to the screen; the first motion or click starts it at the
/// screen's centre.
final class CursorOverlay: FrameOverlay {
    /// The cursor's tip in logical pixels (nil until a mouse moves or clicks).
    private(set) var position: Point?
    /// Whether the button is held (the cursor then acts as a finger).
    private(set) var isDown = false
    private var under: SavedPixels?

    /// Moves the tip by (dx, dy), staying on a screen of `size`; returns the new tip.
    func move(dx: Double, dy: Double, on size: Size) -> Point {
        let from = position ?? Self.centre(of: size)
        let p = Point(x: min(max(from.x + dx, 0), Double(size.width - 1)), y: min(max(from.y + dy, 0), Double(size.height - 1)))
        position = p
        return p
    }

    /// Presses or releases the button; returns the tip, or nil when the button already was in
    /// that state.
    func press(_ pressed: Bool, on size: Size) -> Point? {
        guard pressed != isDown else { return nil }
        let p = position ?? Self.centre(of: size)
        position = p
        isDown = pressed
        return p
    }

    /// Forgets the position (the cursor is switched off).
    func hide() { position = nil }

    /// The screen changed size: the pixels kept are stale, the tip stays on the screen.
    func resize(to size: Size) {
        under = nil
        if let c = position {
            position = Point(x: min(c.x, Double(size.width - 1)), y: min(c.y, Double(size.height - 1)))
        }
    }

    /// Puts back the pixels the cursor covered; returns where.
    func remove(from canvas: Canvas) -> Rect? {
        defer { under = nil }
        return under?.restore(to: canvas)
    }

    /// Keeps the pixels under the cursor, then draws it (an arrow in the theme's text colour,
    /// outlined in its background colour); returns where (nil while it has no position).
    func draw(on canvas: Canvas, theme: Theme) -> Rect? {
        guard let p = position else { return nil }
        let palette = theme.palette
        let s = max(12, Double(min(canvas.size.width, canvas.size.height)) / 40)
        let r = Rect.covering(minX: p.x - 2, minY: p.y - 2, maxX: p.x + s * 0.75 + 2, maxY: p.y + s * 1.1 + 2)
            .intersection(Rect(size: canvas.size))
        guard !r.isEmpty else { return nil }
        under = SavedPixels(r, of: canvas)
        canvas.fillPolygon([p, Point(x: p.x, y: p.y + s), Point(x: p.x + s * 0.28, y: p.y + s * 0.74),
                            Point(x: p.x + s * 0.7, y: p.y + s * 0.7)],
                           palette.text, outline: palette.background, lineWidth: max(1, s / 12))
        return r
    }

    private static func centre(of size: Size) -> Point { Point(x: Double(size.width) / 2, y: Double(size.height) / 2) }
}
