/// A scoreboard's game clock (and optional shot clock) as an exact value (docs/scoreboard.md).
///
/// Each clock is kept as "stopped with R left" or "running since instant T with R left", R in
/// milliseconds and T a `WallTime` (its monotonic part is what the remaining time is computed
/// from; its realtime part lets a kept record be resumed after a reboot). What a frame shows is
/// computed from T and the time of that frame, never by subtracting frame intervals, so a clock
/// that runs for hours is as exact as one that just started.
///
/// Every operation is a pure function: it takes the instant it happens at and returns the new
/// value and the events (period ended, shot clock expired) that happened up to that instant,
/// each with the instant it happened at. A clock that reaches zero stops there, at that instant.
public struct GameClock: Sendable, Equatable {
    public let rules: GameClockRules
    /// The game clock: its time left until the end of the period.
    public private(set) var game: Run
    /// The shot clock (nil when the rules have none).
    public private(set) var shot: Run?
    /// The period shown, 1…`rules.periods`.
    public private(set) var period: Int

    /// One clock's state: stopped with `remainingMs` left, or running since `since` with
    /// `remainingMs` left at that instant.
    public enum Run: Sendable, Equatable {
        case stopped(remainingMs: Int)
        case running(since: WallTime, remainingMs: Int)

        public var isRunning: Bool { if case .running = self { return true } else { return false } }

        /// Time left at `monotonicNs`, in nanoseconds: never below zero; a stopped clock keeps its value.
        public func remainingNs(at monotonicNs: Int64) -> Int64 {
            switch self {
            case .stopped(let r): return Int64(r) * GameClock.nsPerMs
            case .running(let since, let r): return max(0, Int64(r) * GameClock.nsPerMs - (monotonicNs - since.monotonicNs))
            }
        }

        /// The monotonic instant this clock reaches zero (nil: stopped, or already at zero when stopped).
        public var zeroInstantNs: Int64? {
            guard case .running(let since, let r) = self else { return nil }
            return since.monotonicNs + Int64(r) * GameClock.nsPerMs
        }

        /// This clock stopped at `now` (exact: no rounding to milliseconds while it runs past them).
        func stopping(at now: WallTime) -> Run {
            guard isRunning else { return self }
            return .stopped(remainingMs: GameClock.wholeMs(remainingNs(at: now.monotonicNs)))
        }

        /// This clock running from `now` (a stopped clock with time left starts; a running one stays as it is).
        func starting(at now: WallTime) -> Run {
            guard case .stopped(let r) = self, r > 0 else { return self }
            return .running(since: now, remainingMs: r)
        }

        /// The same run state with `ms` left at `now`.
        func with(remainingMs ms: Int, at now: WallTime) -> Run {
            isRunning && ms > 0 ? .running(since: now, remainingMs: ms) : .stopped(remainingMs: ms)
        }
    }

