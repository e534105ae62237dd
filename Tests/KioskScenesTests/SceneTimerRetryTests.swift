import Glibc
import Testing
import Logging
import KioskCore
import KioskRender
import KioskTesting
@testable import KioskScenes

/// A scene timer that cannot be armed is tried again with a backoff: the scene keeps ticking.
@Suite struct SceneTimerRetryTests {
    @Test func failedArmIsRetriedAndTheSceneKeepsTicking() throws {
        let a = ProbeScene("a", .red)
        let loop = ManualEventLoop()
        let d = try HeadlessDisplay(size: Size(width: 16, height: 16))
        let m = SceneManager(scenes: [a], theme: .default, display: d, loop: loop, logger: Logger(label: "test"))
        // A deadline on every multiple of 20 ms, like a fast clock.
        a.period = 20_000_000
        let t0 = loop.now(.monotonic)
        #expect(t0 % 20_000_000 == 0)
        var refusals = 0
        m.armFault = {
            guard refusals < 3 else { return nil }
            refusals += 1
            return KioskError(.system, "timerfd_create failed: Too many open files (errno 24)", errno: EMFILE)
        }
        m.start()
        loop.advance(by: 400_000_000)
        #expect(refusals == 3)
        // Refused at start, then at the retries after 50 and 100 ms; the retry after another
        // 200 ms arms the timer, and the scene is back on its 20 ms grid.
        let ms = a.updateTimes.map { ($0 - t0) / 1_000_000 }
        #expect(ms == [50, 150, 350, 360, 380, 400])
        // A refusal after a success starts again at the shortest backoff.
        refusals = 2
        loop.advance(by: 20_000_000)             // tick at 420 ms; arming it is refused
        loop.advance(by: 60_000_000)             // retried at 470 ms and armed again: 480 ms
        #expect(a.updateTimes.map { ($0 - t0) / 1_000_000 }.suffix(3) == [420, 470, 480])
        m.stop()
        #expect(loop.pendingTimers == 0)
    }
}
