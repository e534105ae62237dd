import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskScenes
import KioskTesting
import Testing
import KioskPosix

@Suite struct DaemonBlankingTests {
    /// A daemon on virtual time: the blanking changes below come from its own timers as `loop`
    /// advances, never from a call to `evaluate`.
    func daemon(_ dir: String, blank: String, loop: ManualEventLoop) throws -> (Daemon, HeadlessDisplay) {
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [display.blank]
        \(blank)
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        """, dir)
        return try headlessDaemon(path, on: loop)
    }

    func hhmm(_ s: Int) -> String {
        let m = ((s / 60) % 1440 + 1440) % 1440
        return String(format: "%02d:%02d", m / 60, m % 60)
    }

    @Test func idleBlankAndTouchWakesWithoutReachingTheScene() throws {
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let (d, display) = try daemon(tempDir(), blank: "idle_seconds = 30", loop: loop)
        d.startAsKioskd()
        #expect(!display.isBlanked)
        loop.advance(seconds: 29)
        #expect(!display.isBlanked)
        loop.advance(seconds: 2)
        #expect(display.isBlanked)
        // The waking tap lights the panel and does not count.
        d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5, timeUsec: loop.now().monotonicUsec)))
        #expect(!display.isBlanked)
        #expect((d.manager.current as? CounterControl).map { try? $0.value(of: "HOME") } == 0)
    }

    @Test func scheduleBlanksAndManualOverrideHolds() throws {
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let now = Int(LocalZone.system.secondsSinceMidnight(at: 1_700_000_000))
        let period = "\(hhmm(now - 3600))-\(hhmm(now + 3600))"
        let (d, display) = try daemon(tempDir(), blank: "schedule = [\"\(period)\"]\nwake_seconds = 10", loop: loop)
        d.startAsKioskd()
        #expect(display.isBlanked, "period \(period)")
        _ = d.handle(.blank(on: false))
        #expect(!display.isBlanked)
        loop.advance(seconds: 600)
        #expect(!display.isBlanked, "the manual choice holds until the next scheduled change")
        _ = d.handle(.blank(on: true))
        #expect(display.isBlanked)
        // A touch wakes it for wake_seconds.
        d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5)))
        #expect(!display.isBlanked)
        loop.advance(seconds: 11)
        #expect(display.isBlanked)
        // After the period ends, the panel is lit.
        loop.advance(seconds: 3600 + 60)
        #expect(!display.isBlanked)
    }
}
