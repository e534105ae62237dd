import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskTesting
import NIOCore
import Synchronization
import Testing

/// `ManualEventLoop` as a job's clock: nothing fires until the test advances it.
final class VirtualJobClock: @unchecked Sendable {
    // @unchecked: the loop is used from the test's thread only (the jobs' timers fire inside
    // `advance`, on that thread).
    let loop = ManualEventLoop()
    var clock: JobClock {
        JobClock(now: { [self] in loop.monotonic }, after: { [self] ns, work in
            let id = try! loop.schedule(after: ns) { _ in work() }
            return { [self] in loop.cancel(id) }
        })
    }
}

/// The deadline rule of every transport (`ControlJob`), on virtual time: dropped before it
/// starts → 503; started and finished → its answer; started and overdue → 504; an answer after
/// the 504 is ignored; exactly one answer whatever happens.
@Suite struct ControlJobTests {
    static let ms: Int64 = 1_000_000
    /// The answers a job gave, in order.
    final class Answers: Sendable {
        let list = Mutex<[(ControlResponse, ControlJob.Ending)]>([])
        func add(_ r: ControlResponse, _ e: ControlJob.Ending) { list.withLock { $0.append((r, e)) } }
    }
    let time = VirtualJobClock()
    let answers = Answers()

    func job(_ command: ControlCommand = .status, received: Int64? = nil) -> ControlJob {
        ControlJob(command: command, received: received, requestTimeout: .milliseconds(200), resultTimeout: .milliseconds(600),
                   clock: time.clock, completion: answers.add)
    }
    var got: [(status: Int, ending: ControlJob.Ending)] { answers.list.withLock { $0.map { ($0.0.status, $0.1) } } }
    var lastError: String? { answers.list.withLock { $0.last?.0.jsonObject?["error"] as? String } }

    @Test func notStartedByTheDeadlineIs503AndNeverRuns() {
        let j = job()
        time.loop.advance(by: 199 * Self.ms)
        #expect(got.isEmpty, "refused before its deadline")
        time.loop.advance(by: 1 * Self.ms)
        #expect(got.map(\.status) == [503] && got.map(\.ending) == [.notStarted])
        #expect(lastError == "kioskd is busy: the render loop did not start the request within 200 ms; not carried out")
        var ran = false
        #expect(!j.run { _ in ran = true; return .json(200, ChoiceAnswer()) })
        #expect(!ran, "carried out after its 503")
        time.loop.advance(by: 10_000 * Self.ms)
        #expect(got.count == 1)
        #expect(time.loop.pendingTimers == 0)
    }

    @Test func startedAndFinishedInTimeGivesItsAnswerOnce() {
        let j = job(.scene(name: "clock"))
        time.loop.advance(by: 150 * Self.ms)
        var reply: (@Sendable (ControlResponse) -> Void)?
        var seen: ControlCommand?
        let ran = j.run { command, r in
            seen = command
            reply = r
        }
        #expect(ran && seen == .scene(name: "clock"))
        // Past the first deadline: started in time, so no 503; waited for.
        time.loop.advance(by: 500 * Self.ms)
        #expect(got.isEmpty)
        reply?(.json(200, ChoiceAnswer(scene: "clock")))
        #expect(got.map(\.status) == [200] && got.map(\.ending) == [.answered])
        #expect(time.loop.pendingTimers == 0, "the deadline's timer was cancelled")
        reply?(.error(500, "again"))
        time.loop.advance(by: 10_000 * Self.ms)
        #expect(got.count == 1)
        #expect(!j.run { _ in .error(500, "twice") }, "a job runs once")
    }

    @Test func startedAndOverdueIs504AndTheLateAnswerIsIgnored() {
        let j = job()
        var reply: (@Sendable (ControlResponse) -> Void)?
        #expect(j.run { _, r in reply = r })
        // The result deadline is 600 ms after the request deadline (200 ms after arrival).
        time.loop.advance(by: 799 * Self.ms)
        #expect(got.isEmpty, "given up before the result deadline")
        time.loop.advance(by: 1 * Self.ms)
        #expect(got.map(\.status) == [504] && got.map(\.ending) == [.unfinished])
        #expect(lastError == "kioskd started the request but it did not finish within 0.6 s; it may or may not have been carried out")
        reply?(.json(200, ChoiceAnswer()))
        #expect(got.map(\.status) == [504], "the late answer was delivered")
        #expect(time.loop.pendingTimers == 0)
    }

    @Test func runPastTheDeadlineBeforeItsTimerFiredIs503() {
        // The request arrived 250 ms ago (it waited behind others on its connection).
        let j = job(received: time.loop.monotonic - 250 * Self.ms)
        // Its timer is due at once but has not fired: `run` itself refuses it.
        var ran = false
        #expect(!j.run { _ in ran = true; return .json(200, ChoiceAnswer()) })
        #expect(!ran)
        #expect(got.map(\.status) == [503] && got.map(\.ending) == [.notStarted])
        time.loop.advance(by: 1_000 * Self.ms)
        #expect(got.count == 1)
    }

    @Test func endedJobsNeverRunAndAnswerOnce() {
        // Not started: dropped, answered with what the transport says, its timer gone.
        let p = job()
        #expect(!p.end(answering: .error(503, "stopping"), evenIfStarted: false))
        #expect(!p.run { _ in .json(200, ChoiceAnswer()) })
        time.loop.advance(by: 10_000 * Self.ms)
        #expect(got.map(\.status) == [503] && got.map(\.ending) == [.notStarted])
        #expect(time.loop.pendingTimers == 0)
        // Started: left to finish unless `evenIfStarted`; then its own answer goes nowhere.
        let s = job()
        var reply: (@Sendable (ControlResponse) -> Void)?
        #expect(s.run { _, r in reply = r })
        #expect(s.end(answering: .error(503, "stopping"), evenIfStarted: false))
        #expect(got.count == 1)
        #expect(s.end(answering: .error(503, "gone"), evenIfStarted: true))
        reply?(.json(200, ChoiceAnswer()))
        time.loop.advance(by: 60_000 * Self.ms)
        #expect(got.map(\.status) == [503, 503] && got.map(\.ending) == [.notStarted, .unfinished])
        #expect(time.loop.pendingTimers == 0)
    }
}
