import Foundation
import KioskTestTraits
import Testing
import KioskCore
import KioskTesting
import KioskPosix
import Synchronization

/// The virtual-time loop that scene and controller tests run on must keep the real loop's rules:
/// due timers fire in deadline order across both clocks, each with the clocks at its deadline;
/// a cancelled timer never fires; setting the wall clock fires realtime timers as changed.
@Suite(.ownThreads) struct ManualEventLoopTests {
    @Test func timersFireInDeadlineOrderAtTheirOwnTime() throws {
        let loop = ManualEventLoop(monotonic: 0, realtime: 1_000)
        var log: [String] = []
        try loop.schedule(after: 300) { _ in log.append("m300@\(loop.now(.monotonic))") }
        try loop.schedule(at: 1_100, clock: .realtime) { _ in log.append("r100@\(loop.now(.monotonic))") }
        let gone = try loop.schedule(after: 200) { _ in log.append("cancelled") }
        try loop.schedule(after: 900) { _ in log.append("late") }
        loop.cancel(gone)
        #expect(loop.advance(by: 500) == 2)
        #expect(log == ["r100@100", "m300@300"])
        #expect(loop.now(.monotonic) == 500 && loop.now(.realtime) == 1_500)
        #expect(loop.pendingTimers == 1 && loop.nextDeadline(.monotonic) == 900)
    }

    @Test func aTimerScheduledByAHandlerFiresInTheSameAdvanceWhenDue() throws {
        let loop = ManualEventLoop(monotonic: 0, realtime: 0)
        var fires: [Int64] = []
        func tick() throws { try loop.schedule(after: 100) { _ in fires.append(loop.now(.monotonic)); try? tick() } }
        try tick()
        loop.advance(by: 350)
        #expect(fires == [100, 200, 300])
    }

    @Test func settingTheWallClockFiresRealtimeTimersAsChanged() throws {
        let loop = ManualEventLoop(monotonic: 0, realtime: 10_000)
        var got: [TimerFire] = []
        var deferredRan = false
        try loop.schedule(at: 20_000, clock: .realtime) { fire in got.append(fire); loop.deferToEndOfIteration { deferredRan = true } }
        try loop.schedule(after: 5) { _ in got.append(.expired) }
        loop.setWallClock(50_000)
        #expect(got == [.clockChanged] && deferredRan)
        #expect(loop.now(.monotonic) == 0 && loop.pendingTimers == 1)
    }

    /// Both loops share one rule for deferred work: work deferred by deferred work runs in the same
    /// pass, at most 8 rounds deep; the rest waits. (The epoll loop makes two passes an iteration,
    /// before it waits and after it dispatches.)
    @Test func deferredWorkThatDefersMoreRunsUpToEightRoundsAPass() throws {
        let manual = ManualEventLoop()
        let real = try EventLoop()
        for (loop, passes) in [(manual as any Scheduler, 1), (real as any Scheduler, 2)] {
            var ran = 0
            func chain() { ran += 1; if ran < 40 { loop.deferToEndOfIteration(chain) } }
            loop.deferToEndOfIteration(chain)
            if loop === manual { manual.runDeferred() } else { try real.runOnce(timeoutMs: 0) }
            #expect(ran == 8 * passes, "\(type(of: loop))")
            if loop === manual { manual.runDeferred() } else { try real.runOnce(timeoutMs: 0) }
            #expect(ran == 16 * passes, "\(type(of: loop))")
        }
    }

    @Test func aDescriptorMadeReadyRunsItsHandlerAtTheNextStepWithWhatItWaitsFor() throws {
        let loop = ManualEventLoop()
        var got: [String] = []
        let a = try loop.watch(fd: 7) { got.append("7") }
        try loop.watch(fd: 9, events: .write) { got.append("9:\($0.rawValue)") }
        #expect(throws: KioskError.self) { try loop.watch(fd: 7) {} }
        loop.makeReady(7)
        loop.makeReady(9, [.read, .write])
        #expect(got.isEmpty, "nothing runs before a step")
        #expect(loop.step() == 2)
        #expect(got == ["7", "9:2"])
        #expect(loop.step() == 0, "made ready once, run once")
        loop.makeReady(9, .read)
        #expect(loop.step() == 0, "fd 9 waits for writing only")
        try loop.setInterest(WatchID(fd: 9), .read)
        #expect(loop.interest(9) == .read)
        loop.makeReady(9, .read)
        loop.unwatch(a)
        loop.makeReady(7)
        #expect(loop.step() == 1)
        #expect(got == ["7", "9:2", "9:1"])
        #expect(loop.watchedDescriptors == [9])
    }

    @Test func workPostedFromAnotherThreadRunsAtTheNextStepInOrder() throws {
        /// What posted work appended, behind a lock (the posting thread and the loop's differ).
        final class Log: Sendable {
            private let items = Mutex<[Int]>([])
            func append(_ i: Int) { items.withLock { $0.append(i) } }
            var all: [Int] { items.withLock { $0 } }
        }
        let loop = ManualEventLoop()
        let log = Log()
        let posted = DispatchSemaphore(value: 0)
        Thread { for i in 0..<3 { loop.post { log.append(i) } }; posted.signal() }.start()
        posted.wait()
        #expect(log.all.isEmpty, "posted work waits for a step")
        loop.post { loop.post { log.append(99) } }
        #expect(loop.step() == 4)
        #expect(log.all == [0, 1, 2], "work posted by posted work waits for the next step")
        #expect(loop.runPending() == 1)
        #expect(log.all == [0, 1, 2, 99])
        // `advance` starts with a step.
        loop.post { log.append(100) }
        loop.advance(by: 1)
        #expect(log.all.last == 100)
    }
}
