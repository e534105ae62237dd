import Synchronization

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
/// `durability` for stores that keep values in memory or cannot save.
public protocol StateStore: AnyObject {
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

/// State keys and their file names.
public enum StateKey {
    /// One key from several names: "." between them, and inside each name "%" written as "%25"
    /// and "." as "%2E". Different lists of names never give the same key, and names without
    /// "." or "%" read as written ("counter", "score", "HOME" → "counter.score.HOME").
    public static func join(_ names: [String]) -> String {
        names.map { name in
            var out = ""
            for ch in name.unicodeScalars {
                switch ch {
                case "%": out += "%25"
                case ".": out += "%2E"
                default: out.unicodeScalars.append(ch)
                }
            }
            return out
        }.joined(separator: ".")
    }

    /// The file name for `key`: ASCII letters, digits, `.`, `_` and `-` as they are (a leading `.`
    /// excepted), every other byte of its UTF-8 as `%XX`, then `.state`. `%` itself is always
    /// written `%25`, so the name can be read back to exactly one key: different keys never share
    /// a file, and no key's file is another key's `.bak`, `.tmp` or aside copy (those do not end
    /// in `.state`).
    public static func fileName(for key: String) -> String {
        var out = ""
        for b in key.utf8 {
            let c = Character(Unicode.Scalar(b))
            if c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-" || c == ".") && !(out.isEmpty && c == ".") {
                out.append(c)
            } else {
                let hex = Array("0123456789ABCDEF")
                out += "%\(hex[Int(b >> 4)])\(hex[Int(b & 15)])"
            }
        }
        return out + ".state"
    }

    /// The longest file name a key may have: the file system's 255 bytes less the longest suffix
    /// added to it (`.bak.corrupt-YYYYMMDDTHHMMSSZ`).
    public static let maxFileNameBytes = 255 - 29

    /// Why `key` cannot be stored, or nil.
    public static func problem(_ key: String) -> String? {
        let n = fileName(for: key).utf8.count
        return n > maxFileNameBytes ? "its state file name would be \(n) bytes long, more than the \(maxFileNameBytes) allowed" : nil
    }
}

/// A StateStore in memory (tests, the headless snapshot mode and `state = "volatile"`).
public final class MemoryStateStore: StateStore, @unchecked Sendable {
    // @unchecked: every access to the values goes through `lock` (the command pipeline saves
    // from its own thread while the render loop reads).
    private let lock = Mutex<(values: [String: String], saveCount: Int)>(([:], 0))
    public var values: [String: String] { lock.withLock { $0.values } }
    public var saveCount: Int { lock.withLock { $0.saveCount } }
    public let durability: StateDurability
    public init(_ values: [String: String] = [:], durability: StateDurability = .durable) {
        lock.withLock { $0.values = values }
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
