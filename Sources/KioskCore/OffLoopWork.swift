import Synchronization

/// Where the render loop sends slow work — encoding PNG, writing and syncing files, reading the
/// config and theme files — so that the loop itself only draws, reads input and flips. `run`
/// carries out `work` elsewhere, in the order it was given, and then calls `then` with its result
/// on the loop's thread; the loop does not wait meanwhile. Call `run` on the loop's thread.
public protocol OffLoopWork: AnyObject {
    /// Carries out `work` away from the loop, then `then` with its result on the loop.
    func run<T: Sendable>(_ work: @escaping @Sendable () -> T, then: @escaping (T) -> Void)
    /// Carries out what was given (waiting at most `timeout` seconds), then ends its thread, if
    /// it has one; work given afterwards is carried out at once on the caller's thread.
    func finish(timeout: Double)
}

/// Carries out work at once on the calling thread and then `then`: for scenes that run outside a
/// daemon (the benchmark's rigs, a snapshot, tests of one scene), where nothing else draws.
public final class InlineWork: OffLoopWork {
    public init() {}
    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T, then: @escaping (T) -> Void) { then(work()) }
    public func finish(timeout: Double) {}
}

/// A value made on one thread and taken on another, once: how a result that is not `Sendable`
/// (a parsed config holds config tables) comes back from off-loop work. The value is made on the
/// worker and nothing there keeps it, so handing it over is safe (`sending`).
public final class Handoff<Value>: Sendable {
    private let slot: Mutex<Value?>

    public init(_ value: consuming sending Value) { slot = Mutex(Optional(value)) }

    /// The value, the first time; nil afterwards.
    public func take() -> sending Value? {
        slot.withLock { v -> sending Value? in
            let taken = v.take()
            return taken
        }
    }
}
