/// A moment on both clocks: wall time (CLOCK_REALTIME, for what the clock shows) and
/// monotonic time (CLOCK_MONOTONIC, for animations and input timing), in nanoseconds.
public struct WallTime: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var realtimeNs: Int64
    public var monotonicNs: Int64
    public init(realtimeNs: Int64, monotonicNs: Int64) {
        self.realtimeNs = realtimeNs; self.monotonicNs = monotonicNs
    }
    public var description: String { "realtime \(realtimeNs) ns, monotonic \(monotonicNs) ns" }
    /// Both clocks moved on by `ns`.
    public func advanced(byNs ns: Int64) -> WallTime {
        WallTime(realtimeNs: realtimeNs + ns, monotonicNs: monotonicNs + ns)
    }
    /// Monotonic time in microseconds (libinput's event time base).
    public var monotonicUsec: UInt64 { UInt64(max(monotonicNs, 0) / 1000) }
}

/// When a scene next needs to run without input.
public enum Deadline: Sendable, Equatable, Comparable {
    /// A wall-clock instant (the clock's next second); follows clock jumps.
    case realtime(Int64)
    /// A monotonic instant (animation frames, long-press timers).
    case monotonic(Int64)

    /// The monotonic instant this deadline falls on, seen from `now`.
    public func monotonicNs(from now: WallTime) -> Int64 {
        switch self {
        case .monotonic(let m): return m
        case .realtime(let r): return now.monotonicNs + (r - now.realtimeNs)
        }
    }
    public static func < (a: Deadline, b: Deadline) -> Bool {
        // Comparable only within one clock kind; mixed kinds compare by raw value (callers convert first).
        switch (a, b) {
        case (.realtime(let x), .realtime(let y)), (.monotonic(let x), .monotonic(let y)): return x < y
        case (.realtime(let x), .monotonic(let y)), (.monotonic(let x), .realtime(let y)): return x < y
        }
    }
}

/// Where the time comes from: the system, or a manual clock in tests.
public protocol TimeSource: AnyObject {
    func now() -> WallTime
}

/// The system's clocks.
public final class SystemTimeSource: TimeSource, Sendable {
    public init() {}
    public func now() -> WallTime { WallTime(realtimeNs: nowNanos(.realtime), monotonicNs: nowNanos(.monotonic)) }
}

/// A scheduler's clocks as a time source: what it says `now(_:)` is on each clock.
public final class SchedulerTime: TimeSource {
    public let scheduler: any Scheduler
    public init(_ scheduler: any Scheduler) { self.scheduler = scheduler }
    public func now() -> WallTime {
        WallTime(realtimeNs: scheduler.now(.realtime), monotonicNs: scheduler.now(.monotonic))
    }
}
