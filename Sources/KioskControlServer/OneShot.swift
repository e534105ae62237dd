import Synchronization

/// A value set once from any thread and awaited once.
public final class OneShot<T: Sendable>: Sendable {
    public init() {}
    private let state = Mutex<(result: T?, waiter: CheckedContinuation<T, Never>?)>((nil, nil))

    public func fulfil(_ v: T) {
        let w = state.withLock { s -> CheckedContinuation<T, Never>? in
            guard s.result == nil else { return nil }
            s.result = v
            defer { s.waiter = nil }
            return s.waiter
        }
        w?.resume(returning: v)
    }

    public func value() async -> T {
        await withCheckedContinuation { c in
            let r = state.withLock { s -> T? in
                if let r = s.result { return r }
                s.waiter = c
                return nil
            }
            if let r { c.resume(returning: r) }
        }
    }
}
