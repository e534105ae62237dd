import Testing
import Foundation
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

@Suite struct PaintBrushTests {
    let bg = Theme.light.palette.background

    /// A curvy path drawn with the finger down, sent to the scene either one frame per point or
    /// all at once.
    func liveStroke(frameEach: Bool, width: Int) throws -> PaintRig {
        let rig = try PaintRig(size: Size(width: 640, height: 480))
        rig.scene.colors.set(color: paintInk)
        rig.tapTool(.width(width))
        let path = (0..<40).map { i in Point(x: 40 + Double(i) * 13.3, y: 200 + 90 * sin(Double(i) * 0.45)) }
        var events = [rig.touch(.down, px: path[0])]
        events += path.dropFirst().map { rig.touch(.motion, px: $0) }
        rig.send(events, drawEach: frameEach)
        return rig
    }

    @Test(arguments: [0, 1, 2])
    func aLiveStrokeLooksTheSameHoweverItsFramesWereSplit(width: Int) throws {
        // Each frame repaints only the newest segments' box; the pixels of a segment must not
        // depend on where that box ended, or the stroke shows seams where frames met.
        let framed = try liveStroke(frameEach: true, width: width)
        let once = try liveStroke(frameEach: false, width: width)
        #expect(Pixels.differingPixels(framed.screen, once.screen, in: framed.scene.paintArea) == 0)
    }

    @Test func theBrushMatchesCairosRoundCappedStrokeUpToAntiAliasing() throws {
        // A dot and a curve, drawn by the brush and by cairo's stroker.
        let size = Size(width: 200, height: 120)
        let pts = [Point(x: 20.3, y: 60.7), Point(x: 60.1, y: 30.2), Point(x: 110.6, y: 80.9), Point(x: 170.2, y: 50.4)]
        for (points, width) in [([Point(x: 100.25, y: 60.6)], 20.0), (pts, 8.0), (pts, 20.0), (pts, 40.0)] {
            let mine = try Canvas(size: size), ref = try Canvas(size: size)
            mine.clear(bg); ref.clear(bg)
            PaintBrush().draw(points, segments: Array(0..<max(points.count - 1, 0)), width: width, color: paintInk, clip: Rect(size: size), into: mine.pixels)
            mine.markDirty(Rect(size: size))
            ref.strokePath(points, width: width, paintInk, smooth: true)
            var worst = 0, visibly = 0, inked = 0, refInked = 0
            for y in 0..<size.height {
                for x in 0..<size.width {
                    let a = mine.color(x: x, y: y), b = ref.color(x: x, y: y)
                    let d = Pixels.distance(a, b)
                    worst = max(worst, d)
                    if d > 16 { visibly += 1 }
                    if a == paintInk { inked += 1 }
                    if b == paintInk { refInked += 1 }
                }
            }
            // Edge pixels differ by a few levels of coverage (cairo flattens curves and round ends
            // to within 0.1 px; the brush's discs sit within 1/32 px); the body is exactly the ink.
            #expect(worst <= 40, "width \(width), \(points.count) points: differs by up to \(worst)")
            #expect(visibly * 50 <= refInked, "width \(width): \(visibly) pixels differ by more than 16 levels")
            #expect(abs(inked - refInked) * 50 <= refInked, "width \(width): \(inked) ink pixels, cairo \(refInked)")
        }
    }

    @Test func aSegmentFrameLeavesTheToolbarAlone() throws {
        let rig = try liveStroke(frameEach: true, width: 1)
        let bar = rig.scene.toolbar.frame
        let before = try Canvas(size: rig.size)
        before.draw(rig.screen)
        rig.send([rig.touch(.motion, px: Point(x: 600, y: 260))])
        #expect(!rig.lastDamage.isEmpty)
        #expect(!rig.lastDamage.rects.contains { $0.intersects(bar) })
        #expect(Pixels.differingPixels(before, rig.screen, in: bar) == 0)
    }
}
