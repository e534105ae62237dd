import Testing
import KioskCore
@testable import KioskDRM

private let size = Size(width: 100, height: 50)
private func r(_ x: Int, _ y: Int, _ w: Int, _ h: Int) -> Rect { Rect(x: x, y: y, width: w, height: h) }

private struct NoFrame: Error {}
/// `beginFrame` outside the test macros (they cannot take mutating calls).
private func attempt(_ s: inout FlipScheduler, _ d: Damage) -> Int? { s.beginFrame(d)?.index }
private func begin(_ s: inout FlipScheduler, _ d: Damage) throws -> (index: Int, copy: Damage, modeset: Bool) {
    guard let job = s.beginFrame(d) else { throw NoFrame() }
    return job
}

@Suite struct FlipSchedulerTests {
    @Test func firstFrameIsAFullModeset() throws {
        var s = FlipScheduler(count: 2, logicalSize: size)
        let job = try begin(&s, (Damage([r(0, 0, 10, 10)])))
        #expect(job.index == 0 && job.modeset)
        #expect(job.copy.rects == [Rect(size: size)])
        s.shownByModeset(0)
        #expect(s.state == .shown(front: 0))
    }

    @Test func neverHandsOutTheFrontOrThePendingBuffer() throws {
        for count in [2, 3] {
            var s = FlipScheduler(count: count, logicalSize: size)
            let first = try begin(&s, (.full(size)))
            s.shownByModeset(first.index)
            for i in 0..<10 {
                let front = s.front
                let job = try begin(&s, (Damage([r(i, 0, 1, 1)])))
                #expect(job.index != front && !job.modeset)
                s.flipQueued(job.index)
                // While the flip is pending nothing may be drawn; the damage is kept for later.
                #expect(attempt(&s, Damage([r(50, 20, 2, 2)])) == nil)
                #expect(s.state == .pending(front: front, to: job.index))
                s.flipCompleted()
                #expect(s.front == job.index)
            }
        }
    }

    @Test func bufferAgeCopiesWhatEachBufferMissed() throws {
        var s = FlipScheduler(count: 2, logicalSize: size)
        let a = try begin(&s, (.full(size)))
        s.shownByModeset(a.index)
        // Buffer 1 missed the full first frame.
        let b = try begin(&s, (Damage([r(0, 0, 5, 5)])))
        #expect(b.index == 1 && b.copy.area == size.area)
        s.flipQueued(1); s.flipCompleted()
        // Buffer 0 missed only the previous frame's rect: it copies that plus its own.
        let c = try begin(&s, (Damage([r(50, 0, 5, 5)])))
        #expect(c.index == 0 && c.copy.area == 50 && Set(c.copy.rects) == [r(0, 0, 5, 5), r(50, 0, 5, 5)])
        s.flipQueued(0); s.flipCompleted()
        // Damage remembered while a flip was pending reaches every buffer.
        let d = try begin(&s, (Damage([r(80, 40, 5, 5)])))
        s.flipQueued(d.index)
        #expect(attempt(&s, Damage([r(10, 40, 5, 5)])) == nil)
        s.flipCompleted()
        let e = try begin(&s, (Damage()))
        #expect(e.index == 0 && Set(e.copy.rects) == [r(80, 40, 5, 5), r(10, 40, 5, 5)])
    }

    @Test func tripleBufferingAges() throws {
        var s = FlipScheduler(count: 3, logicalSize: size)
        let areas: [Int] = try (0..<5).map { i in
            let job = try begin(&s, (i == 0 ? .full(size) : Damage([r(i * 10, 0, 5, 5)])))
            if job.modeset { s.shownByModeset(job.index) } else { s.flipQueued(job.index); s.flipCompleted() }
            return job.copy.area
        }
        // Buffers 1 and 2 start empty (full copies); then each copies the last three frames' rects.
        #expect(areas == [size.area, size.area, size.area, 75, 75])
    }

    @Test func failuresAndModesetResets() throws {
        var s = FlipScheduler(count: 2, logicalSize: size)
        let a = try begin(&s, (.full(size)))
        s.shownByModeset(a.index)
        let b = try begin(&s, (Damage([r(0, 0, 5, 5)])))
        s.frameFailed(b.index)          // flip refused: the buffer needs everything again
        #expect(s.missed[b.index] == .full(size))
        s.flipQueued(b.index)
        s.abandonFlip()                 // event never came: the old front stays
        #expect(s.state == .shown(front: a.index))
        s.needModeset(full: true)
        let c = try begin(&s, (Damage()))
        #expect(c.modeset && c.index == 1 && c.copy == .full(size), "not the buffer the CRTC still shows")
    }

    @Test func modesetFrameAvoidsTheBufferTheCRTCStillShows() throws {
        for count in [2, 3] {
            var s = FlipScheduler(count: count, logicalSize: size)
            let a = try begin(&s, (.full(size)))
            s.shownByModeset(a.index)
            s.needModeset(full: true)
            let b = try begin(&s, (.full(size)))
            #expect(b.modeset && b.index != a.index)
            s.shownByModeset(b.index)
            let c = try begin(&s, (.full(size)))
            s.flipQueued(c.index)
            s.needModeset(full: true)   // the flip queued before completes after
            s.flipCompleted()
            #expect(s.scannedOut == c.index)
            let d = try begin(&s, (.full(size)))
            #expect(d.modeset && d.index != c.index)
        }
    }

    @Test func damageOutsideTheFrameIsClipped() throws {
        var s = FlipScheduler(count: 2, logicalSize: size)
        let a = try begin(&s, (.full(size)))
        s.shownByModeset(a.index)
        s.remember(Damage([r(90, 40, 50, 50)]))
        #expect(s.missed[1] == .full(size))
        #expect(s.missed[0].rects == [r(90, 40, 10, 10)])
    }
}
