import Testing
import Logging
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

/// A display that lends a copy of the frame (or, when told, a frame of the wrong size, or an
/// error) and records what each `presentLent` was given.
private final class LendingProbe: DisplayOutput {
    let size = Size(width: 80, height: 60)
    private let copied = CopiedFrame()
    private var other: FrameMemory?
    var wrongSizeOnce = false
    var failLendOnce = false
    var presents: [Damage] = []
    var onEvent: ((DisplayEvent) -> Void)?
    var displayDescription: String { "lending probe" }
    var logicalSize: Size? { size }
    var rotation: Rotation { .r0 }
    var canPresent: Bool { true }
    var isBlanked: Bool { false }
    func lendFrame(repaintsEverything: Bool) throws -> FrameTarget? {
        if failLendOnce {
            failLendOnce = false
            throw KioskError.display("lending probe: no memory for a frame")
        }
        if wrongSizeOnce {
            wrongSizeOnce = false
            let m = try FrameMemory(size: Size(width: 40, height: 30))
            other = m
            return FrameTarget(pixels: m.buffer, missed: Damage(), slowToRead: false, isCopy: true)
        }
        return try copied.lend(size: size)
    }
    func presentLent(damage: Damage) throws { presents.append(damage) }
    func setBlanked(_ blanked: Bool) throws {}
    func shutdown() {}
}

@Suite struct FrameComposerTests {
    /// A lend that fails draws nothing and keeps the frame pending; a lent target the composer
    /// cannot use (another size) is given back unshown (empty damage), and since what it holds
    /// is then unknown, the next frame lays the scene out and repaints everything.
    @Test func aTargetGivenBackMakesTheNextFrameRepaintEverything() throws {
        var logger = Logger(label: "test.composer")
        logger.logLevel = .critical
        let loop = ManualEventLoop()
        let d = LendingProbe()
        let a = ProbeScene("a", .red)
        let m = SceneManager(scenes: [a], theme: .default, display: d, loop: loop, logger: logger)
        m.start()
        loop.runDeferred()
        let full = Damage.full(d.size)
        #expect(d.presents == [full])
        m.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5)))
        loop.runDeferred()
        let square = Damage([Rect(x: 40, y: 30, width: 4, height: 4)])
        #expect(d.presents == [full, square])

        d.failLendOnce = true
        m.input(.touch(TouchEvent(.down, slot: 1, x: 0.25, y: 0.25)))
        loop.runDeferred()
        #expect(d.presents == [full, square], "no target: nothing drawn, nothing presented")
        #expect(m.frameCount == 2)
        m.renderIfPossible()
        #expect(d.presents == [full, square, Damage([Rect(x: 20, y: 15, width: 4, height: 4)])], "the frame was still pending")

        #expect(m.canvas?.color(x: 41, y: 31) == Theme.default.palette.highlight)
        d.wrongSizeOnce = true
        let draws = a.draws
        m.input(.touch(TouchEvent(.down, slot: 2, x: 0.75, y: 0.75)))
        loop.runDeferred()
        #expect(d.presents.count == 4 && d.presents[3].isEmpty, "given back unshown")
        #expect(a.draws == draws, "the scene did not draw into the wrong target")
        m.renderIfPossible()
        #expect(d.presents.count == 5 && d.presents[4] == full, "repainted completely after a target was given back")
        #expect(m.frameCount == 4)
        // The scene was laid out and drew everything: its earlier squares are gone.
        #expect(m.canvas?.color(x: 41, y: 31) == .red)
        #expect(m.canvas?.color(x: 21, y: 16) == .red)
    }
}
