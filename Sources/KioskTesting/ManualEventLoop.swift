#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskPosix
import Synchronization

/// A `KioskLoop` on virtual time, for tests: nothing fires until the test advances the clocks,
/// and then every due timer fires in deadline order (realtime and monotonic interleaved), each
/// followed by the deferred work it queued — as one iteration of the real loop would.
/// File descriptors are ready when the test says so (`makeReady`), and work posted from any
/// thread runs at the next step (`step`, or the start of `advance`).
public final class ManualEventLoop: KioskLoop, TimeSource, @unchecked Sendable {
    // @unchecked: `post` and `makeReady` may be called from any thread and touch only `inbox`
    // (a Mutex); everything else is touched by the thread that drives the loop.
    private struct Timer {
        let deadline: Int64
        let clock: ClockID
        let handler: (TimerFire) -> Void
    }
    private var timers: [UInt64: Timer] = [:]
    private var nextID: UInt64 = 1
    private let deferred = DeferredWork()
    private var watchers: [Int32: (events: WatchEvents, handler: (WatchEvents) -> Void)] = [:]
    /// Work posted and descriptors made ready, in the order they came.
    private struct Inbox {
        var posted: [@Sendable () -> Void] = []
        var ready: [(fd: Int32, events: WatchEvents)] = []
    }
    private let inbox = Mutex(Inbox())
    /// The thread running a step, while one runs.
    private var steppingThread: pthread_t?
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
        step()
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

    @discardableResult
    public func watch(fd: Int32, events: WatchEvents, _ handler: @escaping (WatchEvents) -> Void) throws -> WatchID {
        guard watchers[fd] == nil else {
            throw KioskError(.system, "ManualEventLoop.watch: fd \(fd) is already watched", errno: EEXIST)
        }
        watchers[fd] = (events, handler)
        return WatchID(fd: fd)
    }

    public func setInterest(_ id: WatchID, _ events: WatchEvents) throws {
        guard let w = watchers[id.fd] else { return }
        watchers[id.fd] = (events, w.handler)
    }

    public func unwatch(_ id: WatchID) { watchers[id.fd] = nil }

    /// What a watched descriptor waits for (nil when it is not watched), for tests of the code
    /// that watches it.
    public func interest(_ fd: Int32) -> WatchEvents? { watchers[fd]?.events }

    /// Descriptors watched, in ascending order.
    public var watchedDescriptors: [Int32] { watchers.keys.sorted() }

    /// Says that `fd` is ready for `events`: at the next step its handler runs once with what of
    /// `events` it waits for (nothing runs when it waits for none of them or is no longer
    /// watched). Unlike epoll this is edge-like: say it again for another call. Safe from any
    /// thread.
    public func makeReady(_ fd: Int32, _ events: WatchEvents = .read) {
        inbox.withLock { $0.ready.append((fd, events)) }
    }

    /// Makes ready each watched descriptor the kernel reports ready for what it waits for
    /// (`poll` without waiting): what epoll would report at this moment, for tests whose
    /// descriptors are real (inotify, a socket pair). Returns those descriptors, ascending.
    @discardableResult
    public func makeReadyWhatTheKernelReports() -> [Int32] {
        var fds = watchers.keys.sorted().map { fd -> pollfd in
            let e = watchers[fd]!.events
            return pollfd(fd: fd, events: Int16((e.contains(.read) ? POLLIN : 0) | (e.contains(.write) ? POLLOUT : 0)), revents: 0)
        }
        guard !fds.isEmpty, poll(&fds, nfds_t(fds.count), 0) > 0 else { return [] }
        var made: [Int32] = []
        for p in fds where p.revents != 0 {
            var e: WatchEvents = []
            if Int32(p.revents) & (POLLERR | POLLHUP) != 0 { e = [.read, .write] }
            if Int32(p.revents) & POLLIN != 0 { e.insert(.read) }
            if Int32(p.revents) & POLLOUT != 0 { e.insert(.write) }
            makeReady(p.fd, e)
            made.append(p.fd)
        }
        return made
    }

    /// Queues `work` for the next step. Safe from any thread.
    public func post(_ work: @escaping @Sendable () -> Void) {
        inbox.withLock { $0.posted.append(work) }
    }

    /// Traps when called from another thread while a step runs on the driving thread: the same
    /// mistake the epoll loop's check catches (state of the loop touched by a helper thread).
    public func assertInLoop(file: StaticString, line: UInt) {
        guard let t = steppingThread else { return }
        precondition(pthread_equal(t, pthread_self()) != 0, "called off the manual event loop's thread", file: file, line: line)
    }

    /// One iteration without moving the clocks, as the epoll loop runs one after a wake-up: the
    /// work posted so far, then the handlers of the descriptors made ready so far, then the
    /// deferred work. Work posted or descriptors made ready meanwhile wait for the next step.
    /// Returns how many posted items and handlers ran.
    @discardableResult
    public func step() -> Int {
        let outer = steppingThread
        steppingThread = pthread_self()
        defer { steppingThread = outer }
        runDeferred()
        let (work, fds) = inbox.withLock { i -> ([@Sendable () -> Void], [(fd: Int32, events: WatchEvents)]) in
            defer { i = Inbox() }
            return (i.posted, i.ready)
        }
        var ran = work.count
        for w in work { w() }
        for r in fds {
            guard let w = watchers[r.fd] else { continue }
            let events = r.events.intersection(w.events)
            if events.isEmpty { continue }
            w.handler(events)
            ran += 1
        }
        runDeferred()
        return ran
    }

    /// Steps until nothing is posted or ready (at most `limit` steps, so work that posts itself
    /// forever cannot hang a test). Returns how many posted items and handlers ran.
    @discardableResult
    public func runPending(limit: Int = 100) -> Int {
        var total = 0
        for _ in 0..<limit {
            let n = step()
            total += n
            if n == 0 { break }
        }
        return total
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
