#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import KioskCore
import Synchronization

/// A single-threaded event loop on epoll: file descriptors, timers and work posted from other
/// threads (eventfd). It sleeps in `epoll_wait` until something is due: no polling.
///
/// Timers need no descriptor of their own: the loop creates two timerfds at init (one on
/// CLOCK_MONOTONIC, one on CLOCK_REALTIME with TFD_TIMER_CANCEL_ON_SET) and multiplexes every
/// timer over them, each armed for the earliest deadline of its clock. Scheduling a timer therefore
/// never fails for lack of file descriptors. Should arming a timerfd ever fail, the loop still
/// fires its timers on time by bounding its `epoll_wait` by the earliest deadline, and arms again
/// at the next iteration.
public final class EventLoop: KioskLoop, @unchecked Sendable {
    // @unchecked: other threads call only `post` and `stop`, which touch `posted` (a Mutex) and
    // the eventfd; every other member belongs to the loop's thread (`assertInLoop`).
    public typealias Handler = () -> Void
    public typealias WatchID = KioskCore.WatchID
    public typealias WatchEvents = KioskCore.WatchEvents
    public typealias TimerID = KioskCore.TimerID
    public typealias TimerFire = KioskCore.TimerFire

    private struct Timer {
        let deadline: Int64
        let clock: ClockID
        let handler: (TimerFire) -> Void
    }

