import KioskCore

/// A `Scheduler` on virtual time, for tests: nothing fires until the test advances the clocks,
/// and then every due timer fires in deadline order (realtime and monotonic interleaved), each
/// followed by the deferred work it queued — as one iteration of the real loop would.
public final class ManualEventLoop: Scheduler, TimeSource {
    private struct Timer {
        let deadline: Int64
        let clock: ClockID
        let handler: (TimerFire) -> Void
    }
    private var timers: [UInt64: Timer] = [:]
    private var nextID: UInt64 = 1
    private let deferred = DeferredWork()
    /// The virtual monotonic time (ns).
    public private(set) var monotonic: Int64
    /// The virtual wall-clock time (ns since the epoch).
    public private(set) var realtime: Int64

    public init(monotonic: Int64 = 1_000_000_000, realtime: Int64 = 1_700_000_000_000_000_000) {
        self.monotonic = monotonic
        self.realtime = realtime
    }

    @discardableResult
    public func schedule(at deadline: Int64, clock: ClockID, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID {
        let id = nextID
        nextID += 1
        timers[id] = Timer(deadline: deadline, clock: clock, handler: handler)
        return TimerID(id: id)
    }

    @discardableResult
    public func schedule(after delay: Int64, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID {
        let (sum, overflow) = monotonic.addingReportingOverflow(max(delay, 0))
        return try schedule(at: overflow ? Int64.max : sum, clock: .monotonic, handler)
    }

    public func cancel(_ id: TimerID) { timers[id.id] = nil }

    public func deferToEndOfIteration(_ work: @escaping () -> Void) { deferred.append(work) }

    public func now(_ clock: ClockID) -> Int64 { clock == .monotonic ? monotonic : realtime }

    /// Both virtual clocks (the loop is its own `TimeSource`, so scenes see the virtual time).
    public func now() -> WallTime { WallTime(realtimeNs: realtime, monotonicNs: monotonic) }

    /// Timers scheduled and not yet fired or cancelled.
    public var pendingTimers: Int { timers.count }

    /// The earliest pending deadline on `clock`, if any.
    public func nextDeadline(_ clock: ClockID) -> Int64? {
        timers.values.filter { $0.clock == clock }.map(\.deadline).min()
    }

    /// Runs the deferred work (as the end of a loop iteration would), up to 8 rounds deep.
    public func runDeferred() {
        deferred.run()
    }

    /// Moves both clocks forward by `nanos`, firing every timer that falls due on the way at its
    /// own deadline (the clocks stand at that deadline while its handler runs). Returns how many
    /// timers fired.
    @discardableResult
    public func advance(by nanos: Int64) -> Int {
        precondition(nanos >= 0, "virtual time only moves forward")
        let endMono = monotonic + nanos
        let offset = realtime - monotonic
        var fired = 0
        runDeferred()
        while let (id, t) = earliestDue(endMono: endMono, offset: offset) {
            timers[id] = nil
            let at = t.clock == .monotonic ? t.deadline : t.deadline - offset
            if at > monotonic { monotonic = at; realtime = at + offset }
            t.handler(.expired)
            fired += 1
            runDeferred()
        }
        monotonic = endMono
        realtime = endMono + offset
        return fired
    }

    /// Sets the wall clock (as an NTP step or `date -s` would): every realtime timer fires with
    /// `.clockChanged`, the monotonic clock does not move.
    public func setWallClock(_ nanos: Int64) {
        realtime = nanos
        let ids = timers.filter { $0.value.clock == .realtime }.sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
        for (id, t) in ids {
            guard timers.removeValue(forKey: id) != nil else { continue }
            t.handler(.clockChanged)
        }
        runDeferred()
    }

    private func earliestDue(endMono: Int64, offset: Int64) -> (UInt64, Timer)? {
        var best: (UInt64, Timer, Int64)?
        for (id, t) in timers {
            let mono = t.clock == .monotonic ? t.deadline : t.deadline - offset
            guard mono <= endMono else { continue }
            if best == nil || (mono, id) < (best!.2, best!.0) { best = (id, t, mono) }
        }
        return best.map { ($0.0, $0.1) }
    }
}
