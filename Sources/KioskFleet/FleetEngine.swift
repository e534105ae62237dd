import FoundationEssentials
import KioskComponent
import KioskControl
import KioskCore
import KioskState
import Logging

/// A shared counter's value for the screen, whatever scenes hold the counter: the daemon shows
/// it on those holding `counter` when it arrives (after a reload, the new ones).
public struct FleetShown: Equatable {
    public var counter: String
    public var value: Int
    /// The wheels turn upwards.
    public var up: Bool
    public var at: WallTime
    public init(counter: String, value: Int, up: Bool, at: WallTime) {
        self.counter = counter; self.value = value; self.up = up; self.at = at
    }
}

/// A shared counter as the scenes holding its name have it now (`SharedCounters.counter`).
public typealias FleetCounter = SharedCounter

/// Shares counters across the kiosks of a `[fleet]` group. Runs on the loop's thread.
///
/// Every change of a shared counter, wherever it was made, becomes a `FleetCommand` with a unique
/// id. The primary applies a command id once: the counter's new value, its sequence number and
/// the ids applied so far are saved as one durable record (one atomic state write) before the
/// state is published, so a redelivered or resent command changes nothing, also after a restart
/// or a SIGKILL. Followers show the state with the highest sequence number, keep it durably, send
/// their changes to the primary and resend them (same id) until a state containing the id comes
/// back: the caller is answered then, or told "pending" after `ackTimeoutMs`.
public final class FleetEngine: SharedCounterStage {
    public let settings: FleetSettings
    public let kioskID: String
    let transport: FleetTransport
    let scheduler: any Scheduler
    let state: StateStore
    /// The shared counters' names (fixed at start: `[fleet]` changes take effect at a restart).
    let shared: Set<String>
    /// A shared counter as the scenes hold it now (nil: none since the last reload): read at
    /// each use, so that a reload's new scenes are the ones a change is judged by and kept for
    /// (the engine holds no scene).
    let counter: (String) -> FleetCounter?
    /// Where the values to show go (the daemon's one way to the screen: shown, when it arrives,
    /// on the scenes then holding the counter's name).
    let shown: (FleetShown) -> Void
    let now: () -> WallTime
    let logger: Logger
    /// A shared counter's value changed here (redraw, tell observers).
    public var onChange: (() -> Void)?
    /// The broker connection came or went (the on-screen mark).
    public var onConnectivity: ((Bool) -> Void)?
    /// (Primary) another primary of the group was seen, or is gone (`otherPrimaries`).
    public var onConflict: (() -> Void)?
    var conflict = PrimaryConflict()
    var conflictTimer: TimerID?
    /// (Primary) the other primaries of the group seen in the last `PrimaryConflict.holdSeconds`:
    /// while there is one, shared changes are refused.
    public internal(set) var otherPrimaries: [String] = []

    /// What is kept durably per shared counter: the value, its sequence number and (primary) the
    /// ids of the latest applied commands, oldest first.
    struct Record: Codable, Equatable {
        var value: Int
        var seq: Int
        var ids: [String]
        /// (Follower) the primary whose state this is, and when it was taken (realtime ns).
        var primary: String? = nil
        var takenNs: Int64? = nil
        /// As kept: the id chunk the newest ids went into (`IDChunks`); `ids` is then kept
        /// empty in the record's own key. nil: an older record holding its ids itself.
        var chunk: Int? = nil
    }

    /// (Primary) a counter's applied ids as kept: `count` chunks, each its own state key of at
    /// most `perChunk` ids and `bytes` bytes (JSON), filled in turn; moving on to the next chunk
    /// forgets the ids it held (the oldest). A commit writes the record's head and the chunks its
    /// new ids went into — about 4 KiB at most, whatever the history — never every id.
    struct IDChunks: Equatable {
        static let count = 15
        static let bytes = 4096
        var chunks: [[String]]
        var sizes: [Int]
        var current = 0
        let perChunk: Int

        /// Chunks remembering at least `limit` ids of up to (4 096 / 15 ≈ 61) bytes' worth each.
        init(limit: Int) {
            perChunk = max(1, (limit + Self.count - 2) / (Self.count - 1))
            chunks = Array(repeating: [], count: Self.count)
            sizes = Array(repeating: 2, count: Self.count)
        }

        /// Appends `id`; returns the ids forgotten to make room (those of a chunk reused).
        mutating func append(_ id: String) -> [String] {
            var forgotten: [String] = []
            let cost = id.utf8.count + 3
            if chunks[current].count >= perChunk || sizes[current] + cost > Self.bytes {
                current = (current + 1) % Self.count
                forgotten = chunks[current]
                chunks[current] = []
                sizes[current] = 2
            }
            chunks[current].append(id)
            sizes[current] += cost
            return forgotten
        }

        /// Every id kept, oldest first.
        var ids: [String] { (1...Self.count).flatMap { chunks[(current + $0) % Self.count] } }
    }
    /// (Primary) each shared counter's ids as kept, and the chunks to write at its next commit.
    var idChunks: [String: IDChunks] = [:]
    var unwrittenChunks: [String: Set<Int>] = [:]

