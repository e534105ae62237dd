import Foundation
import Testing
import Logging
import KioskCore
import KioskRender
import KioskScenes
import KioskDRMTesting
import KioskTesting
@testable import KioskDRM

/// The same scene on three displays driven in lock step by one virtual-time loop: the headless
/// display and a DRM display on FakeKMS (both drawn in place when a frame repaints everything)
/// and a copy-only display (the canvas path), all turned by `rotation`. After every step the
/// three pictures must be the same, pixel for pixel.
private final class ThreePaths {
    static let size = Size(width: 160, height: 120)
    let loop = ManualEventLoop()
    let rotation: Rotation
    let kms = FakeKMS(resources: FakeKMS.oneOutput(modes: [DRMMode(width: 160, height: 120, refresh: 60, isPreferred: true)]))
    let headless: HeadlessDisplay
    let reference: HeadlessDisplay
    let drm: DRMDisplay
    let managers: [SceneManager]
    let scenes: [Scene]

    init(rotation: Rotation = .r0, _ make: () throws -> Scene) throws {
        var logger = Logger(label: "test.paths")
        logger.logLevel = .critical
        self.rotation = rotation
        headless = try HeadlessDisplay(size: Self.size, rotation: rotation)
        reference = try HeadlessDisplay(size: Self.size, rotation: rotation)
        drm = try DRMDisplay(options: DRMOptions(device: kms.path, rotation: rotation), scheduler: loop, backend: kms.backend, logger: logger)
        scenes = [try make(), try make(), try make()]
        let displays: [DisplayOutput] = [headless, drm, CopyingDisplay(reference)]
        let loop = self.loop
        managers = zip(scenes, displays).map { scene, display in
            SceneManager(scenes: [scene], theme: .dark, display: display, loop: loop, logger: logger)
        }
        for m in managers { m.start() }
        settle()
    }

    deinit { drm.shutdown() }

    /// Runs the deferred renders and lets the DRM display's flip complete, until nothing is left.
    func settle() {
        for _ in 0..<4 {
            loop.runDeferred()
            if kms.completeFlip() { loop.runDeferred() }
        }
    }

    /// Pixels where the DRM scan-out buffer or the headless framebuffer differ from the
    /// copy-only reference; `what` names the step.
    func differences(_ what: String) -> Int {
        guard let fb = kms.onScreenFB else { Issue.record("\(what): nothing on screen"); return -1 }
        // Nothing is drawn into a buffer while it is scanned out.
        #expect(kms.drawnWhileOnScreen.isEmpty, "\(what)")
        var n = 0
        for y in 0..<Self.size.height {
            for x in 0..<Self.size.width {
                let want = reference.framebuffer.pixels.pixel(x: x, y: y) & 0xFF_FFFF
                let a = headless.framebuffer.pixels.pixel(x: x, y: y) & 0xFF_FFFF
                let b = (kms.pixel(fb: fb, x: x, y: y) ?? 0xDEAD) & 0xFF_FFFF
                if a != want || b != want { n += 1 }
            }
        }
        return n
    }

    /// The headless display drew every frame in its own buffer, partial ones in place, and no
    /// frame canvas was made for it; the DRM display drew partial frames into the canvas.
    func expectInPlaceOnHeadlessOnly() {
        let h = managers[0], d = managers[1]
        #expect(!h.hasFrameCanvas)
        #expect(h.inPlaceFrameCount > 10 && h.inPlaceFrameCount + h.directFrameCount == h.frameCount)
        #expect(d.hasFrameCanvas && d.inPlaceFrameCount == 0)
    }

    func each(_ body: (SceneManager, Scene) throws -> Void) rethrows {
        for (m, s) in zip(managers, scenes) { try body(m, s) }
    }

