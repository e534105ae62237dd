import Testing
import Foundation
import Logging
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

/// A paint scene on an in-memory screen, driven like the scene manager drives it.
final class PaintRig {
    let scene: PaintScene
    let screen: Canvas
    var now = WallTime(realtimeNs: 1_700_000_000_000_000_000, monotonicNs: 5_000_000_000)
    var lastDamage = Damage()

    init(size: Size = Size(width: 400, height: 300), settings: PaintSettings = PaintSettings(), theme: Theme = .light,
         dataDirectory: String = NSTemporaryDirectory()) throws {
        scene = PaintScene(name: "paint", settings: settings, dataDirectory: dataDirectory)
        screen = try Canvas(size: size)
        screen.clear(.black)
        scene.apply(theme: theme)
        scene.layout(size: size)
        scene.didAppear(now: now)
        lastDamage = scene.draw(into: screen)
    }

    var size: Size { screen.size }
    /// Normalised position of a scene pixel.
    func norm(_ p: Point) -> Point { Point(x: p.x / Double(size.width), y: p.y / Double(size.height)) }

    @discardableResult
    func send(_ events: [InputEvent], drawEach: Bool = false) -> Bool {
        var changed = false
        for e in events {
            now = now.advanced(byNs: 8_000_000)
            changed = scene.handle(e, now: now) || changed
            if drawEach { lastDamage = scene.draw(into: screen) }
        }
        if !drawEach { lastDamage = scene.draw(into: screen) }
        return changed
    }
    func touch(_ phase: TouchPhase, slot: Int = 0, px p: Point) -> InputEvent {
        let n = norm(p)
        return .touch(TouchEvent(phase, slot: slot, x: n.x, y: n.y))
    }
    /// A tap (down + up) at a scene pixel.
    func tap(_ p: Point, slot: Int = 9) {
        send([touch(.down, slot: slot, px: p), touch(.up, slot: slot, px: p)])
    }
    func center(_ r: Rect) -> Point { Point(x: Double(r.x) + Double(r.width) / 2, y: Double(r.y) + Double(r.height) / 2) }
    func tapTool(_ tool: PaintTool) {
        tap(center(scene.toolbar.rect(of: tool)!))
    }
    func color(_ p: Point) -> Color { screen.color(x: Int(p.x), y: Int(p.y)) }
}

/// Pixel points along a path given in pixels (the points and the midpoints between them).
func pathSamples(_ path: [Point]) -> [Point] {
    var out: [Point] = []
    for (i, p) in path.enumerated() {
        out.append(p)
        if i + 1 < path.count { out.append(Point(x: (p.x + path[i + 1].x) / 2, y: (p.y + path[i + 1].y) / 2)) }
    }
    return out
}

func paintLine(from a: Point, to b: Point, count: Int = 12) -> [Point] {
    (0..<count).map { i in
        let t = Double(i) / Double(count - 1)
        return Point(x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t)
    }
}

/// The same strokes drawn from scratch: background, then every stroke in order.
func paintFullRedraw(size: Size, background: Color, strokes: [Stroke]) throws -> Canvas {
    let c = try Canvas(size: size)
    c.clear(background)
    for s in strokes { c.strokePath(s.points, width: s.width, s.color, smooth: true) }
    return c
}

let paintInk = Color(hex: "#C2185B")!
let paintInk2 = Color(hex: "#1565C0")!

@Suite struct PaintSceneTests {
    let bg = Theme.light.palette.background   // #FAFAFA

