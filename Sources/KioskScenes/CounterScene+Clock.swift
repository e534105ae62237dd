import FoundationEssentials
import KioskCore
import Logging

/// A moment of a game clock for the horn: `event` (the end of a period, or the shot clock
/// reaching zero, at the exact monotonic instant it happened) noticed by the frame at
/// `frameNs` (the frame that shows `0.0`; later than the event only when frames were late).
public struct GameClockEvent: Sendable, Equatable {
    public var scene: String
    public var event: GameClock.Event
    public var frameNs: Int64
    public init(scene: String, event: GameClock.Event, frameNs: Int64) {
        self.scene = scene; self.event = event; self.frameNs = frameNs
    }
}

/// A change of a scene's game clock asked for on the screen (a key, a tap on the clock) at
/// instant `at`: decided and kept by the daemon, shown once kept (`showCommittedClock`).
public struct GameClockIntent: Sendable, Equatable {
    public var scene: String
    public var intent: ClockIntent
    public var at: WallTime
    public init(scene: String, intent: ClockIntent, at: WallTime) { self.scene = scene; self.intent = intent; self.at = at }
}

extension GameClockRecord {
    /// This boot's id (`/proc/sys/kernel/random/boot_id`): a record of the same boot is resumed
    /// on the monotonic clock, one of another boot on the realtime clock.
    public static let thisBoot: String = {
        let text = (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)) ?? ""
        let id = text.trimmingWhitespace()
        return id.isEmpty ? "unknown" : id
    }()
}

/// A counter scene's game clock: its rules and keys, the clock shown (a kept record is resumed
/// at the first instant the scene is given), where it is drawn and what was drawn.
final class ClockPanel {
    let rules: GameClockRules
    let keys: [UInt16: ClockIntent]
    /// The record kept before this start, resumed by the first `clock(at:)`.
    private var kept: String?
    private var logger: Logger?
    private var current: GameClock?
    /// The last instant the scene was given (for drawing).
    var lastNow: WallTime?
    var intents: ((GameClockIntent) -> Void)?
    var onEvent: ((GameClockEvent) -> Void)?
    // Where it is drawn and what was drawn (CounterScene+ClockDrawing.swift).
    var band = Rect(x: 0, y: 0, width: 0, height: 0)
    var gameBox = Rect(x: 0, y: 0, width: 0, height: 0)
    var shotBox = Rect(x: 0, y: 0, width: 0, height: 0)
    var periodBox = Rect(x: 0, y: 0, width: 0, height: 0)
    var needsFull = true
    var drawnGame: ClockRowFace?
    var drawnShot: ClockRowFace?
    var drawnPeriod: Int?
    var gameWindows: [Rect] = []
    var shotWindows: [Rect] = []
    /// Digit sizes fitted per window height and font.
    var pxCache: [String: Double] = [:]
    /// (A fleet's follower) the primary's record the clock is placed from by the realtime clock,
    /// and the realtime − monotonic offset it was placed at (`CounterScene+FleetClock.swift`).
    var wall: GameClockRecord?
    var wallOffsetNs: Int64 = 0
    /// Shown in place of the time (a follower whose clock, or its primary's, is not synchronised).
    var warning: String?
    var drawnWarning: String?

    init(rules: GameClockRules, keys: [UInt16: ClockIntent]) {
        self.rules = rules
        self.keys = keys
    }

    /// Keeps the record read at start (its JSON; nil: none) until the first instant.
    func keep(_ record: String?, logger: Logger) {
        kept = record
        self.logger = logger
    }

    /// The clock at `now`: the kept record resumed the first time (what happened on it before
    /// this start — a period that ended while kioskd was stopped — is not reported again).
    func clock(at now: WallTime) -> GameClock {
        lastNow = now
        if let c = current { return c }
        var c = GameClock(rules: rules)
        if let text = kept {
            do {
                let record = try JSONDecoder().decode(GameClockRecord.self, from: Data(text.utf8))
                c = try record.clock(rules: rules, now: now, bootID: GameClockRecord.thisBoot).advanced(to: now).0
            } catch {
                logger?.error("the kept game clock cannot be read; starting at the first period", metadata: [
                    "stored": "\(text)", "error": "\(error)"])
            }
        }
        kept = nil
        current = c
        return c
    }

    func set(_ clock: GameClock) { current = clock }

