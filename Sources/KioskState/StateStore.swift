import KioskCore
import Synchronization

/// How a `StateStore` keeps what it is given.
public enum StateDurability: Sendable, Equatable {
    /// Every save is on disk before it returns.
    case durable
    /// Kept in memory only, by choice (`state = "volatile"`): lost when the daemon stops.
    case volatile
    /// Nothing can be saved (the reason): changes that must last are refused.
    case unavailable(String)
}

/// Storage for what users entered (counter values, current scene and theme). In a durable
/// store `save` returns only once the value is on disk (so a control request can be
/// acknowledged), and throws only when the previous value is what a restart will read; see
/// `durability` for stores that keep values in memory or cannot save. Sendable: the command
/// pipeline commits on its own thread while the render loop reads.
public protocol StateStore: AnyObject, Sendable {
    func load(_ key: String) -> String?
    func save(_ key: String, _ value: String) throws
    /// Whether saves last (default: durable).
    var durability: StateDurability { get }
    /// Whether something is stored under `key` (default: `load(key) != nil`).
    func contains(_ key: String) -> Bool
    /// Puts the value of `key` out of the way for good (after it was copied to a new key).
    func retire(_ key: String) throws
    /// Gives the storage back (a lock, open files); later saves fail.
    func close()
    /// Makes several changes durable together (the command pipeline's group commit): all of
    /// them, or — when it throws — none (what a restart reads is as before). A key given twice
    /// keeps its last value. Default: `save` one after the other (not all-or-nothing).
    func saveBatch(_ changes: [(key: String, value: String)]) throws
}

extension StateStore {
    public var durability: StateDurability { .durable }
    public func contains(_ key: String) -> Bool { load(key) != nil }
    public func retire(_ key: String) throws {}
    public func close() {}
    public func saveBatch(_ changes: [(key: String, value: String)]) throws {
        for c in changes { try save(c.key, c.value) }
    }
}

/// A StateStore in memory (tests, the headless snapshot mode and `state = "volatile"`).
public final class MemoryStateStore: StateStore {
    /// The values and the number of saves (the command pipeline saves from its own thread while
    /// the render loop reads).
    private let lock: Mutex<(values: [String: String], saveCount: Int)>
    public var values: [String: String] { lock.withLock { $0.values } }
    public var saveCount: Int { lock.withLock { $0.saveCount } }
    public let durability: StateDurability
    public init(_ values: [String: String] = [:], durability: StateDurability = .durable) {
        lock = Mutex((values, 0))
        self.durability = durability
    }
    public func load(_ key: String) -> String? { lock.withLock { $0.values[key] } }
    public func save(_ key: String, _ value: String) throws {
        lock.withLock {
            $0.values[key] = value
            $0.saveCount += 1
        }
    }
    public func retire(_ key: String) throws { lock.withLock { _ = $0.values.removeValue(forKey: key) } }
}
