import Testing
import Logging
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

/// A scene that paints a solid colour and counts what the manager asks of it.
final class ProbeScene: Scene {
    let name: String
    let kind = "probe"
    var size = Size(width: 0, height: 0)
    var theme = Theme.default
    var fill: Color
    var full = true
    var dirtyRect: Rect?
    var draws = 0
    var updates = 0
    var events: [InputEvent] = []
    var deadline: Deadline?
    /// When set, the scene asks to run on every multiple of this many monotonic nanoseconds.
    var period: Int64?
    /// The monotonic time of each update.
    var updateTimes: [Int64] = []
    init(_ name: String, _ fill: Color) { self.name = name; self.fill = fill }
    func layout(size: Size) { self.size = size; full = true }
    func apply(theme: Theme) { self.theme = theme; full = true }
    func didAppear(now: WallTime) { full = true }
    func update(now: WallTime) -> Bool { updates += 1; updateTimes.append(now.monotonicNs); return true }
    func handle(_ event: InputEvent, now: WallTime) -> Bool {
        events.append(event)
        if case .touch(let t) = event, t.phase == .down {
            dirtyRect = Rect(x: Int(t.x * Double(size.width)), y: Int(t.y * Double(size.height)), width: 4, height: 4)
            return true
        }
        return false
    }
    func draw(into canvas: Canvas) -> Damage {
        draws += 1
        if full { full = false; canvas.clear(fill); canvas.fill(Rect(x: 0, y: 0, width: 2, height: 2), theme.palette.primary); return .full(size) }
        if let r = dirtyRect { canvas.fill(r, theme.palette.highlight); dirtyRect = nil; return Damage([r]) }
        return Damage()
    }
    func nextDeadline(now: WallTime) -> Deadline? {
        if let p = period { return .monotonic((now.monotonicNs / p + 1) * p) }
        return deadline
    }
}

@Suite struct SceneManagerTests {
    let logger = Logger(label: "test")

    /// A manager on virtual time: the loop's clocks are what scenes are told, and nothing fires
    /// until the test advances them.
    func make(_ scenes: [Scene], rotation: Rotation = .r0, switching: SceneSwitching = SceneSwitching()) throws -> (SceneManager, HeadlessDisplay, ManualEventLoop) {
        let loop = ManualEventLoop()
        let d = try HeadlessDisplay(size: Size(width: 80, height: 60), rotation: rotation)
        let m = SceneManager(scenes: scenes, theme: .default, display: d, loop: loop, switching: switching, logger: logger)
        return (m, d, loop)
    }

