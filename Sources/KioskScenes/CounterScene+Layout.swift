import KioskCore

/// Where a counter scene's parts go: the game clock's band at the top (when the scene has one,
/// `CounterScene+Clock.swift`), the counters side by side (or one above the other on a tall
/// screen) below it.
extension CounterScene {
    public func layout(size: Size) {
        // A new layout at the same size (after unblanking, a hotplug, another VT) keeps the
        // rendered digits: they are keyed by window size, colours and font size.
        if size != self.size {
            stamps.removeAll()
            digitTiles.removeAll()
        }
        self.size = size
        let region = layoutClock(size: size)
        let n = counters.count
        let sideBySide = size.width >= size.height
        let hasLabels = counters.contains { !$0.spec.label.isEmpty }
        for i in counters.indices {
            let area: Rect
            if sideBySide {
                let x0 = region.width * i / n, x1 = region.width * (i + 1) / n
                area = Rect(x: region.x + x0, y: region.y, width: x1 - x0, height: region.height)
            } else {
                let y0 = region.height * i / n, y1 = region.height * (i + 1) / n
                area = Rect(x: region.x, y: region.y + y0, width: region.width, height: y1 - y0)
            }
            counters[i].area = area
            let labelH = hasLabels ? area.height * 18 / 100 : 0
            counters[i].labelBox = Rect(x: area.x + area.width / 20, y: area.y + area.height / 10,
                                        width: area.width * 9 / 10, height: labelH)
            // Digit windows: aspect 0.62:1 with gaps of 0.08 of a window's height, centred below the label.
            let availW = Double(area.width) * 0.9
            let top = area.y + area.height / 10 + labelH + area.height / 30
            let availH = Double(area.maxY - area.height / 10 - top)
            let d = Double(digits)
            let h = max(4, Int(min(availH, availW / (d * 0.62 + (d - 1) * 0.08)).rounded(.down)) & ~1)
            let w = max(2, Int((Double(h) * 0.62).rounded()))
            let gap = Int((Double(h) * 0.08).rounded())
            let total = digits * w + (digits - 1) * gap
            let x0 = area.x + (area.width - total) / 2
            let y0 = top + (Int(availH) - h) / 2
            counters[i].windows = (0..<digits).map { Rect(x: x0 + $0 * (w + gap), y: y0, width: w, height: h) }
        }
        fontsFor = nil
        needsFull = true
    }

}
