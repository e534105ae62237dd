import KioskCore
import KioskRender

/// Drawing a counter scene: the labels, and each digit window as a wheel of two glyphs.
extension CounterScene {
    /// How a digit window looks: its colour, the digit's colour and size.
    struct WindowLook: Equatable {
        var window: Color, digit: Color, px: Double
    }
    private var windowColor: Color { theme.palette.primary }
    private var digitColor: Color { theme.palette.readableText(on: windowColor) }
    var labelColor: Color { theme.palette.readableText(on: theme.palette.background) }
    /// The counters' windows.
    private var counterLook: WindowLook { WindowLook(window: windowColor, digit: digitColor, px: digitPx) }
    /// A counter's windows: in its team colour, when it has one, with the digits in black or
    /// white, whichever reads better on it.
    private func look(of c: Counter) -> WindowLook? {
        c.spec.color.map { WindowLook(window: $0, digit: theme.palette.readableText(on: $0), px: digitPx) }
    }

    private func fitFonts(_ canvas: Canvas) {
        guard fontsFor != size, let c = counters.first, let w = c.windows.first else { return }
        digitPx = canvas.fittingSize("8", theme.fonts.heading, maxPx: Double(w.height) * 0.85,
                                     width: Double(w.width) * 0.85, height: Double(w.height) * 0.95)
        let lb = c.labelBox
        let longest = counters.map(\.spec.label).max { $0.count < $1.count } ?? ""
        labelPx = lb.height > 0 && !longest.isEmpty
            ? canvas.fittingSize(longest, theme.fonts.body, maxPx: Double(lb.height), width: Double(lb.width), height: Double(lb.height))
            : 10
        labelPx = min(labelPx, digitPx * 0.6)
        fontsFor = size
    }

    /// At rest nothing is drawn; while wheels turn only their windows are redrawn and damaged.
    public func draw(into canvas: Canvas) -> Damage {
        fitFonts(canvas)
        var damage = Damage()
        if needsFull {
            canvas.clear(theme.palette.background)
            for c in counters where !c.spec.label.isEmpty && !c.labelBox.isEmpty {
                let b = c.labelBox
                canvas.drawText(c.spec.label, theme.fonts.body, px: labelPx, color: labelColor,
                                in: (Double(b.x), Double(b.y), Double(b.width), Double(b.height)))
            }
            damage = Damage.full(canvas.size)
        }
        for i in counters.indices {
            let shown = Odometer.digits(of: counters[i].value, count: digits)
            for (p, window) in counters[i].windows.enumerated() {
                if let roll = counters[i].rolls[p] {
                    drawWindow(canvas, window, roll: roll, progress: roll.progress(at: frameNs), look: look(of: counters[i]))
                    damage.add(window)
                    if roll.isFinished(at: frameNs) { counters[i].rolls[p] = nil }
                } else if needsFull {
                    drawWindow(canvas, window, roll: DigitRoll(from: shown[p], to: shown[p], direction: .up, startNs: 0, durationNs: 0), progress: 1,
                               look: look(of: counters[i]))
                }
            }
        }
        drawClock(canvas, full: needsFull, damage: &damage)
        needsFull = false
        return damage.clipped(to: Rect(size: canvas.size))
    }

    /// One digit window: the old and new glyphs one window-height apart, moved by the eased
    /// progress, clipped to the window, with a shade at the top and bottom edges for depth.
    /// Each row is copied from the digits' pictures (`DigitTiles`, rendered once per size,
    /// colours and font size), the rounded corners go back over them, then the shades.
    func drawWindow(_ canvas: Canvas, _ r: Rect, roll: DigitRoll, progress p: Double, look: WindowLook? = nil) {
        let look = look ?? counterLook
        guard usesDigitTiles, let t = tiles(for: r, look: look) else { return drawWindowWithCairo(canvas, r, roll: roll, progress: p, look: look) }
        let h = r.height
        let offset = Int((p * Double(h)).rounded())
        let from = roll.from, to = roll.to
        t.draw(at: Point(x: Double(r.x), y: Double(r.y)), into: canvas.pixels, clip: r) { y in
            if p >= 1 || from == to { return (to, y) }
            if p <= 0 { return (from, y) }
            if roll.direction == .up { return y < h - offset ? (from, y + offset) : (to, y - h + offset) }
            return y >= offset ? (from, y - offset) : (to, y - offset + h)
        }
        canvas.markDirty(r)
        if shading, !t.shaded, let s = shades(width: r.width, height: r.height) {
            let x = Double(r.x), y = Double(r.y)
            canvas.composite(s.top, x: x, y: y)
            canvas.composite(s.bottom, x: x, y: y + Double(h - s.bottom.size.height))
        }
    }

