import Foundation
import KioskCore
import KioskRender
import KioskTesting
import Logging
import Testing
@testable import KioskScenes

/// A scene with static content that records the input it is given.
private final class StaticProbe: PixelShiftable {
    let name = "probe", kind = "probe"
    var size = Size(width: 0, height: 0)
    var full = true
    var touches: [TouchEvent] = []
    let box: Rect
    init(box: Rect) { self.box = box }
    func layout(size: Size) { self.size = size; full = true }
    func apply(theme: Theme) { full = true }
    func didAppear(now: WallTime) { full = true }
    func update(now: WallTime) -> Bool { false }
    func handle(_ event: InputEvent, now: WallTime) -> Bool {
        if case .touch(let t) = event { touches.append(t) }
        return false
    }
    func draw(into canvas: Canvas) -> Damage {
        guard full else { return Damage() }
        full = false
        canvas.clear(.black)
        canvas.fill(box, .white)
        canvas.fill(Rect(x: box.x, y: box.y, width: 1, height: 1), .red)
        return .full(size)
    }
    func nextDeadline(now: WallTime) -> Deadline? { nil }
    var shiftContentBoxes: [Rect] { [box] }
    var shiftBackground: Color { .black }
}

/// Burn-in care: the scene manager moves static content along the pixel orbit.
@Suite struct PixelShiftTests {
    static let size = Size(width: 128, height: 96)
    let logger = Logger(label: "test")

    func counter() throws -> CounterScene {
        try CounterScene(name: "score", counters: [.init(name: "home", label: "HOME")], digits: 3, intents: { _ in })
    }

    func make(_ scene: Scene, orbit: PixelOrbit?, theme: Theme = .default) throws -> (SceneManager, HeadlessDisplay, ManualEventLoop) {
        let loop = ManualEventLoop()
        let d = try HeadlessDisplay(size: Self.size)
        let m = SceneManager(scenes: [scene], theme: theme, display: d, loop: loop, logger: logger)
        m.pixelOrbit = orbit
        m.start()
        loop.runDeferred()
        return (m, d, loop)
    }

    /// Over one period the counter's frame is, at every step, the unmoved frame shifted by the
    /// orbit's offset (the place left behind filled with the background); every offset of the
    /// box is visited; no pixel beyond the content's reach ever changes; each step damages at
    /// most the content boxes grown by the step; and the orbit costs one wake-up per step.
    @Test func counterVisitsEveryOffsetWithBoundedDamage() throws {
        let orbit = PixelOrbit(pixels: 2, periodNanos: 48_000_000_000)
        let still = try counter()
        let (_, refDisplay, _) = try make(still, orbit: nil)
        let reference = Frame(refDisplay, size: Self.size)
        let boxes = still.shiftContentBoxes
        #expect(!boxes.isEmpty)
        let background = Theme.default.palette.background

        let scene = try counter()
        let (m, d, loop) = try make(scene, orbit: orbit)
        #expect(scene.shiftContentBoxes == boxes)
        let bounds = Rect(size: Self.size)
        var visited: Set<PixelOffset> = []
        var wakeUps = 0
        let stepBound = boxes.reduce(0) { $0 + ($1.width + 1) * ($1.height + 1) }
        let reach = boxes.map { orbit.reach(of: $0) }
        for step in 0...orbit.path.count {
            if step > 0 {
                let presents = d.presentCount
                wakeUps += loop.advance(by: orbit.stepNanos)
                #expect(d.presentCount == presents + 1, "step \(step): one frame per step")
                let damage = d.damageHistory.last ?? Damage()
                #expect(damage.area <= stepBound, "step \(step): damage \(damage) beyond the content grown by one step")
                #expect(damage.rects.allSatisfy { r in reach.contains { $0.contains(r) } }, "step \(step): damage \(damage)")
            }
            let off = m.contentOffset
            #expect(off == orbit.offset(atNanos: loop.now(.monotonic)))
            visited.insert(off)
            let frame = Frame(d, size: Self.size)
            var wrong = 0, beyondReach = 0
            for y in 0..<Self.size.height {
                for x in 0..<Self.size.width {
                    let sx = x - off.dx, sy = y - off.dy
                    let expected = bounds.contains(Point(x: Double(sx), y: Double(sy))) ? reference[x: sx, y: sy] : background
                    if frame[x: x, y: y] != expected { wrong += 1 }
                    let p = Point(x: Double(x), y: Double(y))
                    if !reach.contains(where: { $0.contains(p) }), frame[x: x, y: y] != reference[x: x, y: y] { beyondReach += 1 }
                }
            }
            #expect(wrong == 0, "offset \(off): \(wrong) pixels are not the unmoved frame shifted")
            #expect(beyondReach == 0, "offset \(off): \(beyondReach) pixels beyond the orbit's reach changed")
        }
        #expect(visited == Set(orbit.path))
        #expect(visited.count == 25)
        #expect(wakeUps == orbit.path.count)
    }

