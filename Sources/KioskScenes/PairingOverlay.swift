import CKioskLazy
import CQRencode
import KioskCore
import KioskRender

/// A QR code symbol: a square of dark and light modules (libqrencode's `QRcode`, copied out
/// and freed at once).
struct QRCode: Sendable, Equatable {
    /// Modules per side (without the quiet zone).
    let width: Int
    /// Row by row, true for a dark module.
    let modules: [Bool]

    /// Encodes `text` as 8-bit data with error correction level M, in the smallest version that
    /// holds it (QRcode_encodeString, mode QR_MODE_8).
    init(encoding text: String) throws {
        guard !text.isEmpty else { throw KioskError(.render, "cannot encode an empty text as a QR code") }
        // libqrencode is opened the first time a code is shown, not linked.
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_QRENCODE)) { throw KioskError(.render, String(cString: e)) }
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            throw KioskError(.render, "QRcode_encodeString failed for a text of \(text.utf8.count) bytes (the limit is 2331 at level M)")
        }
        defer { QRcode_free(code) }
        let n = Int(code.pointee.width)
        width = n
        // Bit 0 of each byte is the module's colour (1 = dark); the other bits are libqrencode's bookkeeping.
        modules = (0..<(n * n)).map { code.pointee.data[$0] & 1 == 1 }
    }

    func isDark(x: Int, y: Int) -> Bool { modules[y * width + x] }
}

/// The pairing prompt drawn over the scene: a QR code of the page's URL (which carries the
/// one-time code) and the code in large text, on a card in the theme's lightest colour with
/// the modules in its darkest. The frame pixels it covers are put back before the scene draws
/// again, so scenes never see it.
final class PairingOverlay: FrameOverlay {
    /// The quiet zone around the symbol, in modules (the QR specification's minimum).
    static let quietZone = 4
    /// Below this contrast between the card and the modules, black on white is used instead.
    static let minimumContrast = 7.0
    /// The title over a code whose prompt names none.
    static let defaultTitle = "Scan to pair a phone"

    /// The prompt shown; nil: none.
    var prompt: PairingPrompt?
    private var under: SavedPixels?
    private var symbol: (text: String, code: QRCode)?

    /// The pixels kept are stale (the screen changed size, or the frame went to another buffer).
    func resize(to size: Size) { under = nil }

    /// Puts back the pixels under the prompt; returns where.
    func remove(from canvas: Canvas) -> Rect? {
        defer { under = nil }
        return under?.restore(to: canvas)
    }

    /// The card and module colours for `palette`: its lightest and darkest colour (background and
    /// text first), or white and black when no pair of its colours contrasts by `minimumContrast`.
    static func colors(_ palette: Palette) -> (light: Color, dark: Color) {
        func ordered(_ a: Color, _ b: Color) -> (light: Color, dark: Color) {
            a.relativeLuminance >= b.relativeLuminance ? (a, b) : (b, a)
        }
        let plain = ordered(palette.background, palette.text)
        if plain.light.contrastRatio(with: plain.dark) >= minimumContrast { return plain }
        let all = [palette.background, palette.text, palette.primary, palette.secondary, palette.highlight, palette.neutral]
        let light = all.max { $0.relativeLuminance < $1.relativeLuminance }!
        let dark = all.min { $0.relativeLuminance < $1.relativeLuminance }!
        if light.contrastRatio(with: dark) >= minimumContrast { return (light, dark) }
        return (.white, .black)
    }

    /// Keeps the pixels under `prompt`, then draws it; returns where (nil: no prompt).
    func draw(on canvas: Canvas, theme: Theme) -> Rect? {
        guard let prompt else { return nil }
        return draw(prompt, on: canvas, theme: theme)
    }

    /// Keeps the pixels under the prompt, then draws it centred on the canvas: the code, or the
    /// prompt's notice; returns where (nil when the URL cannot be encoded).
    func draw(_ prompt: PairingPrompt, on canvas: Canvas, theme: Theme) -> Rect? {
        if let notice = prompt.notice { return draw(notice: notice, on: canvas, theme: theme) }
        return draw(url: prompt.url, code: prompt.code, title: prompt.title ?? Self.defaultTitle, on: canvas, theme: theme)
    }

    /// A card like the code's, with a title and `notice` wrapped in it instead of the code.
    private func draw(notice: String, on canvas: Canvas, theme: Theme) -> Rect? {
        let (light, dark) = Self.colors(theme.palette)
        let w = Double(canvas.size.width), h = Double(canvas.size.height)
        let s = min(w, h)
        let pad = (s * 0.03).rounded()
        let titlePx = max(10, s * 0.05), bodyPx = max(9, s * 0.035)
        let title = "Pairing"
        let cardW = min(w, s * 0.8)
        let titleH = canvas.measure(title, theme.fonts.heading, px: titlePx).height
        let lines = Self.wrap(notice, width: cardW - 2 * pad) { canvas.measure($0, theme.fonts.body, px: bodyPx).width }
        let lineH = canvas.measure("Ag", theme.fonts.body, px: bodyPx).height
        let cardH = min(h, titleH + Double(lines.count) * lineH + 3 * pad)
        return drawCard(width: cardW, height: cardH, pad: pad, light: light, dark: dark, theme: theme, on: canvas) { x0, y0 in
            var y = y0 + pad
            canvas.drawText(title, theme.fonts.heading, px: titlePx, color: dark, in: (x0, y, cardW, titleH))
            y += titleH + pad
            for line in lines {
                canvas.drawText(line, theme.fonts.body, px: bodyPx, color: dark, in: (x0 + pad, y, cardW - 2 * pad, lineH))
                y += lineH
            }
        }
    }

