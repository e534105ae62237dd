import KioskCore

/// A game clock as status and `POST /clock` answer it: `clock: {running, remaining_ms, period,
/// shot_remaining_ms}` of the counter scene `scene` (docs/scoreboard.md).
public struct ClockAnswer: Codable, Sendable, Equatable {
    public struct Clock: Codable, Sendable, Equatable {
        /// Whether the game clock runs (in a sport without a game clock: the shot clock).
        public var running: Bool
        /// The game clock's time left, in milliseconds (rounded up: 0 only when time is up).
        public var remainingMs: Int
        public var period: Int
        /// The shot clock's time left (absent: no shot clock).
        public var shotRemainingMs: Int?
        public init(running: Bool, remainingMs: Int, period: Int, shotRemainingMs: Int?) {
            self.running = running; self.remainingMs = remainingMs; self.period = period; self.shotRemainingMs = shotRemainingMs
        }
        /// `clock` at `now`.
        public init(_ clock: GameClock, at now: WallTime) {
            self.init(running: clock.isRunning, remainingMs: clock.remainingMs(at: now), period: clock.period,
                      shotRemainingMs: clock.shotRemainingMs(at: now))
        }
    }
    public var ok: Bool?
    public var scene: String
    public var clock: Clock
    /// As for a scene choice: false, and why, when the clock lasts only until kioskd stops.
    public var saved: Bool?
    public var note: String?
    /// Why the screen shows no time in place of this clock (a fleet follower whose system clock,
    /// or its primary's, is not synchronised); absent while the time is shown.
    public var warning: String?
    public init(ok: Bool? = nil, scene: String, clock: Clock, saved: Bool? = nil, note: String? = nil, warning: String? = nil) {
        self.ok = ok; self.scene = scene; self.clock = clock; self.saved = saved; self.note = note; self.warning = warning
    }

    /// The line `kioskctl clock` prints: "board: 7:30.0 running, period 2, shot 14.0".
    public var line: String {
        let c = clock
        return "\(scene): \(ClockText.minutesSeconds(c.remainingMs)) \(c.running ? "running" : "stopped"), period \(c.period)"
            + (c.shotRemainingMs.map { ", shot \(ClockText.seconds($0))" } ?? "")
    }
}
