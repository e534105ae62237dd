import InMemoryLogging
import Logging

/// Log messages captured for assertions: swift-log's `InMemoryLogHandler` behind a `Logger`
/// (every copy of the logger records into the same store).
public struct CapturedLog: Sendable {
    private let handler = InMemoryLogHandler()
    private let level: Logger.Level

    /// Records messages of `level` and above.
    public init(level: Logger.Level = .trace) { self.level = level }

    public var logger: Logger {
        let handler = self.handler
        var l = Logger(label: "test") { _ in handler }
        l.logLevel = level
        return l
    }

    /// Everything logged so far, oldest first.
    public var entries: [InMemoryLogHandler.Entry] { handler.entries }

    /// Each entry as "<level>: <message>", oldest first.
    public var all: [String] { entries.map { "\($0.level): \($0.message)" } }

    /// How many of `all` contain `fragment`.
    public func count(containing fragment: String) -> Int { all.filter { $0.contains(fragment) }.count }
}
