import Synchronization

/// READY=1 once every part of the start that systemd's readiness stands for is done: the first
/// frame on screen (or no display connected: `Daemon.onReady`) and the control socket listening.
/// The render thread starts before the control server (`DaemonRunner.run`), so either may come
/// first; the last one to finish tells systemd, once.
public final class ReadyGate: Sendable {
    public enum Part: Sendable, Hashable { case frame, control }

    private let pending: Mutex<Set<Part>?>
    private let onReady: @Sendable () -> Void

    public init(waitingFor parts: Set<Part>, onReady: @escaping @Sendable () -> Void) {
        pending = Mutex(parts)
        self.onReady = onReady
    }

    /// `part` is done; calls `onReady` when it was the last one (never twice).
    public func done(_ part: Part) {
        let last = pending.withLock { p -> Bool in
            guard var left = p else { return false }
            left.remove(part)
            p = left.isEmpty ? nil : left
            return left.isEmpty
        }
        if last { onReady() }
    }

    /// Whether `onReady` has been called.
    public var isReady: Bool { pending.withLock { $0 == nil } }
}
