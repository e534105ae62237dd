import Foundation
import KioskCore
import KioskRender

/// Draws the frame-time distributions (kioskd vs peer) as horizontal box plots on a log time
/// axis, one panel per frame size, with KioskRender's Canvas (cairo + pango), and writes a PNG.
enum Plot {
    static let kioskdColor = Color(hex: "#1565C0")!
    static let peerColor = Color(hex: "#EF6C00")!
    static let ink = Color(hex: "#212121")!
    static let grid = Color(hex: "#D0D0D0")!
    static let font = FontStyle(family: "DejaVu Sans", size: 16)
    static let bold = FontStyle(family: "DejaVu Sans", weight: .bold, size: 16)

    /// The rows worth plotting: timed figures that have samples.
    static let keys = ["clock.tick", "counter.roll1", "counter.roll6", "counter.full", "paint.segment.10",
                       "paint.segment.10000", "paint.undo", "paint.undo_rebuild", "paint.touch_to_flip", "startup.clock", "daemon.ready.clock", "startup.paint", "daemon.ready.paint"]

    static func draw(_ res: Results, to path: String) throws {
        let sizes = Array(Set(res.rows.compactMap { r -> Size? in keys.contains(r.key) ? r.size : nil })).sorted { $0.area < $1.area }
        let rowsBySize = sizes.map { s in (s, keys.compactMap { k in res.row(k, s) }.filter { $0.kioskd?.samples != nil }) }
        let rowH = 46.0, top = 90.0, panelHead = 56.0, left = 330.0, right = 60.0, axisH = 44.0
        let width = 1600
        let panelHeights = rowsBySize.map { panelHead + Double($0.1.count) * rowH + axisH }
        let height = Int(top + panelHeights.reduce(0, +) + 40)
        let c = try Canvas(size: Size(width: width, height: max(height, 300)))
        c.clear(.white)
        c.drawText("kioskd vs pygame peer: time per operation (log scale)", bold, px: 24, color: ink, x: 24, y: 18)
        c.drawText("box: 25th–75th percentile, bar: median, whiskers: 1st–99th percentile", font, px: 16, color: ink, x: 24, y: 52)
        legend(c, x: Double(width) - 360, y: 22)

        // One log axis for the whole picture so panels compare.
        let all = rowsBySize.flatMap { $0.1 }.flatMap { r in [r.kioskd?.samples, r.peer?.samples].compactMap { $0 } }
        let lo = pow(10, (log10(max(all.map { $0.percentile(0.01) }.min() ?? 0.001, 1e-4))).rounded(.down))
        let hi = pow(10, (log10(max(all.map { $0.percentile(0.99) }.max() ?? 1000, lo * 10))).rounded(.up))
        let x0 = left, x1 = Double(width) - right
        func xOf(_ ms: Double) -> Double {
            let v = min(max(ms, lo), hi)
            return x0 + (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * (x1 - x0)
        }

        var y = top
        for ((size, rows), ph) in zip(rowsBySize, panelHeights) {
            c.drawText("\(size)", bold, px: 20, color: ink, x: 24, y: y + 12)
            let gy0 = y + panelHead - 8, gy1 = y + ph - axisH
            var d = lo
            while d <= hi * 1.0001 {
                for m in 1...9 {
                    let v = d * Double(m)
                    guard v <= hi * 1.0001 else { break }
                    let gx = xOf(v)
                    c.strokePath([Point(x: gx, y: gy0), Point(x: gx, y: gy1)], width: m == 1 ? 1.5 : 0.5, m == 1 ? grid : grid.withAlpha(0.5), smooth: false)
                }
                let label = d >= 1 ? "\(Int(d)) ms" : "\(fmt(d, max(0, Int(-log10(d).rounded())))) ms"
                c.drawText(label, font, px: 15, color: ink, in: (x: xOf(d) - 50, y: gy1 + 6, width: 100, height: 20))
                d *= 10
            }
            var ry = y + panelHead
            for r in rows {
                c.drawText(label(r), font, px: 16, color: ink, x: 24, y: ry + 10)
                if let s = r.kioskd?.samples { box(c, s, y: ry + 6, h: 14, kioskdColor, xOf) }
                if let s = r.peer?.samples { box(c, s, y: ry + 24, h: 14, peerColor, xOf) }
                ry += rowH
            }
            y += ph
        }
        try c.writePNG(to: path)
    }

    static func label(_ r: Row) -> String {
        "\(r.section): \(r.name)"
    }

    static func legend(_ c: Canvas, x: Double, y: Double) {
        c.fill(x: x, y: y + 4, width: 28, height: 14, kioskdColor)
        c.drawText("kioskd", font, px: 16, color: ink, x: x + 36, y: y)
        c.fill(x: x + 140, y: y + 4, width: 28, height: 14, peerColor)
        c.drawText("pygame peer", font, px: 16, color: ink, x: x + 176, y: y)
    }

    static func box(_ c: Canvas, _ s: Samples, y: Double, h: Double, _ color: Color, _ xOf: (Double) -> Double) {
        let p1 = xOf(s.percentile(0.01)), p25 = xOf(s.percentile(0.25)), p50 = xOf(s.median)
        let p75 = xOf(s.percentile(0.75)), p99 = xOf(s.percentile(0.99))
        let mid = y + h / 2
        c.strokePath([Point(x: p1, y: mid), Point(x: p25, y: mid)], width: 1.5, color, smooth: false)
        c.strokePath([Point(x: p75, y: mid), Point(x: p99, y: mid)], width: 1.5, color, smooth: false)
        c.strokePath([Point(x: p1, y: y + 2), Point(x: p1, y: y + h - 2)], width: 1.5, color, smooth: false)
        c.strokePath([Point(x: p99, y: y + 2), Point(x: p99, y: y + h - 2)], width: 1.5, color, smooth: false)
        c.fill(x: p25, y: y, width: max(p75 - p25, 2), height: h, color.withAlpha(0.35))
        c.strokePath([Point(x: p50, y: y - 1), Point(x: p50, y: y + h + 1)], width: 3, color, smooth: false)
    }
}