    /// Something that happened at an exact monotonic instant (for the horn).
    public struct Event: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            /// The game clock reached zero: the end of period `period`.
            case periodEnded(period: Int)
            /// The shot clock reached zero.
            case shotClockExpired
        }
        public var kind: Kind
        public var monotonicNs: Int64
        public init(_ kind: Kind, monotonicNs: Int64) { self.kind = kind; self.monotonicNs = monotonicNs }
    }

    /// A clock at the start of the first period: stopped, full period and shot clock.
    public init(rules: GameClockRules) {
        self.rules = rules
        self.game = .stopped(remainingMs: rules.periodLengthMs)
        self.shot = rules.shotClockMs.map { .stopped(remainingMs: $0) }
        self.period = 1
    }

    /// A clock in a given state (a kept record, a test); `period` and the remaining times must
    /// fit the rules (`GameClockRecord.clock` checks a record first).
    public init(rules: GameClockRules, game: Run, shot: Run?, period: Int) {
        precondition((1...rules.periods).contains(period), "period \(period) is not in 1…\(rules.periods)")
        precondition((rules.shotClockMs == nil) == (shot == nil), "a shot clock state without a shot clock in the rules, or the reverse")
        self.rules = rules; self.game = game; self.shot = shot; self.period = period
    }

    static let nsPerMs: Int64 = 1_000_000
    /// Nanoseconds to whole milliseconds, rounded up: a stopped clock never shows less time than
    /// it had (stopping between two milliseconds keeps the later one, which the display shows anyway).
    static func wholeMs(_ ns: Int64) -> Int { Int((ns + nsPerMs - 1) / nsPerMs) }

    // MARK: reading

    /// Whether the game clock runs (in a sport without a game clock: the shot clock).
    public var isRunning: Bool { rules.showsGameClock ? game.isRunning : (shot?.isRunning ?? false) }

    /// The game clock's time left at `now`, in milliseconds (rounded up: 0 only when time is up).
    public func remainingMs(at now: WallTime) -> Int { Self.wholeMs(game.remainingNs(at: now.monotonicNs)) }
    /// The shot clock's time left at `now`, in milliseconds (nil: no shot clock).
    public func shotRemainingMs(at now: WallTime) -> Int? { shot.map { Self.wholeMs($0.remainingNs(at: now.monotonicNs)) } }

    /// What the game clock shows: the time left counting down, the time played counting up.
    public func shownMs(at now: WallTime) -> Int {
        rules.direction == .down ? remainingMs(at: now) : rules.periodLengthMs - remainingMs(at: now)
    }

    /// The instants at which a clock will reach zero if nothing is done, earliest first.
    public var upcomingEvents: [Event] {
        var out: [Event] = []
        if let t = game.zeroInstantNs { out.append(Event(.periodEnded(period: period), monotonicNs: t)) }
        if let t = shot?.zeroInstantNs { out.append(Event(.shotClockExpired, monotonicNs: t)) }
        return out.sorted { $0.monotonicNs < $1.monotonicNs }
    }

    // MARK: operations

    /// Brings the clock up to `now`: a clock whose time ran out at or before `now` is stopped at
    /// zero, and its event returned with the instant it ran out. The shot clock stops when the
    /// game clock does.
    public func advanced(to now: WallTime) -> (GameClock, [Event]) {
        var c = self
        var events: [Event] = []
        var gameEnd: Int64?
        if let t = game.zeroInstantNs, t <= now.monotonicNs {
            events.append(Event(.periodEnded(period: period), monotonicNs: t))
            c.game = .stopped(remainingMs: 0)
            gameEnd = t
        }
        if let s = shot {
            if let t = s.zeroInstantNs, t <= (gameEnd ?? now.monotonicNs) {
                events.append(Event(.shotClockExpired, monotonicNs: t))
                c.shot = .stopped(remainingMs: 0)
            } else if let end = gameEnd, s.isRunning {
                // Stopped with the game clock, at the instant the period ended.
                c.shot = .stopped(remainingMs: Self.wholeMs(s.remainingNs(at: end)))
            }
        }
        events.sort { $0.monotonicNs < $1.monotonicNs }
        return (c, events)
    }

    /// Starts the game clock and the shot clock with it (nothing to start when the game clock's
    /// time is up; in a sport without a game clock, only the shot clock runs).
    public func start(at now: WallTime) -> (GameClock, [Event]) {
        let (advancedClock, events) = advanced(to: now)
        var c = advancedClock
        if rules.showsGameClock {
            guard c.game.remainingNs(at: now.monotonicNs) > 0 else { return (c, events) }
            c.game = c.game.starting(at: now)
        }
        c.shot = c.shot?.starting(at: now)
        return (c, events)
    }

    /// Stops the game clock and the shot clock at `now`.
    public func stop(at now: WallTime) -> (GameClock, [Event]) {
        let (advancedClock, events) = advanced(to: now)
        var c = advancedClock
        c.game = c.game.stopping(at: now)
        c.shot = c.shot?.stopping(at: now)
        return (c, events)
    }

    /// Sets what the game clock shows to `shownMs` (the time left counting down, the time played
    /// counting up); it keeps running or stays stopped. Refused above the period's length.
    public func set(shownMs: Int, at now: WallTime) throws -> (GameClock, [Event]) {
        guard (0...rules.periodLengthMs).contains(shownMs) else {
            throw KioskError.outOfRange("clock set: \(ClockText.minutesSeconds(shownMs)) is not in 0:00…\(ClockText.minutesSeconds(rules.periodLengthMs)) (the period's length)")
        }
        let (advancedClock, events) = advanced(to: now)
        var c = advancedClock
        let remaining = rules.direction == .down ? shownMs : rules.periodLengthMs - shownMs
        c.game = c.game.with(remainingMs: remaining, at: now)
        if remaining == 0 { c.shot = c.shot?.stopping(at: now) }
        return (c, events)
    }

    /// Moves what the game clock shows by `deltaMs` (+1000: one second more on the display, in
    /// either direction), kept within 0…the period's length. A change that brings the time left
    /// to zero ends the period at `now`.
    public func adjusted(byMs deltaMs: Int, at now: WallTime) -> (GameClock, [Event]) {
        var (c, events) = advanced(to: now)
        let shown = c.shownMs(at: now)
        let target = min(max(shown + deltaMs, 0), rules.periodLengthMs)
        let remaining = rules.direction == .down ? target : rules.periodLengthMs - target
        let wasRunning = c.game.isRunning && c.game.remainingNs(at: now.monotonicNs) > 0
        c.game = c.game.with(remainingMs: remaining, at: now)
        if remaining == 0 {
            c.shot = c.shot?.stopping(at: now)
            if wasRunning { events.append(Event(.periodEnded(period: c.period), monotonicNs: now.monotonicNs)) }
        }
        return (c, events)
    }

    /// Goes to period `number` (1…periods): both clocks stopped and full.
    public func period(_ number: Int, at now: WallTime) throws -> (GameClock, [Event]) {
        guard (1...rules.periods).contains(number) else {
            throw KioskError.outOfRange("clock period: \(number) is not in 1…\(rules.periods) (the number of periods)")
        }
        let (advancedClock, events) = advanced(to: now)
        var c = advancedClock
        c.period = number
        c.game = .stopped(remainingMs: rules.periodLengthMs)
        c.shot = rules.shotClockMs.map { .stopped(remainingMs: $0) }
        return (c, events)
    }

    /// The next period (refused after the last).
    public func nextPeriod(at now: WallTime) throws -> (GameClock, [Event]) {
        guard period < rules.periods else {
            throw KioskError.outOfRange("clock period: \(period) is the last period (periods = \(rules.periods))")
        }
        return try self.period(period + 1, at: now)
    }

    /// Back to the start of the first period, both clocks stopped and full.
    public func reset(at now: WallTime) -> (GameClock, [Event]) {
        let (c, events) = advanced(to: now)
        return (GameClock(rules: c.rules), events)
    }

    /// Resets the shot clock to `ms` (nil: its full length); it keeps running if it ran (and the
    /// game clock has time left). Refused without a shot clock or above its length.
    public func shotReset(toMs ms: Int? = nil, at now: WallTime) throws -> (GameClock, [Event]) {
        guard let length = rules.shotClockMs else { throw KioskError.notFound("clock reset --shot: this clock has no shot clock (set shot_clock in its [scene.NAME.clock] table)") }
        let target = ms ?? length
        guard (1...length).contains(target) else {
            throw KioskError.outOfRange("clock reset --shot: \(ClockText.seconds(target)) s is not in 0.1…\(ClockText.seconds(length)) s (the shot clock's length)")
        }
        let (advancedClock, events) = advanced(to: now)
        var c = advancedClock
        let running = c.shot?.isRunning ?? false
        c.shot = running ? .running(since: now, remainingMs: target) : .stopped(remainingMs: target)
        return (c, events)
    }

    /// Applies an intent (what a key, a tap or a command asks for).
    public func applying(_ intent: ClockIntent, at now: WallTime) throws -> (GameClock, [Event]) {
        switch intent {
        case .start: return start(at: now)
        case .stop: return stop(at: now)
        case .toggle: return isRunning ? stop(at: now) : start(at: now)
        case .set(let ms): return try set(shownMs: ms, at: now)
        case .adjust(let ms): return adjusted(byMs: ms, at: now)
        case .period(let n): return try period(n, at: now)
        case .nextPeriod: return try nextPeriod(at: now)
        case .reset: return reset(at: now)
        case .shotReset(let ms): return try shotReset(toMs: ms, at: now)
        }
    }
}