    func touch(_ phase: TouchPhase, _ x: Double, _ y: Double) {
        let e = InputEvent.touch(TouchEvent(phase, slot: 0, x: x, y: y, timeUsec: UInt64(loop.now(.monotonic) / 1000)))
        each { m, _ in m.input(e) }
        each { m, _ in m.input(.touchFrame(timeUsec: UInt64(loop.now(.monotonic) / 1000))) }
    }
}

@Suite struct PresentPathTests {
    /// Overlays and input shared by every scene's run: a warning comes and goes, the cursor moves.
    /// `during` runs while both overlays are on.
    private func overlaySteps(_ p: ThreePaths, _ step: (String) -> Void, during: () throws -> Void = {}) rethrows {
        p.each { m, _ in m.stateWarning = "state not saved" }
        p.settle(); step("warning on")
        p.each { m, _ in m.showsCursor = true; m.input(.pointerMotion(dx: 12, dy: -7, timeUsec: 1)) }
        p.settle(); step("cursor shown")
        p.each { m, _ in m.input(.pointerMotion(dx: -30, dy: 20, timeUsec: 2)) }
        p.settle(); step("cursor moved")
        try during()
        p.each { m, _ in m.stateWarning = nil }
        p.settle(); step("warning off")
        p.each { m, _ in m.input(.pointerMotion(dx: 5, dy: 5, timeUsec: 3)) }
        p.settle(); step("cursor moved again")
    }

    @Test(arguments: [ClockBackground.time, .theme])
    func clockFramesAreTheSameOnEveryPath(background: ClockBackground) throws {
        let p = try ThreePaths { ClockScene(name: "clock", background: background, timeZone: LocalZone.fixed(0)) }
        var steps = 0
        func step(_ what: String) {
            steps += 1
            #expect(p.differences(what) == 0, "\(what)")
        }
        step("first frame")
        for i in 0..<3 {
            _ = p.loop.advance(by: 1_000_000_000)
            p.settle(); step("tick \(i)")
        }
        overlaySteps(p, step) {
            for i in 0..<2 {
                _ = p.loop.advance(by: 1_000_000_000)
                p.settle(); step("tick with cursor and warning \(i)")
            }
        }
        _ = p.loop.advance(by: 1_000_000_000)
        p.settle(); step("tick with cursor")
        p.each { m, _ in m.setTheme(.light) }
        p.settle(); step("light theme")
        _ = p.loop.advance(by: 1_000_000_000)
        p.settle(); step("tick in the light theme")
        #expect(steps == 14)
        #expect(p.managers.map(\.frameCount) == [p.managers[2].frameCount, p.managers[2].frameCount, p.managers[2].frameCount])
        if background == .time {
            // Every tick repaints the screen: drawn in place on both displays, never copied.
            #expect(p.managers[0].directFrameCount >= 7)
            #expect(p.managers[1].directFrameCount >= 7)
            #expect(p.drm.lastCopiedPixels == 0)
        }
        #expect(p.managers[2].directFrameCount == 0)
        // The canvas still answers with what is on screen (screenshots), overlays included.
        let shot = try #require(p.managers[0].canvas)
        let ref = try #require(p.managers[2].canvas)
        #expect(Pixels.differingPixels(shot, ref) == 0)
    }

