import Foundation
import KioskCore
import KioskRender
@testable import KioskScenes
import KioskTesting
import Logging
import Testing

/// The frame a headless display shows, pixel by pixel.
struct Frame: Equatable, CustomTestStringConvertible {
    let size: Size
    let pixels: [Color]
    init(_ d: HeadlessDisplay, size: Size) {
        self.size = size
        var p: [Color] = []
        p.reserveCapacity(size.area)
        for y in 0..<size.height { for x in 0..<size.width { p.append(d.color(x: x, y: y)) } }
        pixels = p
    }
    subscript(x x: Int, y y: Int) -> Color { pixels[y * size.width + x] }
    var testDescription: String { "frame \(size)" }
    /// The pixels of `r` that differ from `background`, each as the share of the way from
    /// `background` to `ink` it lies at; nil when one of them is not on that way (another colour).
    func inkShares(in r: Rect, ink: Color, background: Color) -> [Double]? {
        let c = r.intersection(Rect(size: size))
        guard !c.isEmpty else { return [] }
        let d = [ink.red - background.red, ink.green - background.green, ink.blue - background.blue]
        let len2 = d.reduce(0) { $0 + $1 * $1 }
        var shares: [Double] = []
        for y in c.y..<c.maxY { for x in c.x..<c.maxX {
            let p = self[x: x, y: y]
            guard p != background else { continue }
            let v = [p.red - background.red, p.green - background.green, p.blue - background.blue]
            let t = zip(v, d).reduce(0) { $0 + $1.0 * $1.1 } / len2
            let off = zip(v, d).map { abs($0.0 - t * $0.1) }.max()!
            if off > 3.0 / 255 { return nil }
            shares.append(t)
        } }
        return shares
    }
    /// How many pixels of `r` have exactly `color`.
    func count(_ color: Color, in r: Rect) -> Int {
        let c = r.intersection(Rect(size: size))
        guard !c.isEmpty else { return 0 }
        var n = 0
        for y in c.y..<c.maxY { for x in c.x..<c.maxX where self[x: x, y: y] == color { n += 1 } }
        return n
    }
    /// How many pixels of `r` differ from `color`.
    func count(notEqual color: Color, in r: Rect) -> Int {
        let c = r.intersection(Rect(size: size))
        return c.area - count(color, in: c)
    }
    /// The box around every pixel that differs from `other` (empty when none does).
    func difference(from other: Frame) -> Rect {
        var r = Rect(x: 0, y: 0, width: 0, height: 0)
        for y in 0..<size.height { for x in 0..<size.width where self[x: x, y: y] != other[x: x, y: y] {
            r = r.union(Rect(x: x, y: y, width: 1, height: 1))
        } }
        return r
    }
}

/// The clock's display while the system clock is not synchronised, through the scene manager
/// on virtual time (the manager's `timeSynchronized` is what the daemon sets from the time
/// sources).
@Suite struct UnsyncedClockTests {
    static let size = Size(width: 320, height: 180)

    /// A manager showing one clock (UTC) on virtual time.
    func make(_ unsynced: ClockUnsyncedDisplay, synchronized: Bool, background: ClockBackground = .time) throws -> (SceneManager, ClockScene, HeadlessDisplay, ManualEventLoop) {
        let loop = ManualEventLoop()
        let d = try HeadlessDisplay(size: Self.size)
        let clock = ClockScene(name: "wall", background: background, timeZone: LocalZone.fixed(0), unsynced: unsynced)
        let m = SceneManager(scenes: [clock], theme: .default, display: d, loop: loop, logger: Logger(label: "test"))
        m.timeSynchronized = synchronized
        m.start()
        loop.runDeferred()
        return (m, clock, d, loop)
    }

