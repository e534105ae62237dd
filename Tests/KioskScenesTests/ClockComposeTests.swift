import Foundation
import KioskCore
import KioskRender
import KioskScenes
import KioskTesting
import Testing

/// The clock's full frames are composed (`Canvas.compose`: each pixel written once); drawn
/// inside a clip the same scene goes through cairo's fill and masks. Both must give the same
/// 32-bit pixels, frame after frame, in every state that composes.
@Suite struct ClockComposeTests {
    static let utc = LocalZone.fixed(0)
    /// 2024-01-01 20:08:58 UTC.
    static let start: Int64 = 1_704_067_200 + 20 * 3600 + 8 * 60 + 58

    static func same(_ a: Canvas, _ b: Canvas) -> Bool {
        let p = a.pixels, q = b.pixels
        for y in 0..<p.size.height where memcmp(p.base + y * p.stride, q.base + y * q.stride, p.size.width * 4) != 0 { return false }
        return true
    }

    @Test(arguments: [Size(width: 333, height: 211), Size(width: 1920, height: 1080)])
    func composedFramesAreCairosFrames(size: Size) throws {
        for (label, synced, background) in [(true, true, ClockBackground.time), (false, true, .time), (true, false, .time), (true, true, .theme)] {
            let scenes = [ClockScene(name: "a", background: background, timeZone: Self.utc, showLabel: label, unsynced: .mark),
                          ClockScene(name: "b", background: background, timeZone: Self.utc, showLabel: label, unsynced: .mark)]
            let composed = try Canvas(size: size), reference = try Canvas(size: size)
            for s in scenes {
                s.layout(size: size)
                s.apply(theme: .dark)
                _ = s.setTimeSynchronized(synced)
            }
            for second in 0..<3 {
                let now = WallTime(realtimeNs: (Self.start + Int64(second)) * 1_000_000_000, monotonicNs: Int64(second) * 1_000_000_000)
                if second == 0 { for s in scenes { s.didAppear(now: now) } } else { for s in scenes { _ = s.update(now: now) } }
                let d1 = scenes[0].draw(into: composed)
                var d2 = Damage()
                // Inside a clip (the whole canvas) nothing is written past cairo: the reference.
                reference.withClip(Rect(size: size)) { d2 = scenes[1].draw(into: reference) }
                composed.flush(); reference.flush()
                #expect(d1 == d2)
                #expect(scenes[0].timeRect == scenes[1].timeRect && scenes[0].labelRect == scenes[1].labelRect
                        && scenes[0].markRect == scenes[1].markRect)
                #expect(!scenes[0].timeRect.isEmpty)
                #expect(Self.same(composed, reference), "\(size) label \(label) synced \(synced) \(background) second \(second)")
            }
        }
    }

    /// After the first frame (fonts fitted, stamps rendered) a tick lays out no text with pango,
    /// also while the "not synchronised" mark is shown: an idle wall clock then costs only the
    /// writing of its pixels.
    @Test(arguments: [true, false])
    func ticksLayOutNoText(synced: Bool) throws {
        let size = Size(width: 640, height: 360)
        let clock = ClockScene(name: "c", background: .time, timeZone: Self.utc, showLabel: true, unsynced: .mark)
        let canvas = try Canvas(size: size)
        clock.layout(size: size)
        clock.apply(theme: .dark)
        _ = clock.setTimeSynchronized(synced)
        var layouts: [Int] = []
        for second in 0..<4 {
            let now = WallTime(realtimeNs: (Self.start + Int64(second)) * 1_000_000_000, monotonicNs: Int64(second) * 1_000_000_000)
            if second == 0 { clock.didAppear(now: now) } else { _ = clock.update(now: now) }
            #expect(clock.draw(into: canvas) == Damage.full(size))
            layouts.append(canvas.textLayouts)
        }
        #expect(synced || !clock.markRect.isEmpty, "the mark is shown while not synchronised")
        #expect(layouts.dropFirst().allSatisfy { $0 == layouts[0] }, "pango layouts after each frame: \(layouts)")
    }
}
