/// A game clock's state as kept in the state journal (JSON, with a version). A running clock
/// is kept with the instant it started on both clocks and the boot it started in: after a
/// restart in the same boot the monotonic instant still holds (a kill costs nothing); after a
/// reboot the monotonic clock started again, so the time since is taken from the realtime clock.
public struct GameClockRecord: Sendable, Equatable, Codable {
    public static let currentVersion = 1

    public var version: Int
    public var period: Int
    public var game: RunRecord
    public var shot: RunRecord?
    /// The boot the monotonic instants belong to (`/proc/sys/kernel/random/boot_id`).
    public var bootID: String

    public struct RunRecord: Sendable, Equatable, Codable {
        public var running: Bool
        public var remainingMs: Int
        /// When it started running (nil when stopped).
        public var sinceRealtimeNs: Int64?
        public var sinceMonotonicNs: Int64?

        public init(_ run: GameClock.Run) {
            switch run {
            case .stopped(let r):
                running = false; remainingMs = r; sinceRealtimeNs = nil; sinceMonotonicNs = nil
            case .running(let since, let r):
                running = true; remainingMs = r; sinceRealtimeNs = since.realtimeNs; sinceMonotonicNs = since.monotonicNs
            }
        }
    }

    /// The state key of the record of the counter scene `scene`'s game clock.
    public static func stateKey(scene: String) -> String { StateKey.join(["gameclock", scene]) }

    public init(_ clock: GameClock, bootID: String) {
        version = Self.currentVersion
        period = clock.period
        game = RunRecord(clock.game)
        shot = clock.shot.map(RunRecord.init)
        self.bootID = bootID
    }

    /// The clock this record keeps, under `rules` (the config read now, which may have changed
    /// since): a running clock is placed on this boot's monotonic clock (`now`, `bootID`); a
    /// period or a time beyond the rules is brought within them; a shot clock is dropped when the
    /// rules have none and starts full when they gained one. Throws for a version it cannot read
    /// or a value that cannot be a clock's, naming the field.
    public func clock(rules: GameClockRules, now: WallTime, bootID: String) throws -> GameClock {
        try clock(rules: rules, now: now, sameBoot: bootID == self.bootID)
    }

    /// The clock this record keeps placed by its realtime instants only (a fleet's primary's
    /// record on a follower: another machine's monotonic clock means nothing here): the time
    /// since it started is `now`'s realtime minus `sinceRealtimeNs`.
    public func clockByWallTime(rules: GameClockRules, now: WallTime) throws -> GameClock {
        try clock(rules: rules, now: now, sameBoot: false)
    }

    /// The record of `clock` whose realtime instants are its monotonic ones seen from `now`
    /// (the realtime clock may have been set since the clock started: what is published to a
    /// fleet is where the instants are on the realtime clock now).
    public init(_ clock: GameClock, bootID: String, wallAt now: WallTime) {
        self.init(clock, bootID: bootID)
        let offset = now.realtimeNs - now.monotonicNs
        if let m = game.sinceMonotonicNs { game.sinceRealtimeNs = m + offset }
        if let m = shot?.sinceMonotonicNs { shot?.sinceRealtimeNs = m + offset }
    }

    private func clock(rules: GameClockRules, now: WallTime, sameBoot: Bool) throws -> GameClock {
        guard version == Self.currentVersion else {
            throw KioskError.state("game clock record: version \(version) is not known (this kioskd reads version \(Self.currentVersion))")
        }
        guard period >= 1 else { throw KioskError.state("game clock record: period \(period) is below 1") }
        func run(_ r: RunRecord, field: String, length: Int) throws -> GameClock.Run {
            guard r.remainingMs >= 0 else { throw KioskError.state("game clock record: \(field).remainingMs \(r.remainingMs) is below zero") }
            let remaining = min(r.remainingMs, length)
            guard r.running else { return .stopped(remainingMs: remaining) }
            guard let real = r.sinceRealtimeNs, let mono = r.sinceMonotonicNs else {
                throw KioskError.state("game clock record: \(field) is running without sinceRealtimeNs and sinceMonotonicNs")
            }
            // Time since it started, on the clock that still means the same thing now.
            let elapsed = max(0, sameBoot ? now.monotonicNs - mono : now.realtimeNs - real)
            return .running(since: WallTime(realtimeNs: now.realtimeNs - elapsed, monotonicNs: now.monotonicNs - elapsed), remainingMs: remaining)
        }
        let game = try run(self.game, field: "game", length: rules.periodLengthMs)
        var shot: GameClock.Run?
        if let length = rules.shotClockMs {
            shot = try self.shot.map { try run($0, field: "shot", length: length) } ?? .stopped(remainingMs: length)
        }
        return GameClock(rules: rules, game: game, shot: shot, period: min(period, rules.periods))
    }
}
