import Testing
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

@Suite struct ColorPickerTests {
    func openPicker(size: Size = Size(width: 800, height: 600)) throws -> PaintRig {
        let rig = try PaintRig(size: size)
        rig.tapTool(.picker)
        #expect(rig.scene.pickerOpen)
        return rig
    }

    @Test func startsAtALightYellow() {
        let m = ColorModel()
        #expect(m.hue == 60 && m.saturation == 0.5 && m.brightness == 1)
        #expect(m.color.hexString == "#FFFF80")
        #expect(m.labels == ["H 60°", "S 50%", "B 100%", "#FFFF80"])
    }

    @Test func modelNotifiesWhatChanged() {
        final class Log: ColorModelObserver {
            var changes: [ColorChange] = []
            func colorModel(_ model: ColorModel, didChange change: ColorChange) { changes.append(change) }
        }
        let m = ColorModel(), log = Log()
        m.addObserver(log)
        m.set(hue: 120, saturation: 0.5)
        m.set(brightness: 0.25)
        m.set(brightness: 0.25)                  // no change, no message
        m.set(color: .red)
        #expect(log.changes.map(\.rawValue) == [ColorChange.hue.rawValue, ColorChange.brightness.rawValue,
                                                ColorChange([.hue, .saturation, .brightness]).rawValue])
        #expect(m.labels == ["H 0°", "S 100%", "B 100%", "#FF0000"])
        m.set(hue: 400, saturation: -1)          // clamped
        #expect(m.hue == 360 && m.saturation == 0)
    }

    @Test func chartOrientationIsHueAlongXAndSaturationUpward() throws {
        let rig = try openPicker()
        let p = rig.scene.picker, chart = p.chartRect
        let img = try #require(p.chartImage())
        // Top-left: hue ≈ 0°, full saturation: red. Top, a third across: hue ≈ 120°: green.
        #expect(Pixels.distance(img.color(x: 0, y: 0), .red) <= 3)
        #expect(Pixels.distance(img.color(x: chart.width / 3, y: 0), .green) <= 6)
        // Bottom row: saturation ≈ 0: white at brightness 100 %.
        #expect(Pixels.distance(img.color(x: chart.width / 2, y: chart.height - 1), .white) <= 3)
        // What the screen shows inside the chart (away from the marker) is the chart image.
        #expect(rig.screen.color(x: chart.x + 5, y: chart.y + 5) == img.color(x: 5, y: 5))
    }

    @Test func touchingTheChartPicksTheColourUnderTheFinger() throws {
        let rig = try openPicker()
        let p = rig.scene.picker, chart = p.chartRect
        let img = try #require(p.chartImage())
        for (fx, fy) in [(0.2, 0.3), (0.75, 0.1), (0.5, 0.85), (0.05, 0.6)] {
            let finger = Point(x: Double(chart.x) + fx * Double(chart.width) + 0.3, y: Double(chart.y) + fy * Double(chart.height) + 0.6)
            rig.send([rig.touch(.down, slot: 2, px: finger), rig.touch(.up, slot: 2, px: finger)])
            let picked = rig.scene.colors.color
            let ix = Int(finger.x) - chart.x, iy = Int(finger.y) - chart.y
            // The chart pixel under the finger is the picked colour.
            #expect(img.color(x: ix, y: iy) == Color(r8: picked.rgb8.r, g8: picked.rgb8.g, b8: picked.rgb8.b))
            // The marker sits under the finger, filled with that colour.
            let m = ColorPicker.chartPosition(hue: rig.scene.colors.hue, saturation: rig.scene.colors.saturation, chart: chart)
            #expect(abs(m.x - finger.x) <= 0.5 && abs(m.y - finger.y) <= 0.5)
            #expect(Pixels.distance(rig.color(finger), picked) <= 1)
            #expect(abs(rig.scene.colors.hue - fx * 360) < 1.5)
            #expect(abs(rig.scene.colors.saturation - (1 - fy)) < 0.01)
            // And strokes drawn now use it (toolbar picker button shows it too).
            let btn = rig.center(rig.scene.toolbar.rect(of: .picker)!)
            #expect(Pixels.distance(rig.color(Point(x: btn.x, y: btn.y - 10)), picked) <= 1)
        }
        // Dragging outside the chart clamps to its edge.
        let inside = Point(x: Double(chart.x) + 20, y: Double(chart.y) + 20)
        rig.send([rig.touch(.down, slot: 2, px: inside), rig.touch(.motion, slot: 2, px: Point(x: Double(chart.x) - 5, y: Double(chart.y) + 20))])
        #expect(rig.scene.colors.hue < 360.0 / Double(chart.width))
    }

    @Test func brightnessRebuildsTheChartOnceAndMovingTheMarkerDoesNot() throws {
        let rig = try openPicker()
        let p = rig.scene.picker
        #expect(p.chartBuilds == 1)
        let chart = p.chartRect
        for f in [0.1, 0.3, 0.6, 0.9] {
            let pt = Point(x: Double(chart.x) + f * Double(chart.width), y: Double(chart.y) + f * Double(chart.height))
            rig.send([rig.touch(.down, slot: 2, px: pt), rig.touch(.up, slot: 2, px: pt)])
        }
        #expect(p.chartBuilds == 1)
        // Marker moves damage the chart only around the old and the new marker.
        let onChart = rig.lastDamage.rects.reduce(0) { $0 + $1.intersection(chart).area }
        #expect(onChart > 0 && onChart < chart.area / 10, "\(onChart) of \(chart.area) chart pixels damaged")

        let slider = p.sliderRect
        let at40 = Point(x: Double(slider.x) + 0.4 * Double(slider.width), y: Double(slider.y) + Double(slider.height) / 2)
        rig.send([rig.touch(.down, slot: 3, px: at40), rig.touch(.up, slot: 3, px: at40)])
        #expect(rig.scene.colors.brightness == 0.4)
        #expect(p.chartBuilds == 2)
        let img = try #require(p.chartImage())
        // At 40 % the brightest chart pixel is 40 % of 255.
        #expect(abs(img.color(x: 0, y: 0).rgb8.r - 102) <= 1)
        #expect(rig.scene.colors.labels[2] == "B 40%")
        // Several brightness changes between two frames rebuild once.
        let at70 = Point(x: Double(slider.x) + 0.7 * Double(slider.width), y: at40.y)
        let at80 = Point(x: Double(slider.x) + 0.8 * Double(slider.width), y: at40.y)
        rig.send([rig.touch(.down, slot: 3, px: at70), rig.touch(.motion, slot: 3, px: at80), rig.touch(.up, slot: 3, px: at80)])
        #expect(p.chartBuilds == 3)
        #expect(rig.scene.colors.brightness == 0.8)
        // A theme change redraws but does not rebuild; a new size does.
        rig.scene.apply(theme: .dark)
        rig.send([])
        #expect(p.chartBuilds == 3)
        rig.scene.layout(size: Size(width: 800, height: 700))
        _ = p.chartImage()
        #expect(p.chartBuilds == 4)
    }

    @Test func labelsShowTheValuesAndChangeWithTheColour() throws {
        let rig = try openPicker()
        let labels = rig.scene.picker.labelsRect
        #expect(rig.scene.colors.labels == ["H 60°", "S 50%", "B 100%", "#FFFF80"])
        // Text is drawn in the theme's text colour inside the labels row.
        #expect(Pixels.count(Theme.light.palette.text, in: rig.screen, rect: labels, tolerance: 40) > 50)
        let hexCell = Rect(x: labels.x + labels.width * 3 / 4, y: labels.y, width: labels.width / 4, height: labels.height)
        let hueCell = Rect(x: labels.x, y: labels.y, width: labels.width / 4, height: labels.height)
        let before = try Canvas(size: rig.size)
        before.draw(rig.screen)
        // Pick the top-left corner: hue 0°-ish, saturation 100 %-ish.
        let chart = rig.scene.picker.chartRect
        let corner = Point(x: Double(chart.x), y: Double(chart.y))
        rig.send([rig.touch(.down, slot: 2, px: corner), rig.touch(.up, slot: 2, px: corner)])
        let l = rig.scene.colors.labels
        #expect(l[0] == "H 0°" && l[2] == "B 100%")
        #expect(l[3] == rig.scene.colors.color.hexString && l[3].hasPrefix("#FF"))
        #expect(Pixels.differingPixels(before, rig.screen, in: hexCell) > 20)
        #expect(Pixels.differingPixels(before, rig.screen, in: hueCell) > 20)
        // The same label redrawn from scratch looks the same: what is on screen is what the labels say.
        rig.scene.picker.invalidate()
        let again = try Canvas(size: rig.size)
        again.draw(rig.screen)
        rig.send([])
        _ = rig.scene.draw(into: rig.screen)
        #expect(Pixels.differingPixels(again, rig.screen, in: labels) == 0)
    }

    @Test func touchingOutsideThePanelClosesItWithoutDrawing() throws {
        let rig = try openPicker(size: Size(width: 800, height: 600))
        let panel = rig.scene.picker.frame
        let outside = Point(x: Double(panel.x) / 2, y: 40)
        rig.send([rig.touch(.down, px: outside), rig.touch(.motion, px: Point(x: outside.x, y: 200)), rig.touch(.up, px: Point(x: outside.x, y: 200))])
        #expect(!rig.scene.pickerOpen)
        #expect(rig.scene.strokeCount == 0)
        let bg = Theme.light.palette.background
        #expect(Pixels.count(bg, in: rig.screen, rect: rig.scene.paintArea) == rig.scene.paintArea.area)
        // A finger already drawing when the picker opens keeps drawing, but never over the panel;
        // what it drew under the panel shows when the panel closes.
        rig.scene.colors.set(color: paintInk)
        let y = Double(panel.y) + Double(panel.height) / 2
        rig.send([rig.touch(.down, slot: 5, px: Point(x: 10, y: y)), rig.touch(.motion, slot: 5, px: Point(x: 30, y: y))])
        rig.tapTool(.picker)
        let inPanel = Point(x: Double(panel.x) + 20, y: y)
        let panelBefore = rig.color(inPanel)
        rig.send([rig.touch(.motion, slot: 5, px: Point(x: 200, y: y)), rig.touch(.motion, slot: 5, px: Point(x: 400, y: y))])
        #expect(rig.color(Point(x: 20, y: y)) == paintInk)
        #expect(rig.color(inPanel) == panelBefore && panelBefore != paintInk)
        rig.send([rig.touch(.up, slot: 5, px: Point(x: 400, y: y))])
        #expect(rig.color(inPanel) == panelBefore)
        rig.tapTool(.picker)
        #expect(!rig.scene.pickerOpen)
        #expect(rig.color(inPanel) == paintInk && rig.color(Point(x: 390, y: y)) == paintInk)
        let ref = try paintFullRedraw(size: rig.size, background: bg, strokes: rig.scene.painting.strokes)
        #expect(Pixels.differingPixels(rig.screen, ref, in: rig.scene.paintArea) == 0)
    }

    @Test func aSwatchSetsTheModelExactly() throws {
        let rig = try openPicker()
        rig.tapTool(.swatch(0))
        let c = Theme.light.palette.swatches[0]
        #expect(rig.scene.colors.color == c)
        #expect(rig.scene.colors.labels[3] == c.hexString)
        let hsb = c.hsb
        #expect(rig.scene.colors.hue == hsb.hue && rig.scene.colors.brightness == hsb.brightness)
    }
}