    /// Shows `clock` decided here: no longer placed from a fleet's record.
    func setOwn(_ clock: GameClock) {
        wall = nil
        current = clock
    }

    /// The frame log (debug level): one line each time a frame draws another face, with the
    /// frame's instant on CLOCK_MONOTONIC and the exact time left then, so that what was shown
    /// can be checked against the truth from outside (the kill and drift tests).
    func logShown(_ c: GameClock, scene: String, at now: WallTime) {
        guard let logger, logger.logLevel <= .debug else { return }
        var meta: Logger.Metadata = ["scene": "\(scene)", "frame_ns": "\(now.monotonicNs)", "running": "\(c.isRunning)",
                                     "game": "\(c.face(at: now).text)", "game_ns": "\(c.game.remainingNs(at: now.monotonicNs))"]
        if let s = c.shot, let f = c.shotFace(at: now) { meta["shot"] = "\(f.text)"; meta["shot_ns"] = "\(s.remainingNs(at: now.monotonicNs))" }
        logger.debug("game clock shown", metadata: meta)
    }
}

extension CounterScene {
    /// Where a key or a tap on the game clock goes (the daemon's entrance; nil: nowhere).
    public var clockIntents: ((GameClockIntent) -> Void)? {
        get { clockPanel?.intents }
        set { clockPanel?.intents = newValue }
    }

    /// Called when a frame finds a clock reached zero (the horn's hook): once per event, on the
    /// loop, with the event's exact instant and the frame's.
    public var onClockEvent: ((GameClockEvent) -> Void)? {
        get { clockPanel?.onEvent }
        set { clockPanel?.onEvent = newValue }
    }

    /// The game clock shown at `now` (nil: the scene has none).
    public func gameClock(at now: WallTime) -> GameClock? { clockPanel?.clock(at: now) }

    /// Shows a game clock made durable elsewhere (the command pipeline).
    public func showCommittedClock(_ clock: GameClock, now: WallTime) {
        guard let p = clockPanel, clock.rules == p.rules else { return }
        _ = p.clock(at: now)
        p.setOwn(clock)
        frameNs = now.monotonicNs
    }

    /// Brings the game clock up to `now`: a clock that reached zero stops there and its event
    /// is reported; true when what the clock shows changed since it was drawn.
    func advanceClock(now: WallTime) -> Bool {
        guard let p = clockPanel else { return false }
        followWallClock(p, now: now)
        if p.warning != nil {
            // The time is not shown: it runs on, and reaching zero sounds no horn.
            let (c, events) = p.clock(at: now).advanced(to: now)
            if !events.isEmpty { p.set(c) }
            return p.needsFull || p.drawnWarning != p.warning
        }
        let (c, events) = p.clock(at: now).advanced(to: now)
        if !events.isEmpty {
            p.set(c)
            for e in events { p.onEvent?(GameClockEvent(scene: name, event: e, frameNs: now.monotonicNs)) }
        }
        return p.needsFull || p.drawnGame != gameRow(c, at: now) || p.drawnShot != shotRow(c, at: now) || p.drawnPeriod != c.period
    }

    /// A key bound to the clock (and not to a counter): its intent is handed on; true when bound.
    func clockKey(_ code: UInt16, now: WallTime) -> Bool {
        guard let p = clockPanel, let intent = p.keys[code], !keyBindings.contains(where: { $0.code == code }) else { return false }
        p.intents?(GameClockIntent(scene: name, intent: intent, at: now))
        return true
    }

    /// A tap on the clock's band starts or stops it; true when the tap was there.
    func clockTap(x: Double, y: Double, now: WallTime) -> Bool {
        guard let p = clockPanel, p.band.contains(Point(x: x * Double(size.width), y: y * Double(size.height))) else { return false }
        p.intents?(GameClockIntent(scene: name, intent: .toggle, at: now))
        return true
    }
}

extension CounterScene {
    /// Where the game clock's digit windows were last drawn (empty: hidden or none).
    public var gameClockWindows: [Rect] { clockPanel?.gameWindows ?? [] }
    /// Where the shot clock's digit windows were last drawn.
    public var shotClockWindows: [Rect] { clockPanel?.shotWindows ?? [] }
    /// The clock's band above the counters (nil: no clock).
    public var clockBand: Rect? { clockPanel?.band }
}