/// Which way the game clock counts.
public enum ClockDirection: String, Sendable, Equatable, CaseIterable, Codable {
    /// From the period's length to zero (basketball, hockey).
    case down
    /// From zero to the period's length (football/soccer).
    case up
}

/// What a game clock is (the `[scene.NAME.clock]` settings), checked when made.
public struct GameClockRules: Sendable, Equatable {
    public let periodLengthMs: Int
    public let periods: Int
    public let direction: ClockDirection
    /// Counting down, the game clock shows `SS.t` when less than this is left.
    public let tenthsBelowMs: Int
    /// The shot clock's length (nil: no shot clock).
    public let shotClockMs: Int?
    /// The shot clock shows tenths when less than this is left.
    public let shotTenthsBelowMs: Int
    /// False for a sport with only a shot clock: the game clock is neither shown nor run.
    public let showsGameClock: Bool

    /// Longest period: 99:59.9 (two minute digits).
    public static let periodLengthRange = 100...5_999_900
    public static let periodsRange = 1...99
    public static let shotClockRange = 1_000...99_000

    /// The setting a rule is broken by, and how.
    public struct Invalid: Error, Equatable {
        public enum Setting: Equatable, Sendable { case periodLength, periods, tenthsBelow, shotClock, showGameClock }
        public let setting: Setting
        public let message: String
    }

