import KioskCore
import KioskRender

/// What changed in a colour model.
public struct ColorChange: OptionSet, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let hue = ColorChange(rawValue: 1)
    public static let saturation = ColorChange(rawValue: 2)
    public static let brightness = ColorChange(rawValue: 4)
}

/// Told when the selected colour changes (which of hue, saturation, brightness did).
public protocol ColorModelObserver: AnyObject {
    func colorModel(_ model: ColorModel, didChange change: ColorChange)
}

/// The selected colour as hue (degrees, 0…360), saturation and brightness (0…1). `color` is derived from the three, or is exactly the colour set with `set(color:)`.
public final class ColorModel {
    public private(set) var hue: Double
    public private(set) var saturation: Double
    public private(set) var brightness: Double
    /// The colour strokes are drawn with.
    public private(set) var color: Color

    private var observers: [WeakColorObserver] = []
    private struct WeakColorObserver { weak var value: ColorModelObserver? }

    /// Starts at hue 60°, saturation 50 %, brightness 100 % (a light yellow, so the first colour is not black).
    public init(hue: Double = 60, saturation: Double = 0.5, brightness: Double = 1) {
        self.hue = hue; self.saturation = saturation; self.brightness = brightness
        self.color = Color(hue: hue, saturation: saturation, brightness: brightness)
    }

    public func addObserver(_ o: ColorModelObserver) {
        observers.removeAll { $0.value == nil }
        observers.append(WeakColorObserver(value: o))
    }
    private func notify(_ c: ColorChange) {
        guard !c.isEmpty else { return }
        for o in observers { o.value?.colorModel(self, didChange: c) }
    }

    /// Sets hue (degrees, clamped to 0…360) and saturation (clamped to 0…1).
    public func set(hue h: Double, saturation s: Double) {
        let h = min(max(h, 0), 360), s = min(max(s, 0), 1)
        var c: ColorChange = []
        if h != hue { c.insert(.hue) }
        if s != saturation { c.insert(.saturation) }
        hue = h; saturation = s
        color = Color(hue: hue, saturation: saturation, brightness: brightness)
        notify(c)
    }
    /// Sets brightness (clamped to 0…1).
    public func set(brightness b: Double) {
        let b = min(max(b, 0), 1)
        guard b != brightness else { return }
        brightness = b
        color = Color(hue: hue, saturation: saturation, brightness: brightness)
        notify(.brightness)
    }
    /// Selects an exact colour (a palette swatch); hue, saturation and brightness follow it.
    public func set(color newColor: Color) {
        let c = newColor.withAlpha(1)
        let hsb = c.hsb
        var ch: ColorChange = []
        if hsb.hue != hue { ch.insert(.hue) }
        if hsb.saturation != saturation { ch.insert(.saturation) }
        if hsb.brightness != brightness { ch.insert(.brightness) }
        hue = hsb.hue; saturation = hsb.saturation; brightness = hsb.brightness
        color = c
        notify(ch)
    }

    /// The labels the picker shows: `H 60°`, `S 50%`, `B 100%` and `#RRGGBB`.
    public var labels: [String] {
        ["H \(Int(hue.rounded()))°", "S \(Int((saturation * 100).rounded()))%",
         "B \(Int((brightness * 100).rounded()))%", color.hexString]
    }
}

/// The colour picker panel: a hue/saturation chart at
/// the current brightness — hue along x from 0° at the left to 360° at the right, saturation
/// along y from 100 % at the top to 0 % at the bottom — a circle marker at the current colour,
/// filled with it and outlined, a brightness slider and the H/S/B/hex labels.
///
/// Chart, marker and touch use one mapping (`chartHueSaturation`), so the marker sits under the
/// finger and is filled with the colour drawn there. The chart image is cached in a canvas and
/// rebuilt only when the brightness or the chart size changes (`chartBuilds` counts rebuilds).
public final class ColorPicker {
    /// The parts of the panel a touch can land on.
    public enum Part: Sendable, Equatable { case chart, slider, panel }

    public let model: ColorModel
    public private(set) var frame = Rect(x: 0, y: 0, width: 0, height: 0)
    public private(set) var chartRect = Rect(x: 0, y: 0, width: 0, height: 0)
    public private(set) var sliderRect = Rect(x: 0, y: 0, width: 0, height: 0)
    public private(set) var labelsRect = Rect(x: 0, y: 0, width: 0, height: 0)
    public private(set) var markerRadius: Double = 20
    /// How many times the chart image was computed.
    public private(set) var chartBuilds = 0

    private var chart: Canvas?
    private var chartBrightness: Double = -1
    private var theme = Theme.default
    // What the last draw left on screen.
    private var needsFull = true
    private var drawnMarker: Rect?
    private var drawnBrightness: Double = -1
    private var drawnSlider: (Double, Double, Double)?
    private var drawnLabels: [String] = []

    /// The picker draws what differs between the screen and `model` (it reads the model when drawn).
    public init(model: ColorModel) {
        self.model = model
    }