    static func chunkKey(group: String, counter: String, index: Int) -> String {
        StateKey.join(["fleet", group, counter, "ids", String(index)])
    }
    var records: [String: Record] = [:]
    /// The group's game clocks (FleetEngine+Clock.swift); `clocks` set before `start`.
    let clockBook = FleetClockBook()
    /// The group's settings (FleetEngine+Settings.swift).
    let settingsBook = FleetSettingsBook()
    public var clocks: SharedClocks? {
        get { clockBook.clocks }
        set { clockBook.clocks = newValue }
    }
    /// (Primary) counters changed here since start, and the connections made since: the group's
    /// retained state in this primary's name is taken over only before either (`takeOver`).
    var changedSinceStart: Set<String> = []
    var connects = 0
    var applied: [String: Set<String>] = [:]

    /// Makes a group of writes durable — all of them, or (an error) none — then calls `done` on
    /// the loop: the command pipeline's group commit (on `kioskd-commit`: the loop never waits
    /// for the disk).
    public var commit: (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void
    /// Counters with a commit in flight; their next changes wait in `waiting` / `nextState`.
    var committing: Set<String> = []
    /// (Primary) commands waiting for their counter's commit in flight, in arrival order.
    var waiting: [String: [(command: FleetCommand, done: (Result<Int, KioskError>) -> Void)]] = [:]
    /// (Follower) the record being committed, newest first for judging the next state.
    var deciding: [String: Record] = [:]
    /// (Follower) the newest state to show once the commit in flight is done, and the ids (and
    /// refusals) of every state received meanwhile, answered then.
    var nextState: [String: FleetCounterState] = [:]
    var laterAnswers: [String: (ids: [String], refused: [String: String])] = [:]

    struct Pending {
        var counter: String
        var command: FleetCommand
        var reply: ((ControlResponse) -> Void)?
        var timer: TimerID?
        var sentNs: Int64?
        /// The seq shown when the change was made: the primary applies it beyond that seq.
        var shownSeq = 0
    }
    var pending: [String: Pending] = [:]
    /// Pending ids in the order they were made (resent in this order).
    var pendingOrder: [String] = []
    var retryTimer: TimerID?
    let boot: String
    var serial = 0
    var queueFullLogged = false
    /// Refused states: when one was last logged (monotonic ns) and how many since (per counter).
    var refusalLog: [String: (atNs: Int64, suppressed: Int)] = [:]
    /// Refused states are logged at most once per this many seconds per counter.
    static let refusalLogSeconds: Int64 = 60
    /// States refused since start (forged, foreign or impossible), all counters.
    public internal(set) var refusedStates = 0
    /// Ids the primary lists in each published state (besides a redelivered one).
    static let idsPublished = 64
    /// The longest command id accepted, in bytes (UTF-8).
    public static let maxIDBytes = 64

    /// Why `id` is refused (empty, or longer than `maxIDBytes`); nil when it is accepted.
    public static func idProblem(_ id: String) -> String? {
        let n = id.utf8.count
        if n == 0 { return "the id is empty" }
        return n > maxIDBytes ? "its id is \(n) bytes long, more than the \(maxIDBytes) bytes allowed" : nil
    }

    /// `names`: every counter name the scenes hold at start; the shared ones are
    /// `settings.counters` (all when nil). `counter`: a counter by name as the scenes hold it at
    /// the time it is called (after a reload the new ones). `shown`: where a shared counter's
    /// value to show goes, on the loop. Throws a config error naming `fleet.counters` for a
    /// name no scene has.
    public init(settings: FleetSettings, kioskID: String, transport: FleetTransport, scheduler: any Scheduler,
                state: StateStore, names: [String], counter: @escaping (String) -> FleetCounter?, shown: @escaping (FleetShown) -> Void,
                commit: @escaping (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void,
                now: @escaping () -> WallTime, logger: Logger) throws {
        self.settings = settings
        self.kioskID = kioskID
        self.transport = transport
        self.scheduler = scheduler
        self.state = state
        self.now = now
        self.commit = commit
        var logger = logger
        logger[metadataKey: "fleet"] = "\(settings.group)"
        self.logger = logger
        self.shared = try Self.sharedNames(settings, names: names)
        self.counter = counter
        self.shown = shown
        self.boot = String(UInt64.random(in: 0...UInt64(UInt32.max)), radix: 36)
    }

    /// The shared counters among `names` (every counter name the scenes hold); a config error
    /// naming `fleet.counters` for a listed name no scene has.
    public static func sharedNames(_ settings: FleetSettings, names: [String]) throws -> Set<String> {
        let all = Set(names)
        guard let wanted = settings.counters else { return all }
        for n in wanted where !all.contains(n) {
            throw KioskError.config("\(settings.countersLocation ?? "[fleet]"): key 'fleet.counters': no counter scene has a counter \(ConfigTable.quoted(n)) ("
                + (all.isEmpty ? "no scene has counters" : "counters: \(all.sorted().joined(separator: ", "))") + ")")
        }
        return all.intersection(wanted)
    }

    public var isPrimary: Bool { settings.role == .primary }
    public var sharedCounters: [String] { shared.sorted() }
    public func isShared(_ counter: String) -> Bool { shared.contains(counter) }
    /// Changes not yet confirmed by the primary (followers).
    public var pendingCount: Int { pending.count }
    /// The sequence number of the state shown for `counter`.
    public func seq(of counter: String) -> Int? { records[counter]?.seq }

    var base: String { "kioskd/group/\(settings.group)/counter/" }
    public func stateTopic(_ counter: String) -> String { base + counter }
    public func commandTopic(_ counter: String) -> String { base + counter + "/cmd" }
    static func recordKey(group: String, counter: String) -> String { StateKey.join(["fleet", group, counter]) }

    // MARK: start

    /// Loads the durable records (the shown values follow them), subscribes and, on the primary,
    /// publishes the state of every shared counter (again on every connect: a broker restarted
    /// without persistence has forgotten retained messages).
    public func start() {
        for name in sharedCounters {
            let key = Self.recordKey(group: settings.group, counter: name)
            if let raw = state.load(key) {
                if var r = try? JSONDecoder().decode(Record.self, from: Data(raw.utf8)) {
                    if !isPrimary, r.seq > FleetStateRule.maxSeq || r.seq < 0 {
                        logger.error("fleet record holds an impossible seq (a forged state was shown); the next state of the primary replaces it",
                                     metadata: ["state.key": "\(key)", "seq": "\(r.seq)", "value": "\(r.value)"])
                        r.seq = 0
                        r.primary = nil
                        r.takenNs = nil
                    }
                    if isPrimary { loadIDs(name, into: &r) }
                    records[name] = r
                    applied[name] = Set(r.ids)
                    show(name, r.value)
                    continue
                }
                logger.error("fleet record is not readable; starting from the counter's value with sequence 0",
                             metadata: ["state.key": "\(key)", "stored": "\(raw.prefix(200))"])
            }
            records[name] = Record(value: currentValue(name) ?? 0, seq: 0, ids: [])
            applied[name] = []
            idChunks[name] = IDChunks(limit: settings.appliedIdLimit)
        }
        startClocks()
        startSettings()
        transport.onConnectionChange { [weak self] up in self?.connectionChanged(up) }
        if isPrimary {
            transport.subscribe(base + "+/cmd") { [weak self] topic, payload, _ in self?.receivedCommand(topic, payload) }
            transport.subscribe(base + "+") { [weak self] topic, payload, retained in self?.receivedPrimaryState(topic, payload, retained: retained) }
            for name in sharedCounters { publishState(name) }
        } else {
            transport.subscribe(base + "+") { [weak self] topic, payload, _ in self?.receivedState(topic, payload) }
        }
        logger.info("fleet started", metadata: ["role": "\(settings.role.rawValue)", "counters": "\(sharedCounters.joined(separator: ","))"])
    }

    /// (Primary) the ids of `name`'s record from its chunks (`IDChunks`); an older record's own
    /// ids are put into chunks, all written at the next commit.
    func loadIDs(_ name: String, into r: inout Record) {
        var chunks = IDChunks(limit: settings.appliedIdLimit)
        if let current = r.chunk, (0..<IDChunks.count).contains(current) {
            for i in 0..<IDChunks.count {
                let key = Self.chunkKey(group: settings.group, counter: name, index: i)
                guard let raw = state.load(key) else { continue }
                guard let ids = try? JSONDecoder().decode([String].self, from: Data(raw.utf8)) else {
                    logger.error("fleet record: an id chunk is not readable; the ids it held are forgotten (a resend of one of them would be applied again)",
                                 metadata: ["state.key": "\(key)"])
                    continue
                }
                chunks.chunks[i] = ids
                chunks.sizes[i] = ids.reduce(2) { $0 + $1.utf8.count + 3 }
            }
            chunks.current = current
        } else {
            for id in r.ids { _ = chunks.append(id) }
            unwrittenChunks[name] = Set(0..<IDChunks.count)
        }
        idChunks[name] = chunks
        r.ids = chunks.ids
        r.chunk = chunks.current
    }

    /// Answers the callers still waiting (their changes stay unconfirmed) and stops the timers.
    public func stop() {
        for id in pendingOrder { answerPending(id) }
        for p in pending.values { if let t = p.timer { scheduler.cancel(t) } }
        if let t = retryTimer { scheduler.cancel(t); retryTimer = nil }
        if let t = conflictTimer { scheduler.cancel(t); conflictTimer = nil }
        stopClocks()
    }

    func connectionChanged(_ up: Bool) {
        onConnectivity?(up)
        guard up else { return }
        connects += 1
        if isPrimary {
            for name in sharedCounters { publishState(name) }
            publishClocks()
            publishSettings()
        } else {
            for id in pendingOrder { send(id) }
            resendClocks()
        }
    }
}
