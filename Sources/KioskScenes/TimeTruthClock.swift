import KioskCore
import KioskRender

/// What the clock shows while the system clock is not synchronised (config `unsynced`).
public enum ClockUnsyncedDisplay: String, Sendable, Equatable, CaseIterable {
    /// The time as usual and a small "time not synchronised" mark in the top-left corner.
    case mark
    /// The time with its seconds dimmed.
    case dimSeconds = "dim-seconds"
    /// No time: the theme's background, a dimmed `--:--:--` placeholder and the mark.
    case hide
    /// The time as usual.
    case ignore
}

/// Drawing the clock's "not synchronised" states.
enum UnsyncedClockDrawing {
    /// The mark's text.
    static let markText = "time not synchronised"
    /// What `hide` shows where the time would be.
    static let placeholder = "--:--:--"

    /// The mark's colour: the theme's highlight colour where it is readable on `background`,
    /// else the palette's readable text colour.
    static func markColor(_ theme: Theme, on background: Color) -> Color {
        theme.palette.highlight.contrastRatio(with: background) >= 4.5
            ? theme.palette.highlight : theme.palette.readableText(on: background)
    }

    /// Text that is there but steps back: `color` two thirds of the way to `background`.
    static func dimmed(_ color: Color, on background: Color) -> Color { color.mixed(with: background, 0.6) }

    /// Draws the mark small in the top-left corner, above `timeTop` (the time's box), so it
    /// never covers the time; returns where.
    static func drawMark(on canvas: Canvas, theme: Theme, background: Color, timeTop: Double) -> Rect {
        guard let (px, box) = markBox(canvas.size, timeTop: timeTop) else { return Rect(x: 0, y: 0, width: 0, height: 0) }
        return canvas.drawText(markText, theme.fonts.caption, px: px, color: markColor(theme, on: background),
                               in: box, alignment: .leading)
    }

    /// The mark as a stamp for `Canvas.compose` (rendered once, so an unsynchronised clock's
    /// tick costs no text layout), where `drawMark` would put it; and the pixels it covers.
    static func placeMark(_ stamps: TextStamps, canvasSize: Size, theme: Theme, background: Color,
                          timeTop: Double) -> (placements: [StampPlacement], covered: Rect) {
        guard let (px, box) = markBox(canvasSize, timeTop: timeTop) else { return ([], Rect(x: 0, y: 0, width: 0, height: 0)) }
        return stamps.placeText(markText, theme.fonts.caption, px: px, color: markColor(theme, on: background),
                                in: box, alignment: .leading, canvasSize: canvasSize)
    }

    /// The mark's text size and box: small, in the top-left corner, above `timeTop`.
    private static func markBox(_ size: Size, timeTop: Double) -> (px: Double, box: (x: Double, y: Double, width: Double, height: Double))? {
        let px = max(9, Double(min(size.width, size.height)) / 28)
        let margin = (px * 0.6).rounded()
        let height = min(px * 1.5, timeTop - margin)
        guard height > 0 else { return nil }
        return (px, (margin, margin, Double(size.width) - 2 * margin, height))
    }

    /// Draws `text` (`HH:mm:ss`, maybe followed by " AM"/" PM") centred in `box` as the clock
    /// does, with the two seconds digits in `dim`; returns where all of it and where the
    /// seconds are.
    static func drawDimmedSeconds(_ text: String, on canvas: Canvas, font: FontStyle, px: Double, color: Color, dim: Color,
                                  in box: (x: Double, y: Double, width: Double, height: Double)) -> (all: Rect, seconds: Rect) {
        let chars = Array(text)
        guard chars.count >= 8 else {
            let r = canvas.drawText(text, font, px: px, color: color, in: box)
            return (r, Rect(x: 0, y: 0, width: 0, height: 0))
        }
        let head = String(chars[..<6]), seconds = String(chars[6..<8]), tail = String(chars[8...])
        let whole = canvas.measure(text, font, px: px)
        let x0 = box.x + (box.width - whole.width) / 2, y0 = box.y + (box.height - whole.height) / 2
        let secondsX = x0 + canvas.measure(head, font, px: px).width
        let tailX = x0 + canvas.measure(head + seconds, font, px: px).width
        let clip = Rect.covering(minX: box.x, minY: box.y, maxX: box.x + box.width, maxY: box.y + box.height)
        var all = Rect(x: 0, y: 0, width: 0, height: 0), secondsRect = all
        canvas.withClip(clip) {
            all = canvas.drawText(head, font, px: px, color: color, x: x0, y: y0)
            secondsRect = canvas.drawText(seconds, font, px: px, color: dim, x: secondsX, y: y0)
            all = all.union(secondsRect)
            if !tail.isEmpty { all = all.union(canvas.drawText(tail, font, px: px, color: color, x: tailX, y: y0)) }
        }
        return (all.intersection(clip), secondsRect.intersection(clip))
    }
}
