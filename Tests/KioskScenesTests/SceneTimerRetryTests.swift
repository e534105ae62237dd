import Glibc
import Testing
import Logging
import KioskCore
import KioskRender
import KioskPosix
@testable import KioskScenes

/// A scene timer that cannot be armed is tried again with a backoff: the scene keeps ticking.
@Suite struct SceneTimerRetryTests {
    @Test func failedArmIsRetriedAndTheSceneKeepsTicking() throws {
        let a = ProbeScene("a", .red)
        let loop = try EventLoop()
        let d = try HeadlessDisplay(size: Size(width: 16, height: 16))
        let m = SceneManager(scenes: [a], theme: .default, display: d, loop: loop, time: SystemTimeSource(), logger: Logger(label: "test"))
        // A deadline every 20 ms, like a fast clock.
        a.deadline = .monotonic(nowNanos(.monotonic) + 20_000_000)
        var refusals = 0
        m.armFault = {
            guard refusals < 3 else { return nil }
            refusals += 1
            return KioskError(.system, "timerfd_create failed: Too many open files (errno 24)", errno: EMFILE)
        }
        m.start()
        let t0 = nowNanos(.monotonic)
        // Three refusals: retried after 50, 100 and 200 ms; then ticks resume on the scene's deadlines.
        while a.updates < 6 && nowNanos(.monotonic) - t0 < 3_000_000_000 {
            if let dl = a.deadline, case .monotonic(let t) = dl, t <= nowNanos(.monotonic) {
                a.deadline = .monotonic(nowNanos(.monotonic) + 20_000_000)
            }
            try loop.runOnce(timeoutMs: 100)
        }
        #expect(refusals == 3)
        #expect(a.updates >= 6, "the scene stopped ticking after \(a.updates) updates")
        let elapsed = nowNanos(.monotonic) - t0
        // 50 + 100 + 200 ms of backoff, then 20 ms ticks: well under a second.
        #expect(elapsed >= 350_000_000 && elapsed < 1_500_000_000, "\(elapsed / 1_000_000) ms")
        m.stop()
    }
}
