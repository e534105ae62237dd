#if canImport(Glibc)
import Glibc
#endif
import CKioskShims

/// Wall-clock and monotonic time in nanoseconds.
public enum ClockID: Sendable, Equatable {
    case monotonic, realtime
    var id: clockid_t { self == .monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME }
}

public func nowNanos(_ clock: ClockID = .monotonic) -> Int64 {
    var ts = timespec()
    clock_gettime(clock.id, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Calls `body` until it does not fail with EINTR; throws a KioskError naming `call` and errno otherwise.
@discardableResult
public func syscall<T: BinaryInteger>(_ call: String, _ body: () -> T) throws -> T {
    while true {
        let r = body()
        if r >= 0 { return r }
        let e = errno
        if e == EINTR { continue }
        throw KioskError(.system, "\(call) failed: \(String(cString: strerror(e))) (errno \(e))", errno: e)
    }
}

/// A single-threaded event loop on epoll: file descriptors, timers (timerfd) and work posted
/// from other threads (eventfd). It sleeps in `epoll_wait` until something is due: no polling.
public final class EventLoop: @unchecked Sendable {
    public typealias Handler = () -> Void
    public struct WatchID: Hashable, Sendable { let fd: Int32 }
    public struct TimerID: Hashable, Sendable { let fd: Int32 }

    private let epfd: Int32
    private let wakeFD: Int32
    private var watchers: [Int32: Handler] = [:]
    private var timers: [Int32: (handler: (TimerFire) -> Void, repeating: Bool)] = [:]
    private let lock = NSLockLite()
    private var posted: [@Sendable () -> Void] = []
    private var deferred: [Handler] = []
    private var stopRequested = false
    /// Number of times `epoll_wait` returned (wake-ups), for benchmarks and status.
    public private(set) var wakeups: UInt64 = 0

    /// Why a timer handler ran.
    public enum TimerFire: Sendable, Equatable {
        case expired
        /// The wall clock was set (NTP step, manual change): a realtime deadline must be recomputed.
        case clockChanged
    }

    public init() throws {
        epfd = try syscall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        wakeFD = try syscall("eventfd") { eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) }
        try add(fd: wakeFD)
    }

    deinit {
        for fd in timers.keys { close(fd) }
        close(wakeFD)
        close(epfd)
    }

    private func add(fd: Int32) throws {
        var ev = epoll_event()
        ev.events = EPOLLIN.rawValue
        ev.data.fd = fd
        try syscall("epoll_ctl(ADD, fd \(fd))") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) }
    }

    /// Calls `handler` on this loop whenever `fd` is readable. The caller keeps owning `fd`.
    @discardableResult
    public func watch(fd: Int32, _ handler: @escaping Handler) throws -> WatchID {
        try add(fd: fd)
        watchers[fd] = handler
        return WatchID(fd: fd)
    }

    public func unwatch(_ id: WatchID) {
        guard watchers.removeValue(forKey: id.fd) != nil else { return }
        epoll_ctl(epfd, EPOLL_CTL_DEL, id.fd, nil)
    }

    /// A one-shot timer at an absolute time on `clock` (nanoseconds). A realtime timer also fires
    /// with `.clockChanged` when the wall clock is set, so the caller can reschedule.
    @discardableResult
    public func schedule(at deadline: Int64, clock: ClockID, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID {
        let fd = try syscall("timerfd_create") { timerfd_create(clock.id, Int32(TFD_CLOEXEC | TFD_NONBLOCK)) }
        var spec = itimerspec()
        let d = max(deadline, 1)
        spec.it_value = timespec(tv_sec: Int(d / 1_000_000_000), tv_nsec: Int(d % 1_000_000_000))
        var flags = Int32(TFD_TIMER_ABSTIME)
        if clock == .realtime { flags |= Int32(TFD_TIMER_CANCEL_ON_SET) }
        do {
            try syscall("timerfd_settime") { timerfd_settime(fd, flags, &spec, nil) }
            try add(fd: fd)
        } catch {
            close(fd)
            throw error
        }
        timers[fd] = (handler, false)
        return TimerID(fd: fd)
    }

    /// A one-shot timer `delay` nanoseconds from now (monotonic).
    @discardableResult
    public func schedule(after delay: Int64, _ handler: @escaping (TimerFire) -> Void) throws -> TimerID {
        try schedule(at: nowNanos(.monotonic) + max(delay, 0), clock: .monotonic, handler)
    }

    public func cancel(_ id: TimerID) {
        guard timers.removeValue(forKey: id.fd) != nil else { return }
        epoll_ctl(epfd, EPOLL_CTL_DEL, id.fd, nil)
        close(id.fd)
    }

    /// Runs `work` on the loop's thread soon. Safe from any thread.
    public func post(_ work: @escaping @Sendable () -> Void) {
        lock.locked { posted.append(work) }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Runs `work` on the loop's thread at the end of the current iteration (or before the next
    /// wait), without a wake-up of its own. Call only from the loop's thread. Used to coalesce
    /// several changes into one frame.
    public func deferToEndOfIteration(_ work: @escaping Handler) {
        deferred.append(work)
    }

    private func runDeferred() {
        var rounds = 0
        while !deferred.isEmpty && rounds < 8 {
            let work = deferred
            deferred.removeAll()
            for w in work { w() }
            rounds += 1
        }
    }

    /// Asks `run()` to return after the current iteration. Safe from any thread.
    public func stop() {
        post { [weak self] in self?.stopRequested = true }
    }

    /// Dispatches one batch of ready events, waiting at most `timeoutMs` (-1: forever).
    /// Returns the number of ready descriptors.
    @discardableResult
    public func runOnce(timeoutMs: Int32 = -1) throws -> Int {
        runDeferred()
        var events = [epoll_event](repeating: epoll_event(), count: 32)
        let n = Int(epoll_wait(epfd, &events, 32, deferred.isEmpty ? timeoutMs : 0))
        if n < 0 {
            if errno == EINTR { return 0 }
            throw KioskError(.system, "epoll_wait failed: errno \(errno)", errno: errno)
        }
        wakeups += 1
        for i in 0..<n {
            let fd = events[i].data.fd
            if fd == wakeFD {
                var v: UInt64 = 0
                _ = read(wakeFD, &v, 8)
                let work = lock.locked { () -> [@Sendable () -> Void] in
                    let w = posted
                    posted.removeAll()
                    return w
                }
                for w in work { w() }
            } else if let t = timers[fd] {
                var v: UInt64 = 0
                let r = read(fd, &v, 8)
                let fire: TimerFire = (r < 0 && errno == ECANCELED) ? .clockChanged : .expired
                if r < 0 && errno == EAGAIN { continue }
                cancel(TimerID(fd: fd))
                t.handler(fire)
            } else if let h = watchers[fd] {
                h()
            }
        }
        runDeferred()
        return n
    }

    /// Runs until `stop()`.
    public func run() throws {
        stopRequested = false
        while !stopRequested {
            try runOnce()
        }
    }
}

/// A tiny mutex on pthread (Foundation-free so KioskCore stays light).
public final class NSLockLite: @unchecked Sendable {
    private var m = pthread_mutex_t()
    public init() { pthread_mutex_init(&m, nil) }
    deinit { pthread_mutex_destroy(&m) }
    public func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(&m)
        defer { pthread_mutex_unlock(&m) }
        return try body()
    }
}