    /// The digit pictures for windows of `r`'s size in the current colours and font size, made
    /// when first needed.
    private func tiles(for r: Rect, look: WindowLook) -> DigitTiles? {
        let key = DigitTiles.Key(size: Size(width: r.width, height: r.height), window: look.window,
                                 background: theme.palette.background, digit: look.digit, px: look.px)
        if let t = digitTiles.first(where: { $0.key == key }) { return t }
        guard let t = try? DigitTiles(key: key, radius: Double(r.width) * 0.12, shades: shading ? shades(width: r.width, height: r.height) : nil,
                                      drawDigit: { d, c in
            glyph(c, d, Rect(x: 0, y: 0, width: r.width, height: r.height), dy: 0, look: look)
        }) else { return nil }
        digitTilesMade += 1
        // The counters' windows, and the clocks' in their normal and low-time colours.
        if digitTiles.count >= 8 { digitTiles.removeFirst() }
        digitTiles.append(t)
        return t
    }

    /// The same window drawn with cairo (when the digit pictures cannot be made).
    private func drawWindowWithCairo(_ canvas: Canvas, _ r: Rect, roll: DigitRoll, progress p: Double, look: WindowLook) {
        canvas.withClip(r) {
            canvas.fill(r, theme.palette.background)
            let x = Double(r.x), y = Double(r.y), w = Double(r.width), h = Double(r.height)
            canvas.fillRoundedRect(x: x, y: y, width: w, height: h, radius: w * 0.12, look.window)
            let offset = (p * h).rounded()
            if p >= 1 || roll.from == roll.to {
                glyph(canvas, roll.to, r, dy: 0, look: look)
            } else if p <= 0 {
                glyph(canvas, roll.from, r, dy: 0, look: look)
            } else if roll.direction == .up {
                glyph(canvas, roll.from, r, dy: -offset, look: look)
                glyph(canvas, roll.to, r, dy: h - offset, look: look)
            } else {
                glyph(canvas, roll.from, r, dy: offset, look: look)
                glyph(canvas, roll.to, r, dy: offset - h, look: look)
            }
            if shading, let s = shades(width: r.width, height: r.height) {
                canvas.composite(s.top, x: x, y: y)
                canvas.composite(s.bottom, x: x, y: y + h - Double(s.bottom.size.height))
            }
        }
    }

    /// The shades at the top and bottom edge of a window (the background colour fading out),
    /// rendered once per window size and theme and laid over each frame: a gradient costs more
    /// to compute than to copy.
    private func shades(width: Int, height: Int) -> (top: Canvas, bottom: Canvas)? {
        let band = Int((Double(height) * 0.18).rounded())
        let shade = theme.palette.background
        if let c = shadeCache, c.width == width, c.band == band, c.color == shade { return (c.top, c.bottom) }
        guard band > 0, let top = try? Canvas(transparentSize: Size(width: width, height: band)),
              let bottom = try? Canvas(transparentSize: Size(width: width, height: band)) else { return nil }
        let w = Double(width), b = Double(band)
        top.fillVerticalGradient(x: 0, y: 0, width: w, height: b, top: shade.withAlpha(0.55), bottom: shade.withAlpha(0))
        bottom.fillVerticalGradient(x: 0, y: 0, width: w, height: b, top: shade.withAlpha(0), bottom: shade.withAlpha(0.55))
        shadeCache = (width, band, shade, top, bottom)
        return (top, bottom)
    }

    /// A digit centred in the window, at whole-pixel positions so a moved glyph keeps its shape.
    private func glyph(_ canvas: Canvas, _ d: Int, _ r: Rect, dy: Double, look: WindowLook) {
        // The digit's stamp: laid out and rendered once, then one image composite per frame.
        guard let stamp = stamps.stamp(String(d), theme.fonts.heading, px: look.px) else { return }
        let m = stamp.metrics
        let tx = (Double(r.x) + (Double(r.width) - m.width) / 2).rounded()
        let ty = (Double(r.y) + (Double(r.height) - m.height) / 2).rounded() + dy
        stamps.draw(stamp, x: Int(tx), y: Int(ty), color: look.digit, on: canvas)
    }
}

extension CounterScene: PixelShiftable {
    /// Each counter's label and digit windows.
    public var shiftContentBoxes: [Rect] {
        counters.map { c in
            let label = c.spec.label.isEmpty ? Rect(x: 0, y: 0, width: 0, height: 0) : c.labelBox
            return c.windows.reduce(label) { $0.union($1) }
        }.filter { !$0.isEmpty } + (clockPanel.map { [$0.band] } ?? [])
    }
    public var shiftBackground: Color { theme.palette.background }
}

