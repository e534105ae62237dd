import KioskControl
import KioskCore
import KioskHTTP
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The clock a job's deadlines run on: monotonic nanoseconds, and one-shot timers whose work may
/// run on any thread and which can be cancelled.
public struct JobClock: Sendable {
    /// Monotonic time now (ns).
    public var now: @Sendable () -> Int64
    /// Runs `work` once, `nanoseconds` from now; returns what cancels it.
    public var after: @Sendable (_ nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void

    public init(now: @escaping @Sendable () -> Int64,
                after: @escaping @Sendable (_ nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void) {
        self.now = now
        self.after = after
    }

    /// Timers on a SwiftNIO event loop (a control connection's own loop).
    public static func nio(_ loop: any NIOCore.EventLoop) -> JobClock {
        JobClock(now: { Int64(NIODeadline.now().uptimeNanoseconds) }, after: { ns, work in
            let task = loop.scheduleTask(in: .nanoseconds(ns)) { work() }
            return { task.cancel() }
        })
    }

    /// Timers on SwiftNIO's shared event loop group (the web server, whose requests are async code).
    public static var shared: JobClock { .nio(MultiThreadedEventLoopGroup.singleton.any()) }
}

/// One request on its way to the render loop, and the deadline rule every transport (control
/// socket, web page) answers it by. The rule, written only here:
/// - the render loop must start the command within `requestTimeout` of the request's arrival;
///   otherwise it is dropped, never carried out, and answered 503 ("kioskd is busy: …; not
///   carried out");
/// - a command started in time is waited for until `resultTimeout` after that deadline; then it
///   is answered 504 ("… it may or may not have been carried out") and its answer, should it
///   still come, is ignored.
///
/// Whatever happens, `completion` is called exactly once, with the answer and how it came about.
/// The thread that carries out commands calls `run`; the transport may `end` the job.
public final class ControlJob: Sendable {
    /// How the job's answer came about.
    public enum Ending: Sendable, Equatable {
        /// The command's own answer.
        case answered
        /// Not started by the deadline: dropped, never carried out (503).
        case notStarted
        /// Started, without a result by the second deadline: outcome unknown (504).
        case unfinished
    }

    public typealias Completion = @Sendable (ControlResponse, Ending) -> Void

    public let command: ControlCommand
    /// The render loop must start the command before this (monotonic ns on `clock`).
    public let deadline: Int64
    private let requestTimeout: TimeAmount
    private let resultTimeout: TimeAmount
    private let clock: JobClock

    private enum Phase { case pending, started, finished, dropped }
    private struct State {
        var phase = Phase.pending
        var completion: Completion?
        /// Cancels the timer armed for the next deadline.
        var cancelTimer: (@Sendable () -> Void)?

        /// Ends the job: takes its completion and stops its timer.
        mutating func end(_ phase: Phase) -> (Completion?, (@Sendable () -> Void)?) {
            self.phase = phase
            defer { completion = nil; cancelTimer = nil }
            return (completion, cancelTimer)
        }
    }
    private let state: NIOLockedValueBox<State>

    /// A job for `command`, which arrived at `received` (monotonic ns on `clock`; default: now).
    /// Its first deadline is armed at once.
    public init(command: ControlCommand, received: Int64? = nil, requestTimeout: TimeAmount, resultTimeout: TimeAmount,
                clock: JobClock, completion: @escaping Completion) {
        self.command = command
        self.requestTimeout = requestTimeout
        self.resultTimeout = resultTimeout
        self.clock = clock
        self.deadline = (received ?? clock.now()) + requestTimeout.nanoseconds
        self.state = NIOLockedValueBox(State(completion: completion))
        arm(deadline - clock.now()) { job in job.requestDeadlinePassed() }
    }

    /// With the timeouts of `limits`.
    public convenience init(command: ControlCommand, received: Int64? = nil, limits: ControlLimits, clock: JobClock,
                            completion: @escaping Completion) {
        self.init(command: command, received: received, requestTimeout: limits.requestTimeout, resultTimeout: limits.resultTimeout,
                  clock: clock, completion: completion)
    }

    /// The answer to a request the render loop did not start in time.
    public static func notStartedAnswer(_ requestTimeout: TimeAmount) -> ControlResponse {
        .error(503, "kioskd is busy: the render loop did not start the request within \(requestTimeout.nanoseconds / 1_000_000) ms; not carried out")
    }

    /// The answer to a request started but not finished in time.
    public static func unfinishedAnswer(_ resultTimeout: TimeAmount) -> ControlResponse {
        .error(504, "kioskd started the request but it did not finish within \(describeSeconds(resultTimeout)); it may or may not have been carried out")
    }

    /// Carries out the command with `body` unless the deadline has passed or the job was dropped;
    /// returns whether it ran. The answer goes to the waiting transport.
    @discardableResult
    public func run(_ body: (ControlCommand) -> ControlResponse) -> Bool {
        run { command, reply in reply(body(command)) }
    }

    /// Like `run(_:)` for commands answered later (a change that must first be made durable or
    /// come back from elsewhere): `body` calls `reply` once, now or later, on any thread.
    @discardableResult
    public func run(_ body: (ControlCommand, @escaping @Sendable (ControlResponse) -> Void) -> Void) -> Bool {
        let now = clock.now()
        let deadline = self.deadline
        let (go, late): (Bool, (Completion?, (@Sendable () -> Void)?)) = state.withLockedValue { s in
            guard s.phase == .pending else { return (false, (nil, nil)) }
            guard now < deadline else { return (false, s.end(.dropped)) }
            s.phase = .started
            return (true, (nil, nil))
        }
        guard go else {
            // Its deadline passed before its timer fired: refused now.
            late.1?()
            late.0?(Self.notStartedAnswer(requestTimeout), .notStarted)
            return false
        }
        body(command) { [state] response in
            let (done, cancel) = state.withLockedValue { s -> (Completion?, (@Sendable () -> Void)?) in
                guard s.phase == .started else { return (nil, nil) }  // answered 504 already, or ended by the transport
                return s.end(.finished)
            }
            cancel?()
            done?(response, .answered)
        }
        return true
    }

    /// For a transport that stops waiting (its client left, the server stops): a job not started
    /// is dropped, never carried out, and `completion` is called with `answer` (`.notStarted`);
    /// with `evenIfStarted`, a started job ends too (`.unfinished`), its own answer, should it
    /// still come, ignored. Returns whether the job had started.
    @discardableResult
    public func end(answering answer: ControlResponse, evenIfStarted: Bool) -> Bool {
        let (started, done, cancel) = state.withLockedValue { s -> (Bool, Completion?, (@Sendable () -> Void)?) in
            switch s.phase {
            case .pending: let (d, c) = s.end(.dropped); return (false, d, c)
            case .started where evenIfStarted: let (d, c) = s.end(.finished); return (true, d, c)
            case .started: return (true, nil, nil)
            case .finished, .dropped: return (false, nil, nil)
            }
        }
        cancel?()
        done?(answer, started ? .unfinished : .notStarted)
        return started
    }

    // MARK: deadlines

    /// Arms the timer for the next deadline, `delay` ns from now (at once when it has passed).
    private func arm(_ delay: Int64, _ fired: @escaping @Sendable (ControlJob) -> Void) {
        let cancel = clock.after(max(delay, 0)) { [self] in fired(self) }
        // The job may have ended meanwhile (even through this very timer): then there is nothing to keep.
        let kept = state.withLockedValue { s in
            guard s.completion != nil else { return false }
            s.cancelTimer = cancel
            return true
        }
        if !kept { cancel() }
    }

    private func requestDeadlinePassed() {
        enum Next { case refuse(Completion?), waitForResult, nothing }
        let next: Next = state.withLockedValue { s in
            switch s.phase {
            case .pending: return .refuse(s.end(.dropped).0)
            case .started: return .waitForResult
            case .finished, .dropped: return .nothing
            }
        }
        switch next {
        case .refuse(let done): done?(Self.notStartedAnswer(requestTimeout), .notStarted)
        case .waitForResult: arm(resultTimeout.nanoseconds) { job in job.resultDeadlinePassed() }
        case .nothing: break
        }
    }

    private func resultDeadlinePassed() {
        let done = state.withLockedValue { s -> Completion? in
            guard s.phase == .started else { return nil }
            return s.end(.finished).0
        }
        done?(Self.unfinishedAnswer(resultTimeout), .unfinished)
    }
}

/// The job each connection waits for, so a connection that closes or a stopping server can end it.
final class JobRegistry: Sendable {
    private let jobs = NIOLockedValueBox<[ObjectIdentifier: (job: ControlJob, channel: any Channel)]>([:])
    func add(_ j: ControlJob, on channel: any Channel) { jobs.withLockedValue { $0[ObjectIdentifier(channel)] = (j, channel) } }
    func remove(on channel: any Channel) { jobs.withLockedValue { _ = $0.removeValue(forKey: ObjectIdentifier(channel)) } }

    /// Nobody is left to answer: a job not started is dropped; a started one's answer is ignored.
    func closed(_ channel: any Channel) {
        jobs.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(channel)) }?.job
            .end(answering: .error(503, "the client closed the connection; not carried out"), evenIfStarted: true)
    }

    /// The stop's drain time is over: jobs not started are dropped and answered `answer`; the
    /// connections of started ones are closed first (their outcome is unknown) and, with
    /// `evenIfStarted`, those jobs end too.
    func endAll(answering answer: ControlResponse, evenIfStarted: Bool) {
        for (job, channel) in jobs.withLockedValue({ Array($0.values) }) {
            if job.end(answering: answer, evenIfStarted: false) {
                channel.close(promise: nil)
                if evenIfStarted { job.end(answering: answer, evenIfStarted: true) }
            }
        }
    }
}