    /// Places the panel; the chart takes what the labels row and the slider leave.
    public func layout(in panel: Rect) {
        frame = panel
        let short = Double(min(panel.width, panel.height))
        markerRadius = min(max(short * 0.045, 12), 36)
        let pad = Int(markerRadius.rounded(.up)) + 6
        let labelsH = Int(min(max(short * 0.11, 28), 80))
        let sliderH = Int(min(max(short * 0.1, 32), 80))
        labelsRect = Rect(x: panel.x + pad, y: panel.y + pad / 2, width: panel.width - 2 * pad, height: labelsH)
        sliderRect = Rect(x: panel.x + pad, y: panel.maxY - pad / 2 - sliderH, width: panel.width - 2 * pad, height: sliderH)
        let top = labelsRect.maxY + pad, bottom = sliderRect.y - pad
        chartRect = Rect(x: panel.x + pad, y: top, width: max(1, panel.width - 2 * pad), height: max(1, bottom - top))
        needsFull = true
    }

    public func apply(theme: Theme) { self.theme = theme; needsFull = true }
    /// The next draw repaints the whole panel.
    public func invalidate() { needsFull = true }

    // MARK: the one mapping between chart pixels, touches and colours

    /// Hue (degrees) and saturation (0…1) shown by chart pixel (ix, iy) of a chart `size`:
    /// the colour at the pixel's centre.
    public static func chartHueSaturation(ix: Int, iy: Int, size: Size) -> (hue: Double, saturation: Double) {
        let h = (Double(ix) + 0.5) / Double(size.width) * 360
        let s = 1 - (Double(iy) + 0.5) / Double(size.height)
        return (h, s)
    }
    /// Where hue and saturation sit on the chart `chart` (the marker's centre).
    public static func chartPosition(hue: Double, saturation: Double, chart: Rect) -> Point {
        Point(x: Double(chart.x) + hue / 360 * Double(chart.width),
              y: Double(chart.y) + (1 - saturation) * Double(chart.height))
    }

    /// The part of the panel at a point (scene pixels), nil outside the panel.
    public func part(at p: Point) -> Part? {
        guard frame.contains(p) else { return nil }
        if chartRect.insetBy(-Int(markerRadius / 2)).contains(p) { return .chart }
        if sliderRect.insetBy(-Int(markerRadius / 2)).contains(p) { return .slider }
        return .panel
    }

    /// A touch on (or dragged from) `part` at `p`: picks hue and saturation of the chart pixel
    /// under the finger, or the brightness under it on the slider (in 1 % steps).
    public func touch(_ part: Part, at p: Point) {
        guard p.x.isFinite, p.y.isFinite, chartRect.width > 0, chartRect.height > 0 else { return }
        switch part {
        case .chart:
            let ix = min(max(Int((p.x - Double(chartRect.x)).rounded(.down)), 0), chartRect.width - 1)
            let iy = min(max(Int((p.y - Double(chartRect.y)).rounded(.down)), 0), chartRect.height - 1)
            let hs = Self.chartHueSaturation(ix: ix, iy: iy, size: Size(width: chartRect.width, height: chartRect.height))
            model.set(hue: hs.hue, saturation: hs.saturation)
        case .slider:
            let f = (p.x - Double(sliderRect.x)) / Double(max(sliderRect.width, 1))
            model.set(brightness: (min(max(f, 0), 1) * 100).rounded() / 100)
        case .panel:
            break
        }
    }

    // MARK: drawing

    /// The chart image at the current brightness, rebuilt only when brightness or size changed.
    /// Pixels are written directly (cairo_image_surface_get_data + cairo_surface_mark_dirty).
    public func chartImage() -> Canvas? {
        let size = Size(width: chartRect.width, height: chartRect.height)
        guard size.width > 0, size.height > 0 else { return nil }
        if let c = chart, c.size == size, chartBrightness == model.brightness { return c }
        guard let c = (chart?.size == size ? chart : nil) ?? (try? Canvas(size: size)) else { return nil }
        let b = model.brightness
        let px = c.pixels
        for y in 0..<size.height {
            let row = (px.base + y * px.stride).assumingMemoryBound(to: UInt32.self)
            for x in 0..<size.width {
                let hs = Self.chartHueSaturation(ix: x, iy: y, size: size)
                let rgb = Color(hue: hs.hue, saturation: hs.saturation, brightness: b).rgb8
                row[x] = 0xFF00_0000 | UInt32(rgb.r) << 16 | UInt32(rgb.g) << 8 | UInt32(rgb.b)
            }
        }
        c.markDirty(Rect(size: size))
        chart = c
        chartBrightness = b
        chartBuilds += 1
        return c
    }

    /// The panel inside its outline: everything but the full redraw stays in here.
    private var inner: Rect { frame.insetBy(4) }

    private var panelColor: Color { theme.palette.background.mixed(with: theme.palette.text, 0.08) }

    private var markerRect: Rect {
        let c = Self.chartPosition(hue: model.hue, saturation: model.saturation, chart: chartRect)
        let r = markerRadius + 4
        return Rect.covering(minX: c.x - r, minY: c.y - r, maxX: c.x + r, maxY: c.y + r)
    }

