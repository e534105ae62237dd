import FoundationEssentials
import Glibc
import KioskCore

/// Game clock changes in the command pipeline (docs/scoreboard.md): a `ClockIntent` is decided
/// in submission order with the counter changes of its batch, against the clock the batches
/// before it left, at the instant it was asked for; the clock it gives is kept as a
/// `GameClockRecord` (JSON) with the batch's other writes, and answered once on disk.
extension CommandPipeline {
    /// One change of a scene's game clock asked of the pipeline.
    public struct ClockChange: Sendable, Equatable {
        /// The state key of the clock's record (`GameClockRecord.stateKey`).
        public var key: String
        /// The scene holding the clock.
        public var scene: String
        public var intent: ClockIntent
        /// The clock on screen when submitted: the starting point when the pipeline has not seen
        /// the key yet, or its rules changed since (a reload with another period length).
        public var shown: GameClock
        /// The instant the change was asked for (a key press, a command's arrival): the clock
        /// starts or stops exactly there, however long the batch waits for the disk.
        public var at: WallTime
        /// The boot the monotonic instants belong to (kept in the record).
        public var bootID: String
        public init(key: String, scene: String, intent: ClockIntent, shown: GameClock, at: WallTime, bootID: String) {
            self.key = key; self.scene = scene; self.intent = intent; self.shown = shown; self.at = at; self.bootID = bootID
        }
    }

    /// What became of a clock change.
    public enum ClockOutcome: Sendable, Equatable {
        /// On disk (or nothing to write: the clock is as it was): the clock now, and what
        /// happened on it up to the change's instant (a period that ended before a stop).
        case decided(GameClock, events: [GameClock.Event])
        /// Not carried out: the clock's rules refused it (`set 99:00` in a 10:00 period), or its
        /// batch could not be made durable (kind `.state`); the clock stays as it was.
        case refused(KioskError)
    }

    public typealias ClockCompletion = @Sendable (ClockOutcome) -> Void

    /// Decides one clock change against the clocks known (updated in place): the outcome, and
    /// the record to write when the clock changed.
    static func decideClock(_ c: ClockChange, known: inout [String: GameClock]) -> (ClockOutcome, write: (key: String, value: String)?) {
        let old = known[c.key].flatMap { $0.rules == c.shown.rules ? $0 : nil } ?? c.shown
        do {
            let (new, events) = try old.applying(c.intent, at: c.at)
            known[c.key] = new
            guard new != old else { return (.decided(new, events: events), nil) }
            let data = try JSONEncoder().encode(GameClockRecord(new, bootID: c.bootID))
            return (.decided(new, events: events), (c.key, String(decoding: data, as: UTF8.self)))
        } catch let e as KioskError {
            return (.refused(e), nil)
        } catch {
            return (.refused(KioskError.state("clock of scene '\(c.scene)': \(error)")), nil)
        }
    }

    /// A clock outcome of a batch whose commit failed.
    static func refusedClock(_ o: ClockOutcome, _ c: ClockChange, error: Error, errno: Int32) -> ClockOutcome {
        guard case .decided = o else { return o }
        return .refused(KioskError(.state, "clock of scene '\(c.scene)': cannot save it (state key \(c.key)): \(error); it stays as it was", errno: errno))
    }
}
