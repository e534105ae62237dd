import KioskCore
import Synchronization

/// The state a snapshot works on: what the state directory holds, read through a read-only
/// store, with the snapshot's own changes (a scripted tap on a counter) kept in memory over it.
/// Nothing is ever written, so a snapshot beside the running daemon cannot disturb it.
public final class SnapshotStateStore: StateStore, Sendable {
    private let base: StateStore & Sendable
    /// Changed keys; nil: retired.
    private let changes = Mutex<[String: String?]>([:])

    public init(over base: StateStore & Sendable) { self.base = base }

    public func load(_ key: String) -> String? {
        if let changed = changes.withLock({ $0[key] }) { return changed }
        return base.load(key)
    }
    public func save(_ key: String, _ value: String) throws { changes.withLock { $0[key] = .some(value) } }
    public func retire(_ key: String) throws { changes.withLock { $0[key] = .some(nil) } }
    /// Changes last as long as the snapshot: volatile.
    public var durability: StateDurability { .volatile }
    public func close() { base.close() }
}
