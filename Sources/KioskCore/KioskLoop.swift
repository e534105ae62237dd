/// A watched file descriptor, to change what it is waited for or to stop watching it.
public struct WatchID: Hashable, Sendable {
    public let fd: Int32
    public init(fd: Int32) { self.fd = fd }
}

/// What a watched descriptor is waited for, and what it is ready for. An error or hang-up on the
/// descriptor is reported as both (the next read or write says which).
public struct WatchEvents: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let read = WatchEvents(rawValue: 1)
    public static let write = WatchEvents(rawValue: 2)
}

/// What the daemon's pieces need from the loop they run on: a `Scheduler` (timers, deferred
/// work, now) that also watches file descriptors and runs work posted from other threads. The
/// epoll `EventLoop` (KioskPosix) is the one the process runs; `ManualEventLoop` (KioskTesting)
/// runs on virtual time and is told by the test which descriptors are ready (`makeReady`), so a
/// whole `Daemon`, its controllers and its clients run in a test without a wall-clock wait.
/// Running and stopping the loop is left to its owner (the process entry point, a helper thread),
/// which holds the concrete type.
public protocol KioskLoop: Scheduler, Sendable {
    /// Calls `handler` on this loop with what `fd` is ready for, whenever it is ready for one of
    /// `events` (change them with `setInterest`). The caller keeps owning `fd`; unwatch it before
    /// closing it. Call on the loop's thread.
    @discardableResult
    func watch(fd: Int32, events: WatchEvents, _ handler: @escaping (WatchEvents) -> Void) throws -> WatchID
    /// Changes what a watched descriptor is waited for (for example write interest while output
    /// is pending). Call on the loop's thread.
    func setInterest(_ id: WatchID, _ events: WatchEvents) throws
    /// Stops watching; nothing when `id` is not watched. Call on the loop's thread.
    func unwatch(_ id: WatchID)
    /// Runs `work` on the loop's thread soon. Safe from any thread.
    func post(_ work: @escaping @Sendable () -> Void)
    /// Traps when called from a thread other than the one running the loop (once it has run):
    /// for code that touches state only the loop's thread may touch.
    func assertInLoop(file: StaticString, line: UInt)
}

extension KioskLoop {
    /// Calls `handler` on this loop whenever `fd` is readable. The caller keeps owning `fd`.
    @discardableResult
    public func watch(fd: Int32, _ handler: @escaping () -> Void) throws -> WatchID {
        try watch(fd: fd, events: .read) { _ in handler() }
    }

    /// `assertInLoop(file:line:)` at the caller's place.
    public func assertInLoop(_ file: StaticString = #fileID, _ line: UInt = #line) {
        assertInLoop(file: file, line: line)
    }
}
