import FoundationEssentials
import KioskControl
import KioskCore
import Logging
import Synchronization

/// The log's recent warnings and errors, kept in memory for the phone page's owners and
/// `kioskctl errors`: a ring of at most `capacity` entries, each message cut to `maxMessageBytes`
/// (so at most about 100 KiB), filled by `JournalLogHandler` from every thread. Nothing is
/// written anywhere; the journal keeps the full log.
public final class RecentLog: Sendable {
    /// The ring of the daemon's log handler.
    public static let shared = RecentLog()

    public static let defaultCapacity = 100
    public static let maxMessageBytes = 1024

    public let capacity: Int
    private struct Ring {
        var entries: [RecentErrorsAnswer.Entry] = []
        /// Where the next entry goes once the ring is full.
        var next = 0
        var dropped = 0
    }
    private let ring = Mutex(Ring())

    public init(capacity: Int = RecentLog.defaultCapacity) { self.capacity = max(1, capacity) }

    /// Whether a message of `level` is kept: warnings and worse.
    public static func keeps(_ level: Logger.Level) -> Bool { level >= .warning }

    /// Keeps one message (a level below warning is ignored); the oldest goes when the ring is full.
    public func record(level: Logger.Level, message: String, at date: Date = Date()) {
        guard RecentLog.keeps(level) else { return }
        var text = message
        if text.utf8.count > RecentLog.maxMessageBytes {
            text = String(decoding: Array(text.utf8.prefix(RecentLog.maxMessageBytes)), as: UTF8.self) + "…"
        }
        let entry = RecentErrorsAnswer.Entry(time: RecentLog.iso(date), level: level.rawValue, message: text)
        ring.withLock { r in
            if r.entries.count < capacity {
                r.entries.append(entry)
            } else {
                r.entries[r.next] = entry
                r.next = (r.next + 1) % capacity
                r.dropped += 1
            }
        }
    }

    /// The kept entries, oldest first.
    public var answer: RecentErrorsAnswer {
        ring.withLock { r in
            RecentErrorsAnswer(errors: Array(r.entries[r.next...] + r.entries[..<r.next]), capacity: capacity, dropped: r.dropped)
        }
    }

    static func iso(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let s = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        return TextFormat.utc(s, milliseconds: Int(ms - s * 1000))
    }
}
