import KioskCore
import KioskRender

/// One clock's digits as drawn: each digit in its own window (the counters' digit pictures,
/// `DigitTiles`), a separator (":" or ".") after `separatorAfter` of them, and the low-time look.
struct ClockRowFace: Equatable {
    var digits: [Int]
    var separatorAfter: Int?
    var separator: String
    var low: Bool

    /// `MM:SS` → 4 windows with ":" after two; `SS.t` → 2 or 3 windows with "."; whole
    /// seconds (the shot clock) → 2 windows.
    init(_ face: ClockFace, low: Bool) {
        switch face {
        case .minutesSeconds(let m, let s):
            digits = [m / 10, m % 10, s / 10, s % 10]; separatorAfter = 2; separator = ":"
        case .seconds(let s):
            digits = [s / 10 % 10, s % 10]; separatorAfter = nil; separator = ""
        case .secondsTenths(let s, let t):
            digits = (s >= 10 ? [s / 10 % 10, s % 10] : [s]) + [t]; separatorAfter = digits.count - 1; separator = "."
        }
        self.low = low
    }

    /// Same windows, separator and look: only digits differ (only their windows are drawn).
    func sameShape(_ o: ClockRowFace?) -> Bool {
        guard let o else { return false }
        return o.digits.count == digits.count && o.separatorAfter == separatorAfter && o.separator == separator && o.low == low
    }
}

/// Drawing a counter scene's game clock in its band above the counters: the game clock's digits
/// with the period under them, the shot clock beside them. Only the windows of digits that
/// changed are drawn, with the counters' stamp path; the whole band when the layout, the
/// theme, the shape (`MM:SS` → `SS.t`) or the look (low time) changes.
extension CounterScene {
    /// The rows of `c` at `now` (nil: hidden).
    func gameRow(_ c: GameClock, at now: WallTime) -> ClockRowFace? {
        guard c.rules.showsGameClock else { return nil }
        let face = c.face(at: now)
        let low: Bool
        if case .secondsTenths = face { low = true } else { low = c.rules.direction == .down && c.remainingMs(at: now) == 0 }
        return ClockRowFace(face, low: low)
    }

    func shotRow(_ c: GameClock, at now: WallTime) -> ClockRowFace? {
        guard let face = c.shotFace(at: now) else { return nil }
        if case .secondsTenths = face { return ClockRowFace(face, low: true) }
        return ClockRowFace(face, low: c.shotRemainingMs(at: now) == 0)
    }

    /// Lays out the clock's band (the top 40 % of the screen) and returns what is left for the counters.
    func layoutClock(size: Size) -> Rect {
        guard let p = clockPanel else { return Rect(size: size) }
        let h = size.height * 40 / 100, w = size.width
        p.band = Rect(x: 0, y: 0, width: w, height: h)
        let top = h * 8 / 100, digitsH = h * 62 / 100
        let game = p.rules.showsGameClock, shot = p.rules.shotClockMs != nil
        let gameW = shot && game ? w * 64 / 100 : w * 90 / 100
        p.gameBox = game ? Rect(x: w * 4 / 100, y: top, width: gameW, height: digitsH) : Rect(x: 0, y: 0, width: 0, height: 0)
        if !game { p.gameBox.x = 0 }
        if shot {
            p.shotBox = game ? Rect(x: w * 72 / 100, y: top + digitsH / 6, width: w * 24 / 100, height: digitsH * 2 / 3)
                             : Rect(x: w * 20 / 100, y: top, width: w * 60 / 100, height: digitsH)
        }
        p.periodBox = Rect(x: p.gameBox.x, y: top + digitsH + h * 4 / 100, width: game ? gameW : w, height: h * 22 / 100)
        p.needsFull = true
        p.drawnGame = nil; p.drawnShot = nil; p.drawnPeriod = nil
        return Rect(x: 0, y: h, width: w, height: size.height - h)
    }