    /// `text` in lines no wider than `width` (words kept whole; a longer word gets a line of its own).
    static func wrap(_ text: String, width: Double, measure: (String) -> Double) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            let candidate = line.isEmpty ? String(word) : line + " " + word
            if line.isEmpty || measure(candidate) <= width { line = candidate } else { lines.append(line); line = String(word) }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }

    /// Keeps the pixels under a card of `width` × `height` centred on the canvas, draws the card
    /// and then `content` (given the card's top-left corner) clipped to it; returns where.
    private func drawCard(width cardW: Double, height cardH: Double, pad: Double, light: Color, dark: Color, theme: Theme,
                                   on canvas: Canvas, content: (Double, Double) -> Void) -> Rect? {
        let w = Double(canvas.size.width), h = Double(canvas.size.height)
        let x0 = ((w - cardW) / 2).rounded(.down), y0 = ((h - cardH) / 2).rounded(.down)
        let r = Rect.covering(minX: x0, minY: y0, maxX: x0 + cardW, maxY: y0 + cardH).intersection(Rect(size: canvas.size))
        guard !r.isEmpty else { return nil }
        under = SavedPixels(r, of: canvas)
        canvas.withClip(r) {
            fillCard(r, pad: pad, light: light, dark: dark, theme: theme, on: canvas)
            content(x0, y0)
        }
        return r
    }

    /// The card: the light colour with an outline in the dark one and a band of the theme's
    /// primary colour on top (sets it off from a light scene).
    private func fillCard(_ r: Rect, pad: Double, light: Color, dark: Color, theme: Theme, on canvas: Canvas) {
        canvas.fill(r, light)
        let edge = max(2, Int(pad / 8))
        for side in [Rect(x: r.x, y: r.y, width: r.width, height: edge), Rect(x: r.x, y: r.maxY - edge, width: r.width, height: edge),
                     Rect(x: r.x, y: r.y, width: edge, height: r.height), Rect(x: r.maxX - edge, y: r.y, width: edge, height: r.height)] {
            canvas.fill(side, dark)
        }
        canvas.fill(Rect(x: r.x, y: r.y, width: r.width, height: max(2, Int(pad / 4))), theme.palette.primary)
    }

    func draw(url: String, code: String, title: String = defaultTitle, on canvas: Canvas, theme: Theme) -> Rect? {
        let qr: QRCode
        if let s = symbol, s.text == url { qr = s.code } else {
            guard let made = try? QRCode(encoding: url) else { return nil }
            symbol = (url, made)
            qr = made
        }
        let (light, dark) = Self.colors(theme.palette)
        let w = Double(canvas.size.width), h = Double(canvas.size.height)
        let s = min(w, h)
        let pad = (s * 0.03).rounded()
        let titlePx = max(10, s * 0.04), codePx = max(16, s * 0.1), urlPx = max(8, s * 0.026)
        let titleH = canvas.measure(title, theme.fonts.body, px: titlePx).height
        let codeH = canvas.measure(code, theme.fonts.heading, px: codePx).height
        let urlH = canvas.measure(url, theme.fonts.caption, px: urlPx).height
        let textH = titleH + codeH + urlH + 5 * pad
        // The symbol with its quiet zone, in whole pixels a module, as large as fits.
        let side = qr.width + 2 * Self.quietZone
        let room = min(s * 0.62, h - textH - 2 * pad, w - 2 * pad)
        let module = max(1, Int(room / Double(side)))
        let qrSide = Double(module * side)
        let cardW = min(w, max(qrSide, canvas.measure(code, theme.fonts.heading, px: codePx).width) + 2 * pad)
        let cardH = min(h, qrSide + textH)
        return drawCard(width: cardW, height: cardH, pad: pad, light: light, dark: dark, theme: theme, on: canvas) { x0, y0 in
            var y = y0 + pad
            canvas.drawText(title, theme.fonts.body, px: titlePx, color: dark, in: (x0, y, cardW, titleH))
            y += titleH + pad
            let qx = Int(x0 + (cardW - qrSide) / 2) + Self.quietZone * module, qy = Int(y) + Self.quietZone * module
            for row in 0..<qr.width {
                // One rectangle per run of dark modules in a row.
                var col = 0
                while col < qr.width {
                    guard qr.isDark(x: col, y: row) else { col += 1; continue }
                    let start = col
                    while col < qr.width, qr.isDark(x: col, y: row) { col += 1 }
                    canvas.fill(Rect(x: qx + start * module, y: qy + row * module, width: (col - start) * module, height: module), dark)
                }
            }
            y += qrSide + pad
            canvas.drawText(code, theme.fonts.heading, px: codePx, color: dark, in: (x0, y, cardW, codeH))
            y += codeH + pad
            canvas.drawText(url, theme.fonts.caption, px: urlPx, color: dark, in: (x0 + pad, y, cardW - 2 * pad, urlH))
        }
    }
}
