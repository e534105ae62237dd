import KioskCore
import KioskRender
import KioskScenes
import KioskTesting
import Testing

/// Scenes draw whatever text they are given: a label far too long for any screen is drawn
/// (cut and ellipsized), never a crash, and stays inside the scene's frame.
@Suite struct LongLabelTests {
    @Test func counterWithA200000CharacterLabelDraws() throws {
        let size = Size(width: 480, height: 270)
        let label = String(repeating: "W", count: 200_000)
        let s = try CounterScene(name: "score", counters: [.init(name: "home", label: label), .init(name: "away", label: "AWAY")],
                                 digits: 4, minimum: 0, rollMs: 500, shading: true, intents: { _ in })
        let canvas = try Canvas(size: size)
        s.layout(size: size)
        s.apply(theme: .default)
        s.didAppear(now: WallTime(realtimeNs: 1_704_067_200_000_000_000, monotonicNs: 10_000_000_000))
        #expect(s.draw(into: canvas) == Damage.full(size))
        // The label's text colour appears: the label was drawn, not skipped.
        #expect(Pixels.count(Theme.default.palette.text, in: canvas, tolerance: 40) > 100)
    }
}