    @Test func firstFrameIsFullAndIdleDrawsNothing() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        var ready = 0
        m.onFirstFrame = { ready += 1 }
        m.start()
        loop.runDeferred()
        #expect(d.presentCount == 1)
        #expect(ready == 1)
        #expect(d.color(x: 40, y: 30) == .red)
        // Nothing changed: more loop turns present nothing.
        loop.runDeferred()
        loop.runDeferred()
        #expect(d.presentCount == 1)
        #expect(a.draws == 1)
    }

    @Test func touchDamagesOnlyWhatChanged() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        m.start()
        loop.runDeferred()
        m.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5)))
        loop.runDeferred()
        #expect(d.presentCount == 2)
        #expect(d.damageHistory.last == Damage([Rect(x: 40, y: 30, width: 4, height: 4)]))
        #expect(d.color(x: 41, y: 31) == Theme.default.palette.highlight)
    }

    @Test func framesWaitForTheFlipAndCoalesce() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        d.simulateFlips = true
        m.start()
        loop.runDeferred()
        #expect(d.presentCount == 1)
        m.input(.touch(TouchEvent(.down, slot: 0, x: 0.1, y: 0.1)))
        m.input(.touch(TouchEvent(.down, slot: 1, x: 0.6, y: 0.6)))
        loop.runDeferred()
        #expect(d.presentCount == 1)   // flip pending: nothing drawn into the scanned-out frame
        d.completeFlip()
        #expect(d.presentCount == 2)   // both touches in one frame
    }

    @Test func keysSwitchScenesAndThemesRedrawEverything() throws {
        let a = ProbeScene("a", .red), b = ProbeScene("b", .blue)
        let (m, d, loop) = try make([a, b], switching: SceneSwitching(nextKeys: [106], previousKeys: [105]))
        var shown: [String] = []
        m.onSceneChange = { shown.append($0) }
        m.start()
        loop.runDeferred()
        m.input(.key(code: 106, state: .pressed, timeUsec: 0))
        loop.runDeferred()
        #expect(m.current.name == "b")
        #expect(d.color(x: 40, y: 30) == .blue)
        #expect(a.events.isEmpty && b.events.isEmpty)   // switch keys are not given to scenes
        m.setTheme(.alternative)
        loop.runDeferred()
        #expect(d.color(x: 0, y: 0) == Theme.alternative.palette.primary)
        m.input(.key(code: 105, state: .pressed, timeUsec: 0))
        loop.runDeferred()
        #expect(shown == ["b", "a"])
        #expect(throws: KioskError.self) { try m.show(sceneNamed: "nope") }
    }

    @Test func rotatedDisplayGivesScenesTheLogicalSize() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a], rotation: .r90)
        m.start()
        loop.runDeferred()
        #expect(a.size == Size(width: 60, height: 80))
        // The scene's top-left marker (primary colour) is at the panel's top-right.
        #expect(d.color(x: 79, y: 0) == Theme.default.palette.primary)
    }

    @Test func deadlineTimerRunsTheSceneUpdateAtItsDeadlineOnce() throws {
        let a = ProbeScene("a", .red)
        let (m, _, loop) = try make([a])
        let due = loop.now(.monotonic) + 5_000_000
        a.deadline = .monotonic(due)
        m.start()
        loop.runDeferred()
        #expect(loop.nextDeadline(.monotonic) == due)
        a.deadline = nil
        loop.advance(by: 4_999_999)
        #expect(a.updates == 0, "updated before its deadline")
        loop.advance(by: 1)
        #expect(a.updateTimes == [due])
        #expect(a.draws == 2)                   // the update changed something: drawn once more
        // The scene asks for nothing more: no timer is left, however long the loop runs.
        #expect(loop.pendingTimers == 0)
        loop.advance(by: 10_000_000_000)
        #expect(a.updates == 1)
    }

    @Test func aChangedDeadlineReplacesTheArmedTimer() throws {
        let a = ProbeScene("a", .red)
        let (m, _, loop) = try make([a])
        let t0 = loop.now(.monotonic)
        a.deadline = .monotonic(t0 + 50_000_000)
        m.start()
        loop.runDeferred()
        a.deadline = .realtime(loop.now(.realtime) + 20_000_000)
        m.sceneDidChange()
        #expect(loop.pendingTimers == 1)
        #expect(loop.nextDeadline(.monotonic) == nil && loop.nextDeadline(.realtime) == loop.now(.realtime) + 20_000_000)
        a.deadline = nil
        loop.advance(by: 100_000_000)
        #expect(a.updateTimes == [t0 + 20_000_000])
    }

    @Test func frameRateCountsTheLastFiveSecondsOfTheLoopsClock() throws {
        let a = ProbeScene("a", .red)
        let (m, _, loop) = try make([a])
        m.start()
        loop.runDeferred()                       // frame 1 at 0 s
        for _ in 0..<2 {                         // frames 2 and 3 at 1 s and 2 s
            loop.advance(by: 1_000_000_000)
            m.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5)))
            loop.runDeferred()
        }
        #expect(m.stats.frames == 3)
        #expect(m.stats.fps == 3.0 / 5)
        loop.advance(by: 3_500_000_000)          // 5.5 s: the first frame is more than 5 s old
        #expect(m.stats.fps == 2.0 / 5)
        loop.advance(by: 2_000_000_000)          // 7.5 s: none is recent
        #expect(m.stats.fps == 0)
        #expect(m.stats.frames == 3 && m.stats.maxMs >= m.stats.p50Ms && m.stats.p50Ms > 0)
    }

    @Test func frameStatisticsKeepTheLast600Frames() {
        var s = FrameStatistics()
        // Frame i cost i ms and was presented at i × 10 ms.
        for i in 1...700 { s.record(costNs: Int64(i) * 1_000_000, at: Int64(i) * 10_000_000) }
        let st = s.stats(now: 7_000_000_000)
        #expect(st.frames == 700)
        // Kept: the costs 101…700 ms. Percentile p is the value at index (599 · p) rounded:
        // 299.5 → 300 (401 ms), 539.1 → 539 (640 ms), 593.01 → 593 (694 ms).
        #expect(st.p50Ms == 401 && st.p90Ms == 640 && st.p99Ms == 694 && st.maxMs == 700)
        // Within 5 s of 7 s: the frames after 2 s, 201…700, 500 frames in 5 s.
        #expect(st.fps == 100)
        #expect(FrameStatistics().stats(now: 0) == FrameStats(frames: 0, fps: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0, maxMs: 0))
    }

    /// The render heartbeat: the longest gap between frames over the last minute and since start.
    @Test func heartbeatKeepsTheLongestFrameGapOfTheLastMinuteAndSinceStart() {
        var s = FrameStatistics()
        let sec: Int64 = 1_000_000_000
        var t: Int64 = 0
        for _ in 0..<10 { s.record(costNs: 1_000_000, at: t); t += sec }   // 1 s apart
        s.record(costNs: 1_000_000, at: t + 3 * sec)                       // a 4 s stall
        t += 4 * sec
        for _ in 0..<5 { t += sec; s.record(costNs: 1_000_000, at: t) }
        #expect(s.stats(now: t).maxGapLastMinuteMs == 4000)
        #expect(s.stats(now: t).maxGapMs == 4000)
        // 70 s later, with frames every 1.5 s meanwhile: the stall has left the minute.
        for _ in 0..<47 { t += 1_500_000_000; s.record(costNs: 1_000_000, at: t) }
        #expect(s.stats(now: t).maxGapLastMinuteMs == 1500)
        #expect(s.stats(now: t).maxGapMs == 4000)
    }

    @Test func hotplugRedrawsFullyAndUnplugStopsPresenting() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        m.start()
        loop.runDeferred()
        d.setConnected(false)
        m.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5)))
        loop.runDeferred()
        #expect(d.presentCount == 1)
        d.setConnected(true)
        loop.runDeferred()
        #expect(d.presentCount == 2)
        #expect(d.damageHistory.last == Damage.full(Size(width: 80, height: 60)))
    }

    @Test func cursorMovesOverTheFrameAndPutsBackWhatItCovered() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        m.showsCursor = true
        m.start()
        loop.runDeferred()
        #expect(d.presentCount == 1)
        // The first motion puts the cursor at the centre plus the motion.
        m.input(.pointerMotion(dx: -20, dy: -20, timeUsec: 1))
        loop.runDeferred()
        #expect(m.cursorPosition == Point(x: 20, y: 10))
        #expect(d.presentCount == 2)
        let first = d.damageHistory.last!
        #expect(first.area < 80 * 60 / 4, "cursor damage \(first) is small")
        let text = Theme.default.palette.text
        #expect(Pixels.count(text, in: d.framebuffer, rect: first.bounds, tolerance: 40) > 5)
        // Scenes never see mouse motion.
        #expect(a.events.isEmpty)
        // Moving on puts back exactly the scene's pixels and draws the cursor at its new place.
        m.input(.pointerMotion(dx: 40, dy: 30, timeUsec: 2))
        loop.runDeferred()
        #expect(m.cursorPosition == Point(x: 60, y: 40))
        #expect(Pixels.count(.red, in: d.framebuffer, rect: first.bounds) == first.bounds.area)
        #expect(Pixels.count(text, in: d.framebuffer, rect: first.bounds, tolerance: 40) == 0)
        #expect(d.damageHistory.last!.bounds.contains(Rect(x: 60, y: 40, width: 2, height: 2)))
        // The cursor stays on the screen.
        m.input(.pointerMotion(dx: 500, dy: 500, timeUsec: 3))
        #expect(m.cursorPosition == Point(x: 79, y: 59))
    }

    @Test func cursorClickIsAFingerAtTheCursor() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        m.showsCursor = true
        m.start()
        loop.runDeferred()
        m.input(.pointerMotion(dx: -20, dy: -10, timeUsec: 1))
        m.input(.pointerButton(pressed: true, timeUsec: 2))
        loop.runDeferred()
        guard case .touch(let t)? = a.events.first else { Issue.record("no touch from the click: \(a.events)"); return }
        #expect(t.phase == .down && t.slot == SceneManager.cursorSlot)
        #expect(abs(t.x - 0.25) < 1e-9 && abs(t.y - 20.0 / 60) < 1e-9)
        // The probe scene paints its highlight where it was touched; the cursor is drawn over it.
        #expect(d.color(x: 23, y: 21) == Theme.default.palette.highlight)
        m.input(.pointerMotion(dx: 5, dy: 0, timeUsec: 3))
        m.input(.pointerButton(pressed: false, timeUsec: 4))
        let phases = a.events.compactMap { e -> TouchPhase? in if case .touch(let t) = e { return t.phase } else { return nil } }
        #expect(phases == [.down, .motion, .up])
    }

    @Test func withoutACursorMiceDoNothing() throws {
        let a = ProbeScene("a", .red)
        let (m, d, loop) = try make([a])
        m.start()
        loop.runDeferred()
        m.input(.pointerMotion(dx: 5, dy: 5, timeUsec: 1))
        m.input(.pointerButton(pressed: true, timeUsec: 2))
        loop.runDeferred()
        #expect(d.presentCount == 1)
        #expect(a.events.isEmpty)
        #expect(m.cursorPosition == nil)
    }
}