    func drawClock(_ canvas: Canvas, full: Bool, damage: inout Damage) {
        guard let p = clockPanel else { return }
        let now = p.lastNow.map { $0.advanced(byNs: frameNs - $0.monotonicNs) } ?? SystemTimeSource().now()
        let c = p.clock(at: now)
        if let w = p.warning {
            if full || p.needsFull || p.drawnWarning != w { drawClockWarning(canvas, w, damage: &damage) }
            return
        }
        let all = full || p.needsFull || p.drawnWarning != nil
        p.drawnWarning = nil
        if all {
            canvas.fill(p.band, theme.palette.background)
            damage.add(p.band)
        }
        let game = gameRow(c, at: now), shot = shotRow(c, at: now)
        if all || game != p.drawnGame || shot != p.drawnShot { p.logShown(c, scene: name, at: now) }
        drawRow(canvas, box: p.gameBox, face: game, drawn: &p.drawnGame, windows: &p.gameWindows, all: all, damage: &damage)
        drawRow(canvas, box: p.shotBox, face: shot, drawn: &p.drawnShot, windows: &p.shotWindows, all: all, damage: &damage)
        if c.rules.periods > 1, all || p.drawnPeriod != c.period, !p.periodBox.isEmpty {
            let b = p.periodBox
            canvas.fill(b, theme.palette.background)
            canvas.drawText(c.periodText, theme.fonts.body, px: Double(b.height) * 0.8, color: labelColor,
                            in: (Double(b.x), Double(b.y), Double(b.width), Double(b.height)))
            damage.add(b)
        }
        p.drawnPeriod = c.period
        p.needsFull = false
    }

    /// One clock's windows: all of them (and the separator) when the shape or look changed,
    /// else only those whose digit changed.
    private func drawRow(_ canvas: Canvas, box: Rect, face: ClockRowFace?, drawn: inout ClockRowFace?, windows: inout [Rect],
                         all: Bool, damage: inout Damage) {
        guard let face, !box.isEmpty else { drawn = nil; windows = []; return }
        let whole = all || !face.sameShape(drawn)
        if whole {
            if !all { canvas.fill(box, theme.palette.background); damage.add(box) }
            let (ws, sep) = rowWindows(box, face)
            windows = ws
            if let sep, let first = ws.first {
                canvas.drawText(face.separator, theme.fonts.heading, px: clockPx(first, canvas) , color: labelColor,
                                in: (Double(sep.x), Double(sep.y), Double(sep.width), Double(sep.height)))
            }
        }
        guard let first = windows.first else { return }
        let window = face.low ? theme.palette.highlight : theme.palette.primary
        let look = WindowLook(window: window, digit: theme.palette.readableText(on: window), px: clockPx(first, canvas))
        for (i, r) in windows.enumerated() where whole || drawn?.digits[i] != face.digits[i] {
            let d = face.digits[i]
            drawWindow(canvas, r, roll: DigitRoll(from: d, to: d, direction: .up, startNs: 0, durationNs: 0), progress: 1, look: look)
            if !whole || !all { damage.add(r) }
        }
        drawn = face
    }

    /// The digit size for windows like `r` (fitted once per size and font).
    private func clockPx(_ r: Rect, _ canvas: Canvas) -> Double {
        let key = "\(r.width)x\(r.height) \(theme.fonts.heading)"
        if let px = clockPanel?.pxCache[key] { return px }
        let px = canvas.fittingSize("8", theme.fonts.heading, maxPx: Double(r.height) * 0.85,
                                    width: Double(r.width) * 0.85, height: Double(r.height) * 0.95)
        clockPanel?.pxCache[key] = px
        return px
    }

    /// The windows of `face` centred in `box` (the counters' proportions: 0.62:1, gaps of 0.08
    /// of the height), and where its separator goes.
    private func rowWindows(_ box: Rect, _ face: ClockRowFace) -> ([Rect], Rect?) {
        let n = Double(face.digits.count), hasSep = face.separatorAfter != nil
        let units = n * 0.62 + (n - 1) * 0.08 + (hasSep ? 0.3 : 0)
        let h = max(4, Int(min(Double(box.height), Double(box.width) / units).rounded(.down)) & ~1)
        let w = max(2, Int((Double(h) * 0.62).rounded())), gap = Int((Double(h) * 0.08).rounded())
        let sepW = hasSep ? Int((Double(h) * 0.3).rounded()) : 0
        let total = face.digits.count * w + (face.digits.count - 1) * gap + sepW
        var x = box.x + (box.width - total) / 2
        let y = box.y + (box.height - h) / 2
        var out: [Rect] = [], sep: Rect?
        for i in face.digits.indices {
            if i == face.separatorAfter {
                sep = Rect(x: x - gap, y: y, width: sepW + gap, height: h)
                x += sepW
            }
            out.append(Rect(x: x, y: y, width: w, height: h))
            x += w + gap
        }
        return (out, sep)
    }
}
