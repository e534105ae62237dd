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
/// and a copy-only display (the canvas path). After every step the three pictures must be the
/// same, pixel for pixel.
private final class ThreePaths {
    static let size = Size(width: 160, height: 120)
    let loop = ManualEventLoop()
    let kms = FakeKMS(resources: FakeKMS.oneOutput(modes: [DRMMode(width: 160, height: 120, refresh: 60, isPreferred: true)]))
    let headless: HeadlessDisplay
    let reference: HeadlessDisplay
    let drm: DRMDisplay
    let managers: [SceneManager]
    let scenes: [Scene]

    init(_ make: () throws -> Scene) throws {
        var logger = Logger(label: "test.paths")
        logger.logLevel = .critical
        headless = try HeadlessDisplay(size: Self.size)
        reference = try HeadlessDisplay(size: Self.size)
        drm = try DRMDisplay(options: DRMOptions(device: kms.path), scheduler: loop, backend: kms.backend, logger: logger)
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
        let p = try ThreePaths { ClockScene(name: "clock", background: background, timeZone: TimeZone(identifier: "UTC")!) }
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
            try CounterScene(name: "score", counters: [.init(name: "home", label: "HOME")], digits: 3, state: MemoryStateStore())
        }
        func step(_ what: String) { #expect(p.differences(what) == 0, "\(what)") }
        step("first frame")
        for i in 0..<2 {
            try p.each { m, s in
                try (s as! CounterControl).increment("home", now: p.loop.now())
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
                try (s as! CounterControl).increment("home", now: p.loop.now())
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
