#if canImport(Glibc)
import Glibc
#endif

/// Which clock a deadline is on: monotonic (durations, animation) or the wall clock (the time a
/// clock scene shows, schedules by time of day).
public enum ClockID: Sendable, Equatable {
    case monotonic, realtime
    public var id: clockid_t { self == .monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME }
}

/// The current time on `clock`, in nanoseconds.
public func nowNanos(_ clock: ClockID = .monotonic) -> Int64 {
    var ts = timespec()
    clock_gettime(clock.id, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// A scheduled timer, to cancel it.
public struct TimerID: Hashable, Sendable {
    public let id: UInt64
    public init(id: UInt64) { self.id = id }
}

/// Why a timer handler ran.
public enum TimerFire: Sendable, Equatable {
    case expired
    /// The wall clock was set (NTP step, manual change): a realtime deadline must be recomputed.
    case clockChanged
}

/// What scenes and controllers need from a run loop: one-shot timers on either clock, work
/// deferred to the end of the current iteration, and the loop's idea of now. The epoll
/// `EventLoop` (KioskPosix) runs on real time; `ManualEventLoop` (KioskTesting) on virtual time,
/// so tests advance it instead of sleeping. All calls are made on the loop's thread.
public protocol Scheduler: AnyObject {
    /// A one-shot timer at an absolute time on `clock` (nanoseconds). A realtime timer also fires
    /// with `.clockChanged` when the wall clock is set, so the caller can reschedule.
    @discardableResult
    func schedule(at deadline: Int64, clock: ClockID, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID
    /// A one-shot timer `delay` nanoseconds from now (monotonic).
    @discardableResult
    func schedule(after delay: Int64, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID
    func cancel(_ id: TimerID)
    /// Runs `work` at the end of the current iteration, without a wake-up of its own.
    func deferToEndOfIteration(_ work: @escaping () -> Void)
    /// The loop's current time on `clock` (nanoseconds).
    func now(_ clock: ClockID) -> Int64
}

/// The work a loop runs at the end of an iteration (`Scheduler.deferToEndOfIteration`): work that
/// defers more work runs in the same iteration, up to 8 rounds deep, so a loop of deferrals cannot
/// stall the loop. Shared by the epoll loop and the virtual-time loop so both keep one rule.
/// A class, so that work run by `run()` may append more (a struct's mutating `run` would hold
/// exclusive access to it meanwhile).
public final class DeferredWork {
    private var queue: [() -> Void] = []
    public init() {}
    public var isEmpty: Bool { queue.isEmpty }
    public func append(_ work: @escaping () -> Void) { queue.append(work) }
    /// Runs what is queued, then what that queued, up to 8 rounds.
    public func run() {
        var rounds = 0
        while !queue.isEmpty && rounds < 8 {
            let work = queue
            queue.removeAll()
            for w in work { w() }
            rounds += 1
        }
    }
}
