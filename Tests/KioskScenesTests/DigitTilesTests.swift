import Testing
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

@Suite struct DigitTilesTests {
    /// A six-digit counter at `value`, drawn once in full, with its windows copied from the
    /// digit pictures or drawn with cairo.
    func scene(_ value: Int, tiles: Bool, size: Size, theme: Theme) throws -> (CounterScene, Canvas) {
        let s = try CounterScene(name: "score", counters: [.init(name: "home", label: "Home")], digits: 6, rollMs: 500,
                                 values: ["home": value], intents: { _ in })
        s.usesDigitTiles = tiles
        let canvas = try Canvas(size: size)
        s.layout(size: size)
        s.apply(theme: theme)
        s.didAppear(now: WallTime(realtimeNs: 0, monotonicNs: 1_000_000_000))
        _ = s.draw(into: canvas)
        return (s, canvas)
    }

    @Test(arguments: [(Size(width: 480, height: 270), Theme.default), (Size(width: 1280, height: 720), Theme.light)])
    func everyRollFrameMatchesTheWindowDrawnWithCairo(size: Size, theme: Theme) throws {
        let (a, ca) = try scene(99_999, tiles: true, size: size, theme: theme)
        let (b, cb) = try scene(99_999, tiles: false, size: size, theme: theme)
        let windows = try a.digitWindows(of: "home")
        // The pixels that may differ: the rounded corners (the tiles keep them over a sliding
        // digit; cairo drew the digit over them where it reached that far).
        let corner = max(2, Int((Double(windows[0].width) * 0.12).rounded(.up)) + 1)
        var now = WallTime(realtimeNs: 0, monotonicNs: 1_000_000_000)
        try a.showEdit(.increment, "home", now: now)
        try b.showEdit(.increment, "home", now: now)
        var frames = 0
        while a.isRolling {
            now = now.advanced(byNs: 16_666_667)
            _ = a.update(now: now); _ = b.update(now: now)
            let da = a.draw(into: ca), db = b.draw(into: cb)
            #expect(da == db)
            for w in windows {
                var outside = 0
                for y in w.y..<w.maxY {
                    for x in w.x..<w.maxX where ca.pixels.pixel(x: x, y: y) & 0xFF_FFFF != cb.pixels.pixel(x: x, y: y) & 0xFF_FFFF {
                        let inCorner = (x - w.x < corner || w.maxX - 1 - x < corner) && (y - w.y < corner || w.maxY - 1 - y < corner)
                        if !inCorner { outside += 1 }
                    }
                }
                #expect(outside == 0, "frame \(frames), window \(w): \(outside) pixels differ outside the corners")
            }
            frames += 1
        }
        #expect(frames >= 25)
        #expect(Pixels.differingPixels(ca, cb) == 0)    // at rest again: identical
        #expect(a.digitTilesMade == 1)                 // the pictures were rendered once
        #expect(b.digitTilesMade == 0)
    }

    /// A full redraw at the same size (what a display asks for after unblanking or a hotplug)
    /// copies the digits from the pictures already rendered; a new size renders new ones.
    @Test func aNewLayoutAtTheSameSizeKeepsTheDigitPictures() throws {
        let size = Size(width: 640, height: 360)
        let (s, canvas) = try scene(123_456, tiles: true, size: size, theme: .default)
        let before = try canvas.pngData()
        #expect(s.digitTilesMade == 1)
        canvas.clear(.black)
        s.layout(size: size)
        #expect(s.draw(into: canvas) == Damage.full(size))
        #expect(s.digitTilesMade == 1)
        #expect(try canvas.pngData() == before)
        let bigger = try Canvas(size: Size(width: 800, height: 450))
        s.layout(size: bigger.size)
        _ = s.draw(into: bigger)
        #expect(s.digitTilesMade == 2)
    }
}