    /// The clock ticks every second while the orbit steps every 1.3 s: what the display shows is
    /// always the clock's own (unmoved) frame shifted by the orbit's offset, the frame the manager
    /// composed (its damage covered every change), and nothing beyond the reach of the time and
    /// label ever leaves the background.
    @Test func tickingClockStaysInsideTheOrbitsReach() throws {
        let clock = ClockScene(name: "wall", background: .theme, timeZone: LocalZone.fixed(0))
        let orbit = PixelOrbit(pixels: 3, periodNanos: Int64(96) * 1_300_000_000)
        let (m, d, loop) = try make(clock, orbit: orbit)
        let background = Theme.default.palette.background
        var reach: [Rect] = []
        var offsets: Set<PixelOffset> = []
        for _ in 0..<40 {
            loop.advance(by: 650_000_000)
            reach += clock.shiftContentBoxes.map { orbit.reach(of: $0) }
            offsets.insert(m.contentOffset)
            let shown = Frame(d, size: Self.size)
            let unmoved = try #require(m.orbit.sceneCanvas)
            let off = m.contentOffset
            var differs = 0, stray = 0, unshifted = 0
            for y in 0..<Self.size.height {
                for x in 0..<Self.size.width {
                    let c = shown[x: x, y: y]
                    if c != m.canvas!.color(x: x, y: y) { differs += 1 }
                    let sx = x - off.dx, sy = y - off.dy
                    let expected = sx >= 0 && sy >= 0 && sx < Self.size.width && sy < Self.size.height
                        ? unmoved.color(x: sx, y: sy) : background
                    if c != expected { unshifted += 1 }
                    if c != background, !reach.contains(where: { $0.contains(Point(x: Double(x), y: Double(y))) }) { stray += 1 }
                }
            }
            #expect(differs == 0)
            #expect(stray == 0)
            #expect(unshifted == 0, "offset \(off)")
        }
        #expect(offsets.count > 10)
    }

    /// Touches reach a moved scene with the coordinates the panel reported (the content is a few
    /// pixels off at most; hit areas are not moved with it).
    @Test func touchCoordinatesAreNotMoved() throws {
        let probe = StaticProbe(box: Rect(x: 40, y: 30, width: 20, height: 10))
        let orbit = PixelOrbit(pixels: 4, periodNanos: 160_000_000)
        let (m, _, loop) = try make(probe, orbit: orbit)
        loop.advance(by: 3 * orbit.stepNanos)
        #expect(m.contentOffset != .zero)
        m.input(.touch(TouchEvent(.down, slot: 0, x: 0.25, y: 0.75)))
        #expect(probe.touches.map { [$0.x, $0.y] } == [[0.25, 0.75]])
    }

    /// Off by default; a scene that is not moved (a painting) arms no orbit timer; switching
    /// the orbit off puts the content back where it was, in the next frame.
    @Test func offByDefaultAndOnlyForStaticScenes() throws {
        let plain = ProbeScene("paint-like", .red)
        let orbit = PixelOrbit(pixels: 2, periodNanos: 48_000_000_000)
        let (pm, pd, ploop) = try make(plain, orbit: orbit)
        let presents = pd.presentCount
        #expect(ploop.advance(by: 60_000_000_000) == 0)
        #expect(pd.presentCount == presents && pm.contentOffset == .zero)

        let probe = StaticProbe(box: Rect(x: 40, y: 30, width: 20, height: 10))
        let (m, d, loop) = try make(probe, orbit: nil)
        #expect(m.pixelOrbit == nil)
        #expect(loop.advance(by: 60_000_000_000) == 0)
        let unmoved = Frame(d, size: Self.size)
        #expect(unmoved[x: 40, y: 30] == .red)
        m.pixelOrbit = orbit
        loop.runDeferred()
        loop.advance(by: 5 * orbit.stepNanos)
        let off = m.contentOffset
        #expect(off != .zero)
        #expect(Frame(d, size: Self.size)[x: 40 + off.dx, y: 30 + off.dy] == .red)
        m.pixelOrbit = nil
        loop.runDeferred()
        #expect(m.contentOffset == .zero)
        #expect(Frame(d, size: Self.size) == unmoved)
        #expect(loop.advance(by: 60_000_000_000) == 0)
    }
}
