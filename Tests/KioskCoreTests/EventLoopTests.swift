import Testing
import Glibc
@testable import KioskCore

@Suite struct EventLoopTests {
    @Test func timersFireInDeadlineOrderAndStopRuns() throws {
        let loop = try EventLoop()
        var fired: [Int] = []
        let now = nowNanos(.monotonic)
        try loop.schedule(at: now + 30_000_000, clock: .monotonic) { _ in fired.append(2); loop.stop() }
        try loop.schedule(at: now + 10_000_000, clock: .monotonic) { _ in fired.append(1) }
        try loop.run()
        #expect(fired == [1, 2])
    }

    @Test func realtimeTimerFiresAtTheWallClockDeadline() throws {
        let loop = try EventLoop()
        let deadline = nowNanos(.realtime) + 20_000_000
        var at: Int64 = 0
        var why: EventLoop.TimerFire?
        try loop.schedule(at: deadline, clock: .realtime) { f in at = nowNanos(.realtime); why = f; loop.stop() }
        try loop.run()
        #expect(why == .expired)
        #expect(at >= deadline)
    }

    @Test func cancelledTimerNeverFires() throws {
        let loop = try EventLoop()
        var fired = false
        let t = try loop.schedule(after: 5_000_000) { _ in fired = true }
        loop.cancel(t)
        try loop.schedule(after: 20_000_000) { _ in loop.stop() }
        try loop.run()
        #expect(!fired)
    }

    @Test func readableDescriptorCallsItsHandler() throws {
        let loop = try EventLoop()
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        var got: UInt8 = 0
        let w = try loop.watch(fd: fds[0]) {
            var b: UInt8 = 0
            _ = read(fds[0], &b, 1)
            got = b
            loop.stop()
        }
        var v: UInt8 = 42
        _ = write(fds[1], &v, 1)
        try loop.run()
        loop.unwatch(w)
        #expect(got == 42)
    }

    @Test func postedWorkFromAnotherThreadRuns() async throws {
        let loop = try EventLoop()
        let box = Box()
        let t = Thread { loop.post { box.value = 7; loop.stop() } }
        t.start()
        try loop.run()
        #expect(box.value == 7)
    }

    @Test func deferredWorkRunsWithoutAnExtraWakeup() throws {
        let loop = try EventLoop()
        var order: [String] = []
        try loop.schedule(after: 1_000_000) { _ in
            order.append("timer")
            loop.deferToEndOfIteration { order.append("deferred") }
        }
        try loop.runOnce()
        #expect(order == ["timer", "deferred"])
        #expect(loop.wakeups == 1)
    }
}

final class Box: @unchecked Sendable { var value = 0 }

/// A minimal thread for the cross-thread test (KioskCore has no Foundation).
final class Thread: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
    func start() {
        var tid = pthread_t()
        let unmanaged = Unmanaged.passRetained(self)
        pthread_create(&tid, nil, { arg in
            let t = Unmanaged<Thread>.fromOpaque(arg!).takeRetainedValue()
            t.body()
            return nil
        }, unmanaged.toOpaque())
        pthread_detach(tid)
    }
}