    /// The pending timers of one clock, earliest first (equal deadlines in scheduling order).
    private struct Queue {
        var items: [(deadline: Int64, id: UInt64)] = []
        mutating func insert(_ deadline: Int64, _ id: UInt64) {
            var lo = 0, hi = items.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if items[mid].deadline <= deadline { lo = mid + 1 } else { hi = mid }
            }
            items.insert((deadline, id), at: lo)
        }
        mutating func remove(_ id: UInt64) {
            if let i = items.firstIndex(where: { $0.id == id }) { items.remove(at: i) }
        }
    }

    private let epoll: Descriptor
    private let wake: Descriptor
    private let monotonicTimer: Descriptor
    private let realtimeTimer: Descriptor
    private var watchers: [Int32: (WatchEvents) -> Void] = [:]
    private var timers: [UInt64: Timer] = [:]
    private var monotonicQueue = Queue()
    private var realtimeQueue = Queue()
    /// The deadline each timerfd is armed for (nil: disarmed).
    private var armedMonotonic: Int64?
    private var armedRealtime: Int64?
    /// Arming a timerfd failed: the next `epoll_wait` is bounded by the earliest deadline.
    private var armingFailed = false
    private var nextTimerID: UInt64 = 1
    /// Work posted from any thread, run in order at the next wake-up.
    private let posted = Mutex<[@Sendable () -> Void]>([])
    private let deferred = DeferredWork()
    private var stopRequested = false
    /// The thread that last ran `runOnce` (nil before the first run).
    private var loopThread: pthread_t?
    /// Number of times `epoll_wait` returned (wake-ups), for benchmarks and status.
    public private(set) var wakeups: UInt64 = 0
    /// Test seam: returns an errno to make arming a timerfd fail as if `timerfd_settime` had.
    var armFault: ((ClockID) -> Int32?)?

    public init() throws {
        // A throw below closes the descriptors already opened (their owners end with the init).
        epoll = Descriptor(adopting: try Posix.call("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) })
        wake = Descriptor(adopting: try Posix.call("eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) })
        monotonicTimer = Descriptor(adopting: try Posix.call("timerfd_create(CLOCK_MONOTONIC)") { timerfd_create(CLOCK_MONOTONIC, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) })
        realtimeTimer = Descriptor(adopting: try Posix.call("timerfd_create(CLOCK_REALTIME)") { timerfd_create(CLOCK_REALTIME, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) })
        try add(fd: wake.raw)
        try add(fd: monotonicTimer.raw)
        try add(fd: realtimeTimer.raw)
    }

    private func add(fd: Int32, events: WatchEvents = .read) throws {
        var ev = epoll_event()
        ev.events = events.epoll
        ev.data.fd = fd
        try Posix.call("epoll_ctl(ADD, fd \(fd))") { epoll_ctl(epoll.raw, EPOLL_CTL_ADD, fd, &ev) }
    }

    /// Calls `handler` on this loop with what `fd` is ready for, whenever it is ready for one of
    /// `events` (change them with `setInterest`). The caller keeps owning `fd`; unwatch it before
    /// closing it.
    @discardableResult
    public func watch(fd: Int32, events: WatchEvents, _ handler: @escaping (WatchEvents) -> Void) throws -> WatchID {
        try add(fd: fd, events: events)
        watchers[fd] = handler
        return WatchID(fd: fd)
    }

    /// Changes what a watched descriptor is waited for (for example write interest while output
    /// is pending).
    public func setInterest(_ id: WatchID, _ events: WatchEvents) throws {
        guard watchers[id.fd] != nil else { return }
        var ev = epoll_event()
        ev.events = events.epoll
        ev.data.fd = id.fd
        try Posix.call("epoll_ctl(MOD, fd \(id.fd))") { epoll_ctl(epoll.raw, EPOLL_CTL_MOD, id.fd, &ev) }
    }

    public func unwatch(_ id: WatchID) {
        guard watchers.removeValue(forKey: id.fd) != nil else { return }
        _ = try? Posix.call("epoll_ctl(DEL, fd \(id.fd))") { epoll_ctl(epoll.raw, EPOLL_CTL_DEL, id.fd, nil) }
    }

    /// A one-shot timer at an absolute time on `clock` (nanoseconds). A realtime timer also fires
    /// with `.clockChanged` when the wall clock is set, so the caller can reschedule.
    /// Call on the loop's thread. It needs no file descriptor and does not fail.
    @discardableResult
    public func schedule(at deadline: Int64, clock: ClockID, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID {
        let id = nextTimerID
        nextTimerID += 1
        timers[id] = Timer(deadline: deadline, clock: clock, handler: handler)
        if clock == .monotonic { monotonicQueue.insert(deadline, id) } else { realtimeQueue.insert(deadline, id) }
        return TimerID(id: id)
    }

    /// A one-shot timer `delay` nanoseconds from now (monotonic).
    @discardableResult
    public func schedule(after delay: Int64, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID {
        let now = nowNanos(.monotonic)
        let (sum, overflow) = now.addingReportingOverflow(max(delay, 0))
        return try schedule(at: overflow ? Int64.max : sum, clock: .monotonic, handler)
    }

    public func now(_ clock: ClockID) -> Int64 { nowNanos(clock) }

    public func cancel(_ id: TimerID) {
        guard let t = timers.removeValue(forKey: id.id) else { return }
        if t.clock == .monotonic { monotonicQueue.remove(id.id) } else { realtimeQueue.remove(id.id) }
    }

    /// Number of timers scheduled and not yet fired or cancelled.
    public var pendingTimers: Int { timers.count }

    /// Arms each timerfd for the earliest deadline of its clock (disarms it when none).
    private func armTimers() {
        armingFailed = false
        arm(monotonicTimer.raw, .monotonic, monotonicQueue.items.first?.deadline, &armedMonotonic)
        arm(realtimeTimer.raw, .realtime, realtimeQueue.items.first?.deadline, &armedRealtime)
    }

    private func arm(_ fd: Int32, _ clock: ClockID, _ deadline: Int64?, _ armed: inout Int64?) {
        guard deadline != armed else { return }
        var spec = itimerspec()
        if let deadline {
            // it_value zero would disarm: the earliest absolute time is 1 ns.
            let d = max(deadline, 1)
            spec.it_value = timespec(tv_sec: Int(d / 1_000_000_000), tv_nsec: Int(d % 1_000_000_000))
        }
        var flags = Int32(TFD_TIMER_ABSTIME)
        if clock == .realtime { flags |= Int32(TFD_TIMER_CANCEL_ON_SET) }
        do {
            if let e = armFault?(clock) { throw Posix.error("timerfd_settime", errno: e) }
            try Posix.call("timerfd_settime") { timerfd_settime(fd, flags, &spec, nil) }
            armed = deadline
        } catch {
            armed = nil
            if deadline != nil { armingFailed = true }
        }
    }

    /// The `epoll_wait` timeout that still fires the earliest timer on time when arming failed.
    private func fallbackTimeout(_ timeoutMs: Int32) -> Int32 {
        var earliest: Int64?
        if let d = monotonicQueue.items.first?.deadline { earliest = d - nowNanos(.monotonic) }
        if let d = realtimeQueue.items.first?.deadline {
            let rel = d - nowNanos(.realtime)
            earliest = min(earliest ?? rel, rel)
        }
        guard let e = earliest else { return timeoutMs }
        // Also retry arming at least every second.
        let ms = Int32(min(max((e + 999_999) / 1_000_000, 0), 1000))
        return timeoutMs < 0 ? ms : min(ms, timeoutMs)
    }

    /// Reads a timerfd; true when the wall clock was set (ECANCELED on the realtime timerfd).
    private func drain(_ fd: Int32) -> Bool {
        var v: UInt64 = 0
        do {
            _ = try Posix.call("read(timerfd)") { read(fd, &v, 8) }
        } catch let e as KioskError where e.errno == ECANCELED {
            armedRealtime = nil // must be armed again
            return true
        } catch {}
        if fd == monotonicTimer.raw { armedMonotonic = nil } else { armedRealtime = nil }
        return false
    }

    /// Fires the timers whose deadline has passed (all realtime timers when the clock was set),
    /// earliest first. A timer cancelled by an earlier handler does not fire; timers scheduled by
    /// a handler fire at the next iteration at the earliest.
    private func fireDueTimers(clockChanged: Bool) {
        var due: [(deadline: Int64, id: UInt64, fire: TimerFire)] = []
        let mono = nowNanos(.monotonic)
        while let first = monotonicQueue.items.first, first.deadline <= mono {
            monotonicQueue.items.removeFirst()
            due.append((first.deadline, first.id, .expired))
        }
        if clockChanged {
            for item in realtimeQueue.items { due.append((item.deadline, item.id, .clockChanged)) }
            realtimeQueue.items.removeAll()
        } else {
            let real = nowNanos(.realtime)
            while let first = realtimeQueue.items.first, first.deadline <= real {
                realtimeQueue.items.removeFirst()
                due.append((first.deadline, first.id, .expired))
            }
        }
        if due.count > 1 { due.sort { ($0.deadline, $0.id) < ($1.deadline, $1.id) } }
        for d in due {
            guard let t = timers.removeValue(forKey: d.id) else { continue }
            t.handler(d.fire)
        }
    }

    /// Runs `work` on the loop's thread soon. Safe from any thread.
    public func post(_ work: @escaping @Sendable () -> Void) {
        posted.withLock { $0.append(work) }
        var one: UInt64 = 1
        _ = try? Posix.call("write(eventfd)") { write(wake.raw, &one, 8) }
    }

    /// Runs `work` on the loop's thread at the end of the current iteration (or before the next
    /// wait), without a wake-up of its own. Call only from the loop's thread. Used to coalesce
    /// several changes into one frame.
    public func deferToEndOfIteration(_ work: @escaping Handler) {
        deferred.append(work)
    }

    private func runDeferred() {
        deferred.run()
    }

    /// Asks `run()` to return after the current iteration. Safe from any thread.
    public func stop() {
        post { [weak self] in self?.stopRequested = true }
    }

    /// Dispatches one batch of ready events, waiting at most `timeoutMs` (-1: forever).
    /// Returns the number of ready descriptors.
    @discardableResult
    public func runOnce(timeoutMs: Int32 = -1) throws -> Int {
        loopThread = pthread_self()
        runDeferred()
        armTimers()
        var timeout = deferred.isEmpty ? timeoutMs : 0
        if armingFailed { timeout = fallbackTimeout(timeout) }
        var events = [epoll_event](repeating: epoll_event(), count: 32)
        let n = Int(epoll_wait(epoll.raw, &events, 32, timeout))
        if n < 0 {
            if errno == EINTR { return 0 }
            throw KioskError(.system, "epoll_wait failed: errno \(errno)", errno: errno)
        }
        wakeups += 1
        var clockChanged = false
        var timerReady = armingFailed
        for i in 0..<n {
            let fd = events[i].data.fd
            if fd == wake.raw {
                var v: UInt64 = 0
                _ = try? Posix.call("read(eventfd)") { read(fd, &v, 8) }
                let work = posted.withLock { p in
                    defer { p.removeAll() }
                    return p
                }
                for w in work { w() }
            } else if fd == monotonicTimer.raw || fd == realtimeTimer.raw {
                if drain(fd) { clockChanged = true }
                timerReady = true
            } else if let h = watchers[fd] {
                let e = events[i].events
                var ready: WatchEvents = []
                if e & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 { ready = [.read, .write] }
                if e & EPOLLIN.rawValue != 0 { ready.insert(.read) }
                if e & EPOLLOUT.rawValue != 0 { ready.insert(.write) }
                h(ready)
            }
        }
        if timerReady && !timers.isEmpty { fireDueTimers(clockChanged: clockChanged) }
        runDeferred()
        return n
    }

    /// Traps when called from a thread other than the one running the loop (once it has run):
    /// for code that touches state only the loop's thread may touch.
    public func assertInLoop(file: StaticString, line: UInt) {
        guard let t = loopThread else { return }
        precondition(pthread_equal(t, pthread_self()) != 0, "called off the event loop's thread", file: file, line: line)
    }

    /// Runs until `stop()`.
    public func run() throws {
        stopRequested = false
        while !stopRequested {
            try runOnce()
        }
    }
}

extension WatchEvents {
    /// The epoll event bits these stand for.
    var epoll: UInt32 { (contains(.read) ? EPOLLIN.rawValue : 0) | (contains(.write) ? EPOLLOUT.rawValue : 0) }
}