    /// Draws what changed since the last draw (everything after layout, theme or `invalidate`).
    public func draw(into canvas: Canvas) -> Damage {
        var damage = Damage()
        let full = needsFull
        if full {
            canvas.withClip(frame) {
                canvas.fill(frame, theme.palette.background)
                canvas.fillRoundedRect(x: Double(frame.x), y: Double(frame.y), width: Double(frame.width), height: Double(frame.height),
                                       radius: markerRadius / 2, panelColor)
                canvas.strokeRoundedRect(x: Double(frame.x) + 1.5, y: Double(frame.y) + 1.5, width: Double(frame.width) - 3,
                                         height: Double(frame.height) - 3, radius: markerRadius / 2, lineWidth: 3, theme.palette.text)
            }
            damage.add(frame)
            needsFull = false
        }
        // Chart and marker.
        let newMarker = markerRect
        let colorKey = (model.hue, model.saturation, model.brightness)
        if full || drawnBrightness != model.brightness {
            let region = chartRect.insetBy(-Int(markerRadius.rounded(.up)) - 5).intersection(inner)
            drawChartRegion(canvas, region)
            damage.add(region)
        } else if drawnMarker != newMarker {
            // The chart under the old marker, and the marker at its new place (each redraws
            // the chart and the marker clipped to its own box).
            for r in [drawnMarker, newMarker].compactMap({ $0?.intersection(inner) }) {
                drawChartRegion(canvas, r)
                damage.add(r)
            }
        } else if drawnSlider.map({ $0 != colorKey }) ?? true {
            // Same place, other colour (a swatch of the same hue and saturation): refill the marker.
            drawChartRegion(canvas, newMarker.intersection(inner))
            damage.add(newMarker.intersection(inner))
        }
        drawnMarker = newMarker
        drawnBrightness = model.brightness
        // Slider.
        if full || drawnSlider.map({ $0 != colorKey }) ?? true {
            drawSlider(canvas)
            damage.add(sliderRect.insetBy(-4).intersection(inner))
            drawnSlider = colorKey
        }
        // Labels.
        let labels = model.labels
        if full || labels != drawnLabels {
            drawLabels(canvas, labels)
            damage.add(labelsRect)
            drawnLabels = labels
        }
        return damage
    }

    private func drawChartRegion(_ canvas: Canvas, _ region: Rect) {
        guard !region.isEmpty else { return }
        canvas.withClip(region) {
            canvas.fill(region, panelColor)
            if let img = chartImage() { canvas.draw(img, x: Double(chartRect.x), y: Double(chartRect.y), clip: Damage([chartRect.intersection(region)])) }
            let c = Self.chartPosition(hue: model.hue, saturation: model.saturation, chart: chartRect)
            canvas.fillCircle(center: c, radius: markerRadius, model.color)
            canvas.strokeCircle(center: c, radius: markerRadius + 1.5, lineWidth: 3, theme.palette.text)
            canvas.strokeCircle(center: c, radius: markerRadius - 0.75, lineWidth: 1.5, theme.palette.background)
        }
    }

    private func drawSlider(_ canvas: Canvas) {
        let area = sliderRect.insetBy(-4).intersection(inner)
        canvas.withClip(area) {
            canvas.fill(area, panelColor)
            // The brightness ramp at the current hue and saturation, in 1 % steps.
            let w = Double(sliderRect.width)
            for i in 0..<100 {
                let x0 = Double(sliderRect.x) + w * Double(i) / 100, x1 = Double(sliderRect.x) + w * Double(i + 1) / 100
                canvas.fill(x: x0.rounded(.down), y: Double(sliderRect.y), width: x1.rounded(.down) - x0.rounded(.down) + 1,
                            height: Double(sliderRect.height),
                            Color(hue: model.hue, saturation: model.saturation, brightness: (Double(i) + 0.5) / 100))
            }
            let tx = Double(sliderRect.x) + w * model.brightness
            let tw = max(6, Double(sliderRect.height) * 0.18)
            canvas.fillRoundedRect(x: tx - tw / 2, y: Double(sliderRect.y) - 2, width: tw, height: Double(sliderRect.height) + 4,
                                   radius: tw / 3, theme.palette.background)
            canvas.strokeRoundedRect(x: tx - tw / 2, y: Double(sliderRect.y) - 2, width: tw, height: Double(sliderRect.height) + 4,
                                     radius: tw / 3, lineWidth: 2, theme.palette.text)
        }
    }

    private func drawLabels(_ canvas: Canvas, _ labels: [String]) {
        canvas.withClip(labelsRect) {
            canvas.fill(labelsRect, panelColor)
            let style = theme.fonts.body
            let cell = Double(labelsRect.width) / Double(labels.count)
            let px = canvas.fittingSize("#MMMMMM", style, maxPx: Double(labelsRect.height) * 0.8,
                                        width: cell * 0.92, height: Double(labelsRect.height) * 0.9)
            for (i, text) in labels.enumerated() {
                canvas.drawText(text, style, px: px, color: theme.palette.text,
                                in: (x: Double(labelsRect.x) + cell * Double(i), y: Double(labelsRect.y), width: cell, height: Double(labelsRect.height)))
            }
        }
    }
}
