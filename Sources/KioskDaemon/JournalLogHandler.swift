import FoundationEssentials
import Glibc
import KioskPosix
import Logging
import Synchronization

/// A swift-log handler writing one line per message to stderr, prefixed with the syslog priority
/// journald understands (`<3>` error … `<7>` debug) when stderr goes to the journal or a pipe;
/// with the level's name when it is a terminal. Warnings and errors are also kept in `recent`
/// (the page's "Recent errors", `kioskctl errors`).
public struct JournalLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let prefixed: Bool
    /// Where warnings and errors are kept in memory (nil: nowhere).
    private let recent: RecentLog?
    /// One line at a time on stderr, from every thread.
    private static let lock = Mutex(())

    public init(label: String, level: Logger.Level = .info,
                prefixed: Bool = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] != nil || isatty(2) == 0,
                recent: RecentLog? = .shared) {
        self.label = label
        self.recent = recent
        self.logLevel = level
        self.prefixed = prefixed
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The syslog priority of a level (sd-daemon.h's SD_ERR … SD_DEBUG).
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    /// One formatted line (without the newline).
    public func format(level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?) -> String {
        head(level) + text(message: message, metadata: extra)
    }

    /// `<3>` for the journal, `error: ` on a terminal.
    func head(_ level: Logger.Level) -> String { prefixed ? "<\(Self.priority(level))>" : "\(level): " }

    /// The message on one line, with its metadata sorted by key.
    func text(message: Logger.Message, metadata extra: Logger.Metadata?) -> String {
        var all = metadata
        if let p = metadataProvider { all.merge(p.get(), uniquingKeysWith: { _, b in b }) }
        if let extra { all.merge(extra, uniquingKeysWith: { _, b in b }) }
        let meta = all.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = "\(message)".replacing("\n", with: " ")
        return text + (meta.isEmpty ? "" : " [\(meta)]")
    }

    public func log(event: LogEvent) {
        let line = text(message: event.message, metadata: event.metadata)
        let s = head(event.level) + line + "\n"
        if let recent { recent.record(level: event.level, message: line) }
        JournalLogHandler.lock.withLock { _ in Posix.writeStandardError(s) }
    }
}