    @Test(arguments: ClockUnsyncedDisplay.allCases, ClockBackground.allCases)
    func shownWhileUnsynchronisedAndGoneInTheNextFrame(_ mode: ClockUnsyncedDisplay, _ background: ClockBackground) throws {
        let (m, clock, d, loop) = try make(mode, synchronized: false, background: background)
        let (refManager, refClock, refDisplay, refLoop) = try make(mode, synchronized: true, background: background)
        defer { withExtendedLifetime(refManager) {} }
        let unsynced = Frame(d, size: Self.size), synced = Frame(refDisplay, size: Self.size)
        let fg = clock.textColor, bg = clock.backgroundColor
        let markColor = UnsyncedClockDrawing.markColor(Theme.default, on: bg)

        switch mode {
        case .mark:
            // The time as usual; a mark in the top-left corner, above the time.
            #expect(!clock.markRect.isEmpty)
            #expect(clock.markRect.maxY <= clock.timeRect.y)
            #expect(clock.markRect.x < Self.size.width / 4 && clock.markRect.y < Self.size.height / 8)
            #expect(unsynced.count(notEqual: bg, in: clock.markRect) > 50)
            let shares = unsynced.inkShares(in: clock.markRect, ink: markColor, background: bg)
            #expect(shares != nil, "the mark is drawn in \(markColor) only")
            #expect((shares ?? []).filter { $0 > 0.6 }.count > 20, "the mark is clearly visible")
            #expect(synced.count(notEqual: bg, in: clock.markRect) == 0)
            #expect(unsynced.difference(from: synced) == unsynced.difference(from: synced).intersection(clock.markRect))
        case .dimSeconds:
            // The seconds digits hold no pixel of the text colour; hours and minutes still do.
            #expect(!clock.secondsRect.isEmpty)
            #expect(synced.count(fg, in: clock.secondsRect) > 10)
            #expect(unsynced.count(fg, in: clock.secondsRect) == 0)
            let hoursAndMinutes = Rect(x: clock.timeRect.x, y: clock.timeRect.y,
                                       width: clock.secondsRect.x - clock.timeRect.x, height: clock.timeRect.height)
            #expect(unsynced.count(fg, in: hoursAndMinutes) > 10)
            #expect(clock.markRect.isEmpty)
            #expect(clock.timeRect.contains(unsynced.difference(from: synced)))
        case .hide:
            // No time: the theme's background, the mark, and a frame that does not change with
            // the time (no presents while the seconds pass, the same pixels a minute later).
            #expect(bg == Theme.default.palette.background)
            #expect(unsynced.count(notEqual: bg, in: clock.markRect) > 50)
            let shares = unsynced.inkShares(in: clock.markRect, ink: markColor, background: bg)
            #expect(shares != nil, "the mark is drawn in \(markColor) only")
            #expect((shares ?? []).filter { $0 > 0.6 }.count > 20, "the mark is clearly visible")
            #expect(clock.labelRect.isEmpty)
            let presents = d.presentCount
            loop.advance(by: 61_000_000_000)
            refLoop.advance(by: 61_000_000_000)
            #expect(d.presentCount == presents)
            #expect(Frame(d, size: Self.size) == unsynced)
            // The model keeps time (for status) while nothing is drawn.
            #expect(clock.reading == refClock.reading)
        case .ignore:
            #expect(unsynced == synced)
            #expect(clock.markRect.isEmpty)
        }

        // Synchronised: within one frame the display is exactly the synchronised clock's.
        let presents = d.presentCount
        let reference = Frame(refDisplay, size: Self.size)
        m.timeSynchronized = true
        loop.runDeferred()
        #expect(d.presentCount == presents + (mode == .ignore ? 0 : 1))
        #expect(clock.reading == refClock.reading)
        #expect(Frame(d, size: Self.size) == reference)
        #expect(clock.markRect.isEmpty && clock.secondsRect.isEmpty)
    }

    /// Losing synchronisation (the kernel reports it again) brings the mark back at once.
    @Test func markComesBackWhenSynchronisationIsLost() throws {
        let (m, clock, d, loop) = try make(.mark, synchronized: true)
        #expect(clock.markRect.isEmpty)
        let presents = d.presentCount
        m.timeSynchronized = false
        loop.runDeferred()
        #expect(d.presentCount == presents + 1)
        let markColor = UnsyncedClockDrawing.markColor(Theme.default, on: clock.backgroundColor)
        #expect(Frame(d, size: Self.size).count(notEqual: clock.backgroundColor, in: clock.markRect) > 50)
        let shares = Frame(d, size: Self.size).inkShares(in: clock.markRect, ink: markColor, background: clock.backgroundColor)
        #expect((shares ?? []).filter { $0 > 0.6 }.count > 20)
        // A clock of a config reload learns it too.
        let again = ClockScene(name: "wall", timeZone: LocalZone.fixed(0))
        m.replaceScenes([again], switching: SceneSwitching(), theme: .default)
        loop.runDeferred()
        #expect(again.timeSynchronized == false && !again.markRect.isEmpty)
    }

    /// A clock that is not on screen learns it too (and shows it when it appears); the scene on
    /// screen is neither woken nor redrawn for it.
    @Test func offScreenClockLearnsItWithoutAFrame() throws {
        let loop = ManualEventLoop()
        let d = try HeadlessDisplay(size: Self.size)
        let other = ProbeScene("other", .red)
        let clock = ClockScene(name: "wall", timeZone: LocalZone.fixed(0))
        let m = SceneManager(scenes: [other, clock], theme: .default, display: d, loop: loop, logger: Logger(label: "test"))
        m.start()
        loop.runDeferred()
        let presents = d.presentCount, updates = other.updates
        m.timeSynchronized = false
        loop.runDeferred()
        #expect(d.presentCount == presents && other.updates == updates)
        #expect(clock.timeSynchronized == false)
        try m.show(sceneNamed: "wall")
        loop.runDeferred()
        #expect(!clock.markRect.isEmpty)
    }

    @Test func unsyncedIsReadFromTheConfig() throws {
        let loc = { (line: Int) in KioskCore.SourceLocation(file: "wall.toml", line: line) }
        func table(_ entries: [(String, ConfigValue)]) -> ConfigTable {
            ConfigTable(path: "scene.wall", location: loc(3),
                        entries: entries.enumerated().map { ($0.element.0, ConfigNode($0.element.1, at: loc(4 + $0.offset))) })
        }
        let context = SceneContext(name: "wall", stored: { _ in nil }, counterIntents: { _ in }, logger: Logger(label: "test"), dataDirectory: "/tmp")
        #expect((try ClockScene.make(table([]), context) as? ClockScene)?.unsynced == .mark)
        #expect((try ClockScene.make(table([("unsynced", .string("dim-seconds"))]), context) as? ClockScene)?.unsynced == .dimSeconds)
        #expect((try ClockScene.make(table([("unsynced", .string("hide"))]), context) as? ClockScene)?.unsynced == .hide)
        #expect((try ClockScene.make(table([("unsynced", .string("ignore"))]), context) as? ClockScene)?.unsynced == .ignore)
        var message = "no error"
        do { _ = try ClockScene.make(table([("show_label", .bool(true)), ("unsynced", .string("blink"))]), context) } catch { message = "\(error)" }
        #expect(message.contains("wall.toml:5"))
        #expect(message.contains("scene.wall.unsynced"))
        #expect(message.contains("\"mark\", \"dim-seconds\", \"hide\", \"ignore\""))
        #expect(message.contains("\"blink\""))
    }
}
