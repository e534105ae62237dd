import KioskTestTraits
import Testing
import Glibc

/// Whether this process may set the wall clock (CAP_SYS_TIME): tried once, by setting it to
/// itself (a step of microseconds).
private let maySetWallClock: Bool = {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return clock_settime(CLOCK_REALTIME, &ts) == 0
}()

@testable import KioskPosix
import KioskCore

@Suite(.ownThreads) struct EventLoopTests {
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
        // Any process may set the wall clock meanwhile (settingTheWallClock… below does, as root):
        // the timer then fires with .clockChanged and, as every client must, is scheduled again.
        func arm() throws {
            try loop.schedule(at: deadline, clock: .realtime) { f in
                if f == .clockChanged { try? arm(); return }
                at = nowNanos(.realtime); why = f; loop.stop()
            }
        }
        try arm()
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

    /// Write interest: a full non-blocking socket is not reported writable; once the peer
    /// drains it, the handler hears `.write`; with the interest taken away it hears nothing more.
    @Test func writeInterestReportsWritableOnlyWhileAsked() throws {
        let loop = try EventLoop()
        var sv: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sv) == 0)
        defer { close(sv[0]); close(sv[1]) }
        #expect(fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK) == 0)
        // Fill the socket until a write would block.
        var chunk = [UInt8](repeating: 7, count: 4096)
        while write(sv[0], &chunk, chunk.count) > 0 {}
        #expect(errno == EAGAIN)
        var seen: [EventLoop.WatchEvents] = []
        let w = try loop.watch(fd: sv[0], events: [.read, .write]) { ev in seen.append(ev) }
        try loop.runOnce(timeoutMs: 50)
        #expect(seen.isEmpty, "a full socket is neither readable nor writable: \(seen)")
        // The peer reads everything: the socket becomes writable.
        var sink = [UInt8](repeating: 0, count: 65536)
        #expect(fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK) == 0)
        while read(sv[1], &sink, sink.count) > 0 {}
        try loop.runOnce(timeoutMs: 1000)
        #expect(seen == [.write])
        // Read interest only: writable no longer reported; a byte from the peer is.
        try loop.setInterest(w, .read)
        seen.removeAll()
        try loop.runOnce(timeoutMs: 50)
        #expect(seen.isEmpty)
        var one: UInt8 = 1
        #expect(write(sv[1], &one, 1) == 1)
        try loop.runOnce(timeoutMs: 1000)
        #expect(seen == [.read])
        loop.unwatch(w)
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

    /// Open descriptors of this process.
    func openDescriptors() -> Int {
        guard let d = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(d) }
        var n = 0
        while readdir(d) != nil { n += 1 }
        return n
    }

    @Test func timersTakeNoDescriptorOfTheirOwn() throws {
        let loop = try EventLoop()
        let before = openDescriptors()
        var ids: [EventLoop.TimerID] = []
        for i in 0..<3000 {
            let clock: ClockID = i % 2 == 0 ? .monotonic : .realtime
            ids.append(try loop.schedule(at: nowNanos(clock) + 60_000_000_000 + Int64(i), clock: clock) { _ in })
        }
        try loop.runOnce(timeoutMs: 0)
        // Other tests run in parallel and may open a few descriptors meanwhile.
        #expect(openDescriptors() - before < 100, "3000 timers opened \(openDescriptors() - before) descriptors")
        for id in ids { loop.cancel(id) }
    }

    @Test func manyTimersFireInDeadlineOrderAndCancelledOnesNever() throws {
        let loop = try EventLoop()
        let now = nowNanos(.monotonic)
        var fired: [Int] = []
        var ids: [Int: EventLoop.TimerID] = [:]
        // Deadlines 0…39 ms in a scrambled order; every third one is cancelled.
        for k in 0..<40 {
            let ms = (k * 17) % 40
            ids[ms] = try loop.schedule(at: now + Int64(ms) * 1_000_000, clock: .monotonic) { _ in fired.append(ms) }
        }
        for ms in stride(from: 0, to: 40, by: 3) { loop.cancel(ids[ms]!) }
        try loop.schedule(at: now + 60_000_000, clock: .monotonic) { _ in loop.stop() }
        try loop.run()
        #expect(fired == (0..<40).filter { $0 % 3 != 0 })
        #expect(loop.pendingTimers == 0)
    }

    @Test func aHandlerCanCancelATimerDueInTheSameIteration() throws {
        let loop = try EventLoop()
        let past = nowNanos(.monotonic) - 1_000_000
        var second: EventLoop.TimerID?
        var fired: [String] = []
        try loop.schedule(at: past, clock: .monotonic) { _ in fired.append("first"); loop.cancel(second!) }
        second = try loop.schedule(at: past + 1, clock: .monotonic) { _ in fired.append("second") }
        try loop.runOnce(timeoutMs: 1000)
        try loop.runOnce(timeoutMs: 20)
        #expect(fired == ["first"])
    }

    @Test func timersStillFireOnTimeWhenArmingTheTimerfdFails() throws {
        let loop = try EventLoop()
        var failures = 0
        loop.armFault = { _ in failures += 1; return EMFILE }
        let mono = nowNanos(.monotonic) + 30_000_000, real = nowNanos(.realtime) + 40_000_000
        var at: [String: Int64] = [:]
        try loop.schedule(at: mono, clock: .monotonic) { f in at["monotonic"] = nowNanos(.monotonic); #expect(f == .expired) }
        try loop.schedule(at: real, clock: .realtime) { f in at["realtime"] = nowNanos(.realtime); #expect(f == .expired); loop.stop() }
        let t0 = nowNanos(.monotonic)
        try loop.run()
        #expect(failures > 0)
        #expect(at["monotonic"].map { $0 >= mono } == true)
        #expect(at["realtime"].map { $0 >= real } == true)
        // On time: not a second's retry late.
        #expect(nowNanos(.monotonic) - t0 < 500_000_000)
        // Arming works again: the next timer is armed on its timerfd (one wake-up, no polling).
        loop.armFault = nil
        var fired = false
        try loop.schedule(after: 10_000_000) { _ in fired = true }
        let w = loop.wakeups
        try loop.runOnce()
        #expect(fired)
        #expect(loop.wakeups == w + 1)
    }

    @Test(.enabled(if: maySetWallClock, "setting the wall clock needs CAP_SYS_TIME"))
    func settingTheWallClockFiresRealtimeTimersWithClockChanged() throws {
        let loop = try EventLoop()
        var why: [EventLoop.TimerFire] = []
        var monoFired = false
        try loop.schedule(at: nowNanos(.realtime) + 3_600_000_000_000, clock: .realtime) { why.append($0) }
        try loop.schedule(at: nowNanos(.realtime) + 7_200_000_000_000, clock: .realtime) { why.append($0) }
        try loop.schedule(at: nowNanos(.monotonic) + 3_600_000_000_000, clock: .monotonic) { _ in monoFired = true }
        try loop.runOnce(timeoutMs: 0) // arms the timerfds
        // Set the wall clock to itself (a step of microseconds): needs CAP_SYS_TIME.
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        try #require(clock_settime(CLOCK_REALTIME, &ts) == 0, "clock_settime: errno \(errno)")
        try loop.runOnce(timeoutMs: 1000)
        #expect(why == [.clockChanged, .clockChanged])
        #expect(!monoFired)
        #expect(loop.pendingTimers == 1)
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