    @Test func counterFramesAreTheSameOnEveryPath() throws {
        let p = try ThreePaths {
            try CounterScene(name: "score", counters: [.init(name: "home", label: "HOME")], digits: 3, intents: { _ in })
        }
        func step(_ what: String) { #expect(p.differences(what) == 0, "\(what)") }
        step("first frame")
        for i in 0..<2 {
            try p.each { m, s in
                try (s as! CounterControl).showEdit(.increment, "home", now: p.loop.now())
                m.sceneDidChange()
            }
            p.settle()
            for f in 0..<40 {
                _ = p.loop.advance(by: 16_666_667)
                p.settle(); step("increment \(i) frame \(f)")
            }
        }
        try overlaySteps(p, step) {
            try p.each { m, s in
                try (s as! CounterControl).showEdit(.increment, "home", now: p.loop.now())
                m.sceneDidChange()
            }
            for f in 0..<10 {
                _ = p.loop.advance(by: 16_666_667)
                p.settle(); step("roll under the overlays, frame \(f)")
            }
        }
        p.expectInPlaceOnHeadlessOnly()
    }

    @Test func paintFramesAreTheSameOnEveryPath() throws {
        let p = try ThreePaths { PaintScene(name: "paint", dataDirectory: "/nonexistent") }
        func step(_ what: String) { #expect(p.differences(what) == 0, "\(what)") }
        step("first frame")
        p.touch(.down, 0.3, 0.4); p.settle(); step("down")
        for k in 1...6 {
            _ = p.loop.advance(by: 8_000_000)
            p.touch(.motion, 0.3 + Double(k) * 0.05, 0.4 + Double(k % 3) * 0.04); p.settle(); step("motion \(k)")
        }
        p.touch(.up, 0.6, 0.5); p.settle(); step("up")
        overlaySteps(p, step) {
            p.touch(.down, 0.5, 0.5); p.settle(); step("down under the overlays")
            p.touch(.motion, 0.9, 0.9); p.settle(); step("motion under the overlays")
            p.touch(.up, 0.9, 0.9); p.settle(); step("up under the overlays")
        }
        p.each { _, s in (s as! PaintControl).undo() }
        p.each { m, _ in m.sceneDidChange() }
        p.settle(); step("undo")
        p.expectInPlaceOnHeadlessOnly()
    }
}

/// A scene that repaints everything or only a square, as the test says: a frame that repaints
/// everything (a new background colour) goes straight into the display's buffer; a square is a
/// partial frame. It repaints everything (background and every square since) when laid out.
private final class PatternScene: FullFrameDrawing {
    let name = "pattern"
    let kind = "pattern"
    var size = Size(width: 1, height: 1)
    var background = Color(r8: 20, g8: 40, b8: 60)
    var squares: [(Rect, Color)] = []
    private var repaint = true
    private var newSquares = 0
    /// Draws (in the next frame) a new background over everything.
    func repaintAll(_ c: Color) { background = c; squares = []; repaint = true }
    /// Draws (in the next frame) a square at (x, y) only.
    func square(x: Int, y: Int, _ c: Color) { squares.append((Rect(x: x, y: y, width: 12, height: 9), c)); newSquares += 1 }
    var nextDrawRepaintsEverything: Bool { repaint }
    func layout(size: Size) { self.size = size; repaint = true }
    func apply(theme: Theme) { repaint = true }
    func didAppear(now: WallTime) { repaint = true }
    func update(now: WallTime) -> Bool { false }
    func handle(_ event: InputEvent, now: WallTime) -> Bool { false }
    func nextDeadline(now: WallTime) -> Deadline? { nil }
    func draw(into canvas: Canvas) -> Damage {
        defer { repaint = false; newSquares = 0 }
        if repaint {
            canvas.clear(background)
            for (r, c) in squares { canvas.fill(r, c) }
            return .full(canvas.size)
        }
        var d = Damage()
        for (r, c) in squares.suffix(newSquares) { canvas.fill(r, c); d.add(r) }
        return d
    }
}

@Suite struct LentFramePathTests {
    /// A frame drawn straight into the DRM back buffer, then partial frames: the copy the DRM
    /// display lends for partial frames missed the direct frame, so it is repainted (the scene is
    /// laid out and draws everything) before its damage is copied; only later partial frames copy
    /// just their squares (and what the back buffer missed). A screenshot right after a direct
    /// frame is what the fake scans out.
    @Test(arguments: [Rotation.r0, .r90, .r180, .r270])
    func partialFramesAfterADirectFrameRepaintTheCopy(rotation: Rotation) throws {
        let p = try ThreePaths(rotation: rotation) { PatternScene() }
        let scenes = p.scenes.map { $0 as! PatternScene }
        let (h, d, c) = (p.managers[0], p.managers[1], p.managers[2])
        let logical = rotation.logicalSize(physical: ThreePaths.size)
        func step(_ what: String) { #expect(p.differences(what) == 0, "\(what)") }
        step("first frame")
        let colors = [Color(r8: 200, g8: 30, b8: 30), Color(r8: 30, g8: 200, b8: 30), Color(r8: 30, g8: 30, b8: 200)]
        for (i, color) in colors.enumerated() {
            for s in scenes { s.repaintAll(color) }
            p.each { m, _ in m.sceneDidChange() }
            p.settle(); step("direct frame \(i)")
            if rotation == .r0 {
                #expect(p.drm.lastCopiedPixels == 0, "a frame that repaints everything is drawn in the back buffer, not copied")
                // The screenshot reads the buffer the frame went to: the fake's scan-out.
                let shot = try #require(d.canvas)
                let fb = try #require(p.kms.onScreenFB)
                var differing = 0
                for y in 0..<logical.height {
                    for x in 0..<logical.width where shot.pixels.pixel(x: x, y: y) & 0xFF_FFFF != (p.kms.pixel(fb: fb, x: x, y: y) ?? 0) & 0xFF_FFFF {
                        differing += 1
                    }
                }
                #expect(differing == 0, "direct frame \(i): the screenshot is what is scanned out")
            }
            for k in 0..<3 {
                for s in scenes { s.square(x: 10 + 20 * k + i, y: 15 + 11 * k, colors[(i + k + 1) % 3]) }
                p.each { m, _ in m.sceneDidChange() }
                p.settle(); step("partial frame \(k) after direct frame \(i)")
                if rotation != .r0 { continue }
                if k == 0 {
                    // The copy missed the direct frame: all of it is repainted and copied.
                    #expect(p.drm.lastCopiedPixels == logical.area, "partial frame 0 after direct frame \(i)")
                } else if k == 2 {
                    // Buffer age: the back buffer missed the previous square, plus this one.
                    #expect(p.drm.lastCopiedPixels == 2 * 12 * 9, "partial frame 2 after direct frame \(i)")
                }
            }
            let shot = try #require(d.canvas)
            let ref = try #require(c.canvas)
            #expect(Pixels.differingPixels(shot, ref) == 0, "after direct frame \(i): the screenshot")
        }
        if rotation == .r0 {
            #expect(h.directFrameCount == 4 && d.directFrameCount == 4 && c.directFrameCount == 0)
            #expect(h.inPlaceFrameCount == 9 && d.inPlaceFrameCount == 0)
            #expect(!h.hasFrameCanvas && d.hasFrameCanvas)
        } else {
            // Turned: every frame is drawn into a copy and copied turned.
            #expect(p.managers.allSatisfy { $0.directFrameCount == 0 && $0.inPlaceFrameCount == 0 && $0.hasFrameCanvas })
        }
        #expect(p.managers.allSatisfy { $0.frameCount == 13 })
        // Overlays over both kinds of frame.
        p.each { m, _ in m.stateWarning = "state not saved"; m.showsCursor = true; m.input(.pointerMotion(dx: 9, dy: 4, timeUsec: 1)) }
        p.settle(); step("overlays on")
        for s in scenes { s.repaintAll(colors[0]) }
        p.each { m, _ in m.sceneDidChange() }
        p.settle(); step("direct frame under the overlays")
        for s in scenes { s.square(x: 70, y: 50, colors[1]) }
        p.each { m, _ in m.input(.pointerMotion(dx: -30, dy: 12, timeUsec: 2)) }
        p.settle(); step("partial frame under the overlays, cursor moved")
        p.each { m, _ in m.stateWarning = nil; m.showsCursor = false }
        p.settle(); step("overlays off")
    }
}