    @Test func twoFingersDrawTheirOwnStrokesWhereTheyWere() throws {
        let rig = try PaintRig()
        rig.scene.colors.set(color: paintInk)
        let a = paintLine(from: Point(x: 40, y: 60), to: Point(x: 360, y: 80))
        let b = paintLine(from: Point(x: 60, y: 200), to: Point(x: 340, y: 150))
        // Interleaved: down 0, down 1, then motions alternating, then up 1, up 0.
        var events = [rig.touch(.down, slot: 0, px: a[0]), rig.touch(.down, slot: 1, px: b[0])]
        for i in 1..<a.count { events += [rig.touch(.motion, slot: 0, px: a[i]), rig.touch(.motion, slot: 1, px: b[i])] }
        events += [rig.touch(.up, slot: 1, px: b.last!), rig.touch(.up, slot: 0, px: a.last!)]
        #expect(rig.send(events, drawEach: true))

        #expect(rig.scene.strokeCount == 2)
        let strokes = rig.scene.painting.strokes
        // Finished order: finger 1 lifted first.
        #expect(strokes[0].points.count == b.count && strokes[1].points.count == a.count)
        for (p, q) in zip(strokes[1].points, a) { #expect(abs(p.x - q.x) < 1e-6 && abs(p.y - q.y) < 1e-6) }
        #expect(strokes.allSatisfy { $0.width == 20 && $0.color == paintInk })
        for p in pathSamples(a) + pathSamples(b) { #expect(rig.color(p) == paintInk, "stroke pixel at \(p)") }
        // Away from both paths: background.
        for p in [Point(x: 200, y: 20), Point(x: 200, y: 120), Point(x: 20, y: 230), Point(x: 380, y: 240)] {
            #expect(rig.color(p) == bg, "background at \(p)")
        }
    }

    @Test func aCancelledTouchKeepsItsStroke() throws {
        let rig = try PaintRig()
        rig.scene.colors.set(color: paintInk)
        let a = paintLine(from: Point(x: 50, y: 100), to: Point(x: 300, y: 100))
        var events = [rig.touch(.down, px: a[0])]
        events += a.dropFirst().map { rig.touch(.motion, px: $0) }
        events.append(rig.touch(.cancel, px: a.last!))
        rig.send(events)
        #expect(rig.scene.strokeCount == 1)
        #expect(rig.scene.painting.active.isEmpty)
        for p in pathSamples(a) { #expect(rig.color(p) == paintInk) }
    }

    func drawStroke(_ rig: PaintRig, _ path: [Point], slot: Int = 0) {
        var events = [rig.touch(.down, slot: slot, px: path[0])]
        events += path.dropFirst().map { rig.touch(.motion, slot: slot, px: $0) }
        events.append(rig.touch(.up, slot: slot, px: path.last!))
        rig.send(events)
    }

    @Test func undoRemovesExactlyTheLastStrokeAndRedoBringsItBack() throws {
        let rig = try PaintRig()
        let first = paintLine(from: Point(x: 40, y: 50), to: Point(x: 360, y: 50))
        let second = paintLine(from: Point(x: 200, y: 20), to: Point(x: 200, y: 230))
        rig.scene.colors.set(color: paintInk)
        drawStroke(rig, first)
        rig.scene.colors.set(color: paintInk2)
        drawStroke(rig, second)
        let crossing = Point(x: 200, y: 50)
        #expect(rig.color(crossing) == paintInk2)      // the second stroke is on top
        let rebuilds = rig.scene.layerRebuilds

        rig.tapTool(.undo)
        #expect(rig.scene.strokeCount == 1)
        #expect(rig.scene.layerRebuilds == rebuilds)   // the layer pixels under the stroke were put back
        for p in pathSamples(second) where abs(p.y - 50) > 15 { #expect(rig.color(p) == bg, "undone stroke gone at \(p)") }
        for p in pathSamples(first) { #expect(rig.color(p) == paintInk, "earlier stroke stays at \(p)") }
        let area = rig.scene.paintArea
        #expect(Pixels.differingPixels(rig.screen, try paintFullRedraw(size: rig.size, background: bg, strokes: rig.scene.painting.strokes), in: area) == 0)
        #expect(rig.lastDamage.area < rig.size.area / 4)     // only the stroke's box (and the toolbar buttons)

        rig.tapTool(.redo)
        #expect(rig.scene.strokeCount == 2)
        #expect(rig.scene.layerRebuilds == rebuilds)   // redo draws one stroke onto the layer
        for p in pathSamples(second) { #expect(rig.color(p) == paintInk2) }
        #expect(Pixels.differingPixels(rig.screen, try paintFullRedraw(size: rig.size, background: bg, strokes: rig.scene.painting.strokes), in: area) == 0)
        #expect(rig.lastDamage.area < rig.size.area / 4)

        // When the kept pixels are gone (the layer was rebuilt for a theme), undo rebuilds once.
        rig.scene.apply(theme: .light)
        rig.send([])
        let rebuilt = rig.scene.layerRebuilds
        #expect(rebuilt == rebuilds + 1)
        rig.tapTool(.undo)
        #expect(rig.scene.layerRebuilds == rebuilt + 1)
        #expect(rig.lastDamage == .full(rig.size))
        #expect(Pixels.differingPixels(rig.screen, try paintFullRedraw(size: rig.size, background: bg, strokes: rig.scene.painting.strokes), in: area) == 0)
        rig.tapTool(.redo)

        // Nothing more to redo; undo twice empties; a third undo does nothing.
        #expect(!rig.scene.redo())
        #expect(rig.scene.undo() && rig.scene.undo())
        #expect(!rig.scene.undo())
        rig.send([])
        #expect(Pixels.count(bg, in: rig.screen, rect: rig.scene.paintArea) == rig.scene.paintArea.area)
    }

    @Test func clearEmptiesThePainting() throws {
        let rig = try PaintRig()
        rig.scene.colors.set(color: paintInk)
        drawStroke(rig, paintLine(from: Point(x: 40, y: 50), to: Point(x: 360, y: 200)))
        drawStroke(rig, paintLine(from: Point(x: 40, y: 200), to: Point(x: 360, y: 50)))
        #expect(Pixels.count(paintInk, in: rig.screen, rect: rig.scene.paintArea) > 1000)
        rig.tapTool(.clear)
        #expect(rig.scene.strokeCount == 0)
        #expect(!rig.scene.painting.canUndo)
        #expect(Pixels.count(bg, in: rig.screen, rect: rig.scene.paintArea) == rig.scene.paintArea.area)
        #expect(rig.lastDamage == .full(rig.size))
        #expect(rig.scene.statusSummary == "0 strokes")
    }

    @Test func incrementalDrawingEqualsAFullRedraw() throws {
        let size = Size(width: 640, height: 480)
        let rig = try PaintRig(size: size)
        // Curvy strokes of several colours and widths, some overlapping, two at once.
        func wave(_ y0: Double, _ amp: Double, _ phase: Double) -> [Point] {
            (0..<40).map { i in Point(x: 30 + Double(i) * 14.5, y: y0 + amp * sin(Double(i) * 0.35 + phase)) }
        }
        let paths = [wave(100, 40, 0), wave(180, 60, 1), wave(260, 30, 2), wave(330, 50, 0.5)]
        let colors = [paintInk, paintInk2, Theme.light.palette.secondary, Theme.light.palette.text]
        for k in stride(from: 0, to: paths.count, by: 2) {
            rig.scene.colors.set(color: colors[k])
            rig.tapTool(.width(k % 3))
            var events = [rig.touch(.down, slot: 0, px: paths[k][0]), rig.touch(.down, slot: 1, px: paths[k + 1][0])]
            for i in 1..<paths[k].count {
                events += [rig.touch(.motion, slot: 0, px: paths[k][i]), rig.touch(.motion, slot: 1, px: paths[k + 1][i])]
            }
            events += [rig.touch(.up, slot: 0, px: paths[k].last!), rig.touch(.up, slot: 1, px: paths[k + 1].last!)]
            rig.send(events, drawEach: true)
        }
        #expect(rig.scene.strokeCount == 4)
        let ref = try paintFullRedraw(size: size, background: bg, strokes: rig.scene.painting.strokes)
        #expect(Pixels.differingPixels(rig.screen, ref, in: rig.scene.paintArea) == 0)
        #expect(rig.scene.layerRebuilds == 1)   // only the first frame built the layer
        // Undo stroke by stroke (they overlap): each step equals a full redraw of what is left.
        for left in stride(from: 3, through: 0, by: -1) {
            rig.tapTool(.undo)
            #expect(rig.scene.strokeCount == left)
            let r = try paintFullRedraw(size: size, background: bg, strokes: rig.scene.painting.strokes)
            #expect(Pixels.differingPixels(rig.screen, r, in: rig.scene.paintArea) == 0, "after undo to \(left) strokes")
        }
        #expect(rig.scene.layerRebuilds == 1)
    }

    @Test func whileAFingerIsDownTheInkMatchesAFullRedrawUpToAntiAliasing() throws {
        let rig = try PaintRig(size: Size(width: 640, height: 480))
        rig.scene.colors.set(color: paintInk)
        let path = (0..<30).map { i in Point(x: 40 + Double(i) * 18, y: 200 + 80 * sin(Double(i) * 0.4)) }
        var events = [rig.touch(.down, px: path[0])]
        events += path.dropFirst().map { rig.touch(.motion, px: $0) }
        rig.send(events, drawEach: true)
        let live = rig.scene.painting.active[0]!
        let ref = try paintFullRedraw(size: rig.size, background: bg, strokes: [live])
        var worst = 0, differing = 0, visibly = 0
        let area = rig.scene.paintArea
        for y in area.y..<area.maxY {
            for x in area.x..<area.maxX {
                let d = Pixels.distance(rig.screen.color(x: x, y: y), ref.color(x: x, y: y))
                if d > 0 { differing += 1; worst = max(worst, d) }
                if d > 16 { visibly += 1 }
            }
        }
        // The live stroke is the round brush laid along the curve (PaintBrush), not cairo's
        // stroker: edge pixels are anti-aliased a few levels differently (cairo flattens the curve
        // and its round ends to within 0.1 px), and the body is exactly the ink.
        let ink = Pixels.count(paintInk, in: ref, rect: area)
        #expect(worst <= 40, "\(differing) pixels differ, by up to \(worst)")
        #expect(differing < ink / 4, "\(differing) pixels differ, \(ink) ink pixels")
        #expect(visibly * 100 < ink, "\(visibly) pixels differ by more than 16 levels, \(ink) ink pixels")
        #expect(abs(Pixels.count(paintInk, in: rig.screen, rect: area) - ink) * 100 < ink)
        // Once the finger lifts, the stroke comes from the layer: exactly the full redraw.
        rig.send([rig.touch(.up, px: path.last!)])
        let done = try paintFullRedraw(size: rig.size, background: bg, strokes: rig.scene.painting.strokes)
        #expect(Pixels.differingPixels(rig.screen, done, in: area) == 0)
        for p in pathSamples(Array(path.prefix(29))) { #expect(rig.color(p) == paintInk) }
    }

    @Test func aSegmentDamagesOnlyItsSmallBoundsAndCoversEveryChangedPixel() throws {
        let size = Size(width: 800, height: 600)
        let rig = try PaintRig(size: size)
        rig.scene.colors.set(color: paintInk)
        let path = paintLine(from: Point(x: 100, y: 300), to: Point(x: 500, y: 200), count: 20)
        var events = [rig.touch(.down, px: path[0])]
        events += path.dropFirst().prefix(10).map { rig.touch(.motion, px: $0) }
        rig.send(events)
        let before = try Canvas(size: size)
        before.draw(rig.screen)
        rig.send([rig.touch(.motion, px: path[11])])
        let d = rig.lastDamage
        #expect(!d.isEmpty)
        #expect(d.area * 50 < size.area, "segment damage \(d) is \(d.area) px")
        #expect(d.rects.contains { $0.contains(path[11]) } && d.rects.contains { $0.contains(path[10]) })
        // Every pixel that changed lies inside the damage.
        var changed = 0
        for y in 0..<size.height {
            for x in 0..<size.width where before.color(x: x, y: y) != rig.screen.color(x: x, y: y) {
                changed += 1
                #expect(d.rects.contains { $0.contains(Point(x: Double(x) + 0.5, y: Double(y) + 0.5)) }, "changed pixel \(x),\(y) outside \(d)")
            }
        }
        #expect(changed > 0)
    }

    @Test func segmentCostDoesNotGrowWithHistory() throws {
        func cost(history: Int) throws -> (paths: Int, rebuilds: Int, damage: Int) {
            let rig = try PaintRig()
            for i in 0..<history {
                let p = Point(x: Double(20 + (i * 37) % 360), y: Double(20 + (i * 53) % 200))
                rig.scene.painting.startStroke(slot: 0, at: p, color: paintInk2, width: 8)
                rig.scene.painting.continueStroke(slot: 0, to: Point(x: p.x + 5, y: p.y + 3))
                rig.scene.painting.endStroke(slot: 0)
            }
            rig.send([])
            rig.send([rig.touch(.down, slot: 1, px: Point(x: 100, y: 100)), rig.touch(.motion, slot: 1, px: Point(x: 110, y: 104))])
            let paths = rig.scene.strokePathsDrawn, rebuilds = rig.scene.layerRebuilds
            rig.send([rig.touch(.motion, slot: 1, px: Point(x: 120, y: 110))])
            return (rig.scene.strokePathsDrawn - paths, rig.scene.layerRebuilds - rebuilds, rig.lastDamage.area)
        }
        let small = try cost(history: 10), large = try cost(history: 10_000)
        #expect(small.paths == 1 && large.paths == 1)
        #expect(small.rebuilds == 0 && large.rebuilds == 0)
        #expect(small.damage == large.damage)
    }

    @Test func touchesThatStartOnTheToolbarDoNotDraw() throws {
        let rig = try PaintRig()
        let sw = rig.scene.toolbar.rect(of: .swatch(1))!
        let start = rig.center(sw)
        rig.send([rig.touch(.down, px: start), rig.touch(.motion, px: Point(x: start.x, y: 100)),
                  rig.touch(.motion, px: Point(x: start.x + 50, y: 60)), rig.touch(.up, px: Point(x: start.x + 50, y: 60))])
        #expect(rig.scene.strokeCount == 0)
        #expect(Pixels.count(bg, in: rig.screen, rect: rig.scene.paintArea) == rig.scene.paintArea.area)
        #expect(rig.scene.colors.color == Theme.light.palette.swatches[1])   // the swatch was chosen
        // The next stroke uses it and the width button chosen.
        rig.tapTool(.width(2))
        let path = paintLine(from: Point(x: 60, y: 120), to: Point(x: 330, y: 120))
        drawStroke(rig, path)
        #expect(rig.scene.painting.strokes.last?.width == 40)
        #expect(rig.color(Point(x: 200, y: 120 + 17)) == Theme.light.palette.swatches[1])
        #expect(rig.color(Point(x: 200, y: 120 + 24)) == bg)
    }

    @Test func toolbarShowsTheSelectionAndDamagesOnlyChangedButtons() throws {
        let rig = try PaintRig()
        let r0 = rig.scene.toolbar.rect(of: .swatch(0))!, r2 = rig.scene.toolbar.rect(of: .swatch(2))!
        let before = try Canvas(size: rig.size)
        before.draw(rig.screen)
        rig.tapTool(.swatch(2))
        // The chosen swatch is outlined now; the picker button shows the new colour; nothing else moved.
        #expect(Pixels.differingPixels(before, rig.screen, in: r2) > 0)
        #expect(Pixels.differingPixels(before, rig.screen, in: r0) == 0)
        #expect(Pixels.differingPixels(before, rig.screen, in: rig.scene.paintArea) == 0)
        #expect(rig.lastDamage.area < rig.scene.toolbar.frame.area)
        #expect(rig.lastDamage.rects.allSatisfy { rig.scene.toolbar.frame.contains($0) })
    }

    @Test func idleResetClearsAfterTheDeadline() throws {
        let dir = NSTemporaryDirectory() + "paint-idle-\(UInt32.random(in: 0...UInt32.max))"
        let rig = try PaintRig(settings: PaintSettings(idleResetSeconds: 30, idleSave: true, saveDirectory: dir))
        #expect(rig.scene.nextDeadline(now: rig.now) == nil)    // nothing to reset yet
        rig.scene.colors.set(color: paintInk)
        drawStroke(rig, paintLine(from: Point(x: 40, y: 60), to: Point(x: 300, y: 90)))
        let last = rig.now
        #expect(rig.scene.nextDeadline(now: last) == .monotonic(last.monotonicNs + 30_000_000_000))
        #expect(!rig.scene.update(now: last.advanced(byNs: 29_900_000_000)))
        #expect(rig.scene.strokeCount == 1)
        #expect(rig.scene.update(now: last.advanced(byNs: 30_000_000_000)))
        _ = rig.scene.draw(into: rig.screen)
        #expect(rig.scene.strokeCount == 0)
        #expect(Pixels.count(bg, in: rig.screen, rect: rig.scene.paintArea) == rig.scene.paintArea.area)
        #expect(rig.scene.colors.color == ColorModel().color)
        #expect(rig.scene.nextDeadline(now: rig.now) == nil)
        // idle_save wrote the painting first.
        #expect(rig.scene.savedPaths.count == 1)
        let saved = try Canvas.loadPNG(path: rig.scene.savedPaths[0])
        #expect(saved.color(x: 40, y: 60) == paintInk)
        try? FileManager.default.removeItem(atPath: dir)
    }

    @Test func aRestingFingerPostponesTheIdleReset() throws {
        let rig = try PaintRig(settings: PaintSettings(idleResetSeconds: 10))
        drawStroke(rig, paintLine(from: Point(x: 40, y: 60), to: Point(x: 300, y: 90)))
        rig.send([rig.touch(.down, slot: 3, px: Point(x: 100, y: 150))])
        #expect(!rig.scene.update(now: rig.now.advanced(byNs: 11_000_000_000)))
        #expect(rig.scene.strokeCount == 1)
    }

    @Test func anUnpluggedTouchscreenEndsItsStrokes() throws {
        let rig = try PaintRig(settings: PaintSettings(idleResetSeconds: 10))
        rig.scene.colors.set(color: paintInk)
        let a = paintLine(from: Point(x: 40, y: 60), to: Point(x: 300, y: 60))
        rig.send([rig.touch(.down, slot: 0, px: a[0])] + a.dropFirst().map { rig.touch(.motion, slot: 0, px: $0) })
        #expect(rig.scene.strokeCount == 0)
        #expect(rig.send([.deviceRemoved(InputDeviceInfo(name: "panel", sysname: "event3", capabilities: .touch))]))
        #expect(rig.scene.strokeCount == 1)
        for p in pathSamples(a) { #expect(rig.color(p) == paintInk) }
        // Nothing is left pressed, so the idle reset is not held off.
        #expect(rig.scene.update(now: rig.now.advanced(byNs: 10_000_000_000)))
        #expect(rig.scene.strokeCount == 0)
    }

    @Test func saveWritesAPNGOfThePaintArea() throws {
        let dir = NSTemporaryDirectory() + "paint-save-\(UInt32.random(in: 0...UInt32.max))"
        let rig = try PaintRig(dataDirectory: dir)
        rig.scene.colors.set(color: paintInk)
        drawStroke(rig, paintLine(from: Point(x: 40, y: 60), to: Point(x: 300, y: 90)))
        let path = try rig.scene.save(name: nil)
        #expect(path.hasPrefix(dir + "/painting-") && path.hasSuffix(".png"))
        let header = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(8)
        #expect(Array(header) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        let img = try Canvas.loadPNG(path: path)
        #expect(img.size == Size(width: rig.scene.paintArea.width, height: rig.scene.paintArea.height))
        #expect(img.color(x: 40, y: 60) == paintInk && img.color(x: 300, y: 90) == paintInk)
        #expect(img.color(x: 200, y: 200) == bg)
        // A second save in the same second gets another name.
        let again = try rig.scene.save(name: nil)
        #expect(again != path)
        // The save button writes one too.
        rig.tapTool(.save)
        #expect(rig.scene.savedPaths.count == 3)
        try? FileManager.default.removeItem(atPath: dir)

        // A save directory that cannot be made is named, with the reason.
        let file = NSTemporaryDirectory() + "paint-file-\(UInt32.random(in: 0...UInt32.max))"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let blocked = try PaintRig(dataDirectory: file + "/sub")
        do {
            _ = try blocked.scene.save(name: nil)
            Issue.record("saving under a file succeeded")
        } catch let e as KioskError {
            #expect(e.message.contains("\(file)/sub") && e.message.contains("Not a directory"), "\(e.message)")
        }
        try? FileManager.default.removeItem(atPath: file)
    }

    @Test func themeSwitchRepaintsTheCanvasBackground() throws {
        let rig = try PaintRig()
        drawStroke(rig, paintLine(from: Point(x: 40, y: 60), to: Point(x: 300, y: 90)))
        rig.scene.apply(theme: .dark)
        rig.send([])
        #expect(rig.color(Point(x: 200, y: 200)) == Theme.dark.palette.background)
        #expect(rig.color(Point(x: 40, y: 60)).hexString == ColorModel().color.hexString)    // the stroke survived
        #expect(rig.lastDamage == .full(rig.size))
        // A fixed background does not follow the theme.
        let fixed = try PaintRig(settings: PaintSettings(background: Color(r8: 250, g8: 250, b8: 250)), theme: .dark)
        #expect(fixed.color(Point(x: 200, y: 200)) == Color(r8: 250, g8: 250, b8: 250))
    }

    @Test func oddInputAndTinyScreensNeverCrash() throws {
        let rig = try PaintRig()
        let odd: [InputEvent] = [
            .touch(TouchEvent(.motion, slot: 4, x: 0.5, y: 0.5)),          // motion without down
            .touch(TouchEvent(.up, slot: 6, x: 0.5, y: 0.5)),              // up without down
            .touch(TouchEvent(.down, slot: 1, x: .nan, y: 0.5)),
            .touch(TouchEvent(.down, slot: 2, x: 0.3, y: .infinity)),
            .touch(TouchEvent(.down, slot: -3, x: 1e300, y: -1e300)),
            .touch(TouchEvent(.motion, slot: -3, x: 0.4, y: 0.4)),
            .touch(TouchEvent(.down, slot: 7, x: 0.2, y: 0.2)),
            .touch(TouchEvent(.down, slot: 7, x: 0.3, y: 0.3)),             // down again on a busy slot
            .touch(TouchEvent(.cancel, slot: 7, x: 0.3, y: 0.3)),
            .key(code: 30, state: .pressed, timeUsec: 0), .touchFrame(timeUsec: 0), .gesture(.tap(x: 0.5, y: 0.5)),
        ]
        rig.send(odd, drawEach: true)
        #expect(rig.scene.strokeCount == 2)     // the two strokes of slot 7
        #expect(Array(rig.scene.painting.active.keys) == [-3])   // still drawing, from a clamped far-away start
        #expect(rig.scene.painting.active[-3]?.points.count == 2)
        for size in [Size(width: 1, height: 1), Size(width: 12, height: 9), Size(width: 9, height: 300)] {
            let r = try PaintRig(size: size)
            r.tapTool(.picker)
            r.send([r.touch(.down, px: Point(x: 0, y: 0)), r.touch(.motion, px: Point(x: Double(size.width), y: Double(size.height))),
                    r.touch(.up, px: Point(x: 1, y: 1))], drawEach: true)
            let strokes = r.scene.strokeCount
            #expect(r.scene.pickerOpen || strokes <= 1)
            _ = r.scene.picker.chartImage()
            #expect(r.scene.undo() == (strokes > 0))
            #expect(r.scene.strokeCount == 0)
            #expect(r.scene.redo() == (strokes > 0))
            #expect(r.scene.strokeCount == strokes)
            r.scene.clear()
            #expect(r.scene.strokeCount == 0)
            r.send([])
            // A full frame after clear, and nothing drawn outside the screen.
            #expect(r.lastDamage == Damage.full(size), "\(size): \(r.lastDamage)")
        }
    }

    @Test func throughTheSceneManagerOnARotatedPanel() throws {
        // A portrait panel (landscape mode turned 90°): the manager rotates pixels and the scene
        // gets logical coordinates; strokes appear under the fingers with small damage.
        let loop = ManualEventLoop()
        let display = try HeadlessDisplay(size: Size(width: 480, height: 320), rotation: .r90)
        let scene = PaintScene(name: "paint")
        let m = SceneManager(scenes: [scene], theme: .light, display: display, loop: loop, logger: Logger(label: "test"))
        m.start()
        loop.runDeferred()
        scene.colors.set(color: paintInk)
        let logical = try #require(display.logicalSize)
        #expect(logical == Size(width: 320, height: 480))
        let path = paintLine(from: Point(x: 0.45, y: 0.1), to: Point(x: 0.9, y: 0.6))
        for e in TouchScript.strokes([path]) {
            m.input(e)
            loop.runDeferred()
        }
        #expect(scene.strokeCount == 1)
        let frame = try #require(m.canvas)
        for p in pathSamples(path) {
            #expect(frame.color(x: Int(p.x * Double(logical.width)), y: Int(p.y * Double(logical.height))) == paintInk)
        }
        let segmentDamage = display.damageHistory.dropFirst().dropLast()
        #expect(!segmentDamage.isEmpty && segmentDamage.allSatisfy { $0.area * 10 < logical.area })
        // The physical framebuffer holds the same picture turned a quarter clockwise: the
        // logical top-left is the panel's top-right, logical (x, y) is physical (479 − y, x).
        var misplaced = 0
        for y in 0..<logical.height {
            for x in 0..<logical.width where display.color(x: 479 - y, y: x) != frame.color(x: x, y: y) { misplaced += 1 }
        }
        #expect(misplaced == 0)
        let mid = pathSamples(path)[7]
        #expect(display.color(x: 479 - Int(mid.y * 480), y: Int(mid.x * 320)) == paintInk)
    }

    @Test func swatchesAreTheThemesPaletteEachColourOnce() throws {
        let rig = try PaintRig(theme: .default)
        // default: primary cyan, secondary yellow, highlight black, neutral magenta, text black.
        #expect(rig.scene.swatches == [.cyan, .yellow, .black, .magenta])
        for (i, c) in rig.scene.swatches.enumerated() {
            let r = rig.scene.toolbar.rect(of: .swatch(i))!
            #expect(rig.color(rig.center(r)) == c)
        }
        #expect(rig.scene.toolbar.rect(of: .swatch(4)) == nil)
        rig.scene.apply(theme: .light)          // five different colours: the toolbar is laid out again
        rig.send([])
        #expect(rig.scene.swatches.count == 5)
        #expect(rig.color(rig.center(rig.scene.toolbar.rect(of: .swatch(4))!)) == Theme.light.palette.text)
    }

    @Test func portraitPutsTheToolbarOnTheLongEdge() throws {
        let rig = try PaintRig(size: Size(width: 300, height: 500))
        let bar = rig.scene.toolbar.frame
        #expect(bar.x == 0 && bar.height == 500 && bar.width < 100)
        #expect(rig.scene.paintArea.x == bar.width)
        rig.scene.colors.set(color: paintInk)
        drawStroke(rig, paintLine(from: Point(x: 120, y: 100), to: Point(x: 260, y: 400)))
        #expect(rig.color(Point(x: 190, y: 250)) == paintInk)
    }
}