    public init(periodLengthMs: Int = 600_000, periods: Int = 4, direction: ClockDirection = .down, tenthsBelowMs: Int = 60_000,
                shotClockMs: Int? = nil, shotTenthsBelowMs: Int = 5_000, showsGameClock: Bool = true) throws {
        guard Self.periodLengthRange.contains(periodLengthMs) else {
            throw Invalid(setting: .periodLength, message: "\(ClockText.minutesSeconds(periodLengthMs)) is out of range, expected 0:00.1…99:59.9")
        }
        guard Self.periodsRange.contains(periods) else {
            throw Invalid(setting: .periods, message: "\(periods) is out of range, expected \(Self.periodsRange.lowerBound)…\(Self.periodsRange.upperBound)")
        }
        guard (0...periodLengthMs).contains(tenthsBelowMs) else {
            throw Invalid(setting: .tenthsBelow, message: "\(ClockText.minutesSeconds(tenthsBelowMs)) is longer than the period (\(ClockText.minutesSeconds(periodLengthMs)))")
        }
        if let s = shotClockMs, !Self.shotClockRange.contains(s) {
            throw Invalid(setting: .shotClock, message: "\(ClockText.seconds(s)) s is out of range, expected 1…99 s")
        }
        if !showsGameClock && shotClockMs == nil {
            throw Invalid(setting: .showGameClock, message: "the game clock can be hidden only when there is a shot clock (set shot_clock)")
        }
        self.periodLengthMs = periodLengthMs; self.periods = periods; self.direction = direction
        self.tenthsBelowMs = tenthsBelowMs; self.shotClockMs = shotClockMs; self.shotTenthsBelowMs = shotTenthsBelowMs
        self.showsGameClock = showsGameClock
    }
}
