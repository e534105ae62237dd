import Foundation
import KioskControl
import KioskCore
import KioskScenes
import Logging

/// One change of a shared counter, sent to the group's primary on
/// `kioskd/group/GROUP/counter/NAME/cmd` (QoS 1).
public struct FleetCommand: Codable, Sendable, Equatable {
    public enum Op: String, Codable, Sendable, Equatable { case inc, dec, set, reset }
    public var op: Op
    public var value: Int?
    /// Unique per change: the primary applies each id once.
    public var id: String
    public init(op: Op, value: Int? = nil, id: String) { self.op = op; self.value = value; self.id = id }
}

/// A shared counter's state, published by the primary on `kioskd/group/GROUP/counter/NAME`
/// (retained, QoS 1) after every command it applied.
public struct FleetCounterState: Codable, Sendable, Equatable {
    public var value: Int
    /// Grows by one with every applied command; followers show the highest.
    public var seq: Int
    /// Ids of commands this state contains: the latest applied ones and a redelivered one.
    public var ids: [String]
    /// Commands the primary refused (id → the reason); they changed nothing.
    public var refused: [String: String]?
    /// The kiosk id of the primary that published it (followers with `fleet.primary` show only
    /// its states; a primary that sees another's stops acknowledging). Nil from older kioskd.
    public var primary: String?
    public init(value: Int, seq: Int, ids: [String], refused: [String: String]? = nil, primary: String? = nil) {
        self.value = value; self.seq = seq; self.ids = ids; self.refused = refused; self.primary = primary
    }
}

/// The answer to a change made on a follower that the primary has not confirmed in time
/// (HTTP 202): the change is queued and resent until the primary confirms it.
public struct FleetPendingAnswer: Codable, Sendable, Equatable {
    public var ok = false
    public var pending = true
    public var counter: String
    public var id: String
    public var message: String
}

/// What the fleet needs of MQTT: QoS 1 publish, subscribe, and the connection's ups and downs.
/// `MQTTClient` in the daemon; a fake in tests.
public protocol FleetTransport: AnyObject {
    var isConnected: Bool { get }
    /// `handler` is called with true on every connect and false on every loss.
    func onConnectionChange(_ handler: @escaping (Bool) -> Void)
    /// Publishes at QoS 1 (sent now, or queued while disconnected). Returns why it was refused, nil when taken.
    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) -> String?
    func subscribe(_ filter: String, _ handler: @escaping (_ topic: String, _ payload: [UInt8]) -> Void)
}

/// Shares counters across the kiosks of a `[fleet]` group. Runs on the loop's thread.
///
/// Every change of a shared counter, wherever it was made, becomes a `FleetCommand` with a unique
/// id. The primary applies a command id once: the counter's new value, its sequence number and
/// the ids applied so far are saved as one durable record (one atomic state write) before the
/// state is published, so a redelivered or resent command changes nothing, also after a restart
/// or a SIGKILL. Followers show the state with the highest sequence number, keep it durably, send
/// their changes to the primary and resend them (same id) until a state containing the id comes
/// back: the caller is answered then, or told "pending" after `ackTimeoutMs`.
public final class FleetEngine {
    public let settings: FleetSettings
    public let kioskID: String
    private let transport: FleetTransport
    private let scheduler: any Scheduler
    private let state: StateStore
    /// Shared counter name → the counter scenes holding a counter of that name.
    private let owners: [String: [CounterControl]]
    private let now: () -> WallTime
    private let logger: Logger
    /// A shared counter's value changed here (redraw, tell observers).
    public var onChange: (() -> Void)?
    /// The broker connection came or went (the on-screen mark).
    public var onConnectivity: ((Bool) -> Void)?
    /// (Primary) another primary of the group was seen, or is gone (`otherPrimaries`).
    public var onConflict: (() -> Void)?
    private var conflict = PrimaryConflict()
    private var conflictTimer: TimerID?
    /// (Primary) the other primaries of the group seen in the last `PrimaryConflict.holdSeconds`:
    /// while there is one, shared changes are refused.
    public private(set) var otherPrimaries: [String] = []

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
    private var idChunks: [String: IDChunks] = [:]
    private var unwrittenChunks: [String: Set<Int>] = [:]

    static func chunkKey(group: String, counter: String, index: Int) -> String {
        StateKey.join(["fleet", group, counter, "ids", String(index)])
    }
    private var records: [String: Record] = [:]
    private var applied: [String: Set<String>] = [:]

    /// Makes a group of writes durable — all of them, or (an error) none — then calls `done` on
    /// the loop. The daemon gives the command pipeline's group commit (on `kioskd-commit`: the loop
    /// never waits for the disk); by default `saveBatch` at once.
    public var commit: (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void
    /// Counters with a commit in flight; their next changes wait in `waiting` / `nextState`.
    private var committing: Set<String> = []
    /// (Primary) commands waiting for their counter's commit in flight, in arrival order.
    private var waiting: [String: [(command: FleetCommand, done: (Result<Int, KioskError>) -> Void)]] = [:]
    /// (Follower) the record being committed, newest first for judging the next state.
    private var deciding: [String: Record] = [:]
    /// (Follower) the newest state to show once the commit in flight is done, and the ids (and
    /// refusals) of every state received meanwhile, answered then.
    private var nextState: [String: FleetCounterState] = [:]
    private var laterAnswers: [String: (ids: [String], refused: [String: String])] = [:]

    private struct Pending {
        var counter: String
        var command: FleetCommand
        var reply: ((ControlResponse) -> Void)?
        var timer: TimerID?
        var sentNs: Int64?
    }
    private var pending: [String: Pending] = [:]
    /// Pending ids in the order they were made (resent in this order).
    private var pendingOrder: [String] = []
    private var retryTimer: TimerID?
    private let boot: String
    private var serial = 0
    private var queueFullLogged = false
    /// Refused states: when one was last logged (monotonic ns) and how many since (per counter).
    private var refusalLog: [String: (atNs: Int64, suppressed: Int)] = [:]
    /// Refused states are logged at most once per this many seconds per counter.
    static let refusalLogSeconds: Int64 = 60
    /// States refused since start (forged, foreign or impossible), all counters.
    public private(set) var refusedStates = 0
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

    /// `counters`: every counter scene; the shared ones are `settings.counters` (all when nil).
    /// Throws a config error naming `fleet.counters` for a name no scene has.
    public init(settings: FleetSettings, kioskID: String, transport: FleetTransport, scheduler: any Scheduler,
                state: StateStore, counters: [CounterControl], now: @escaping () -> WallTime, logger: Logger) throws {
        self.settings = settings
        self.kioskID = kioskID
        self.transport = transport
        self.scheduler = scheduler
        self.state = state
        self.now = now
        commit = { [state] writes, done in
            do { try state.saveBatch(writes); done(nil) } catch { done(error) }
        }
        var logger = logger
        logger[metadataKey: "fleet"] = "\(settings.group)"
        self.logger = logger
        self.owners = try Self.sharedOwners(settings, counters: counters)
        self.boot = String(UInt64.random(in: 0...UInt64(UInt32.max)), radix: 36)
    }

    /// The shared counters and the scenes holding them; a config error naming `fleet.counters`
    /// for a listed name no scene has.
    public static func sharedOwners(_ settings: FleetSettings, counters: [CounterControl]) throws -> [String: [CounterControl]] {
        var owners: [String: [CounterControl]] = [:]
        for c in counters { for n in c.counterNames { owners[n, default: []].append(c) } }
        if let wanted = settings.counters {
            for n in wanted where owners[n] == nil {
                let all = owners.keys.sorted()
                throw KioskError.config("\(settings.countersLocation ?? "[fleet]"): key 'fleet.counters': no counter scene has a counter \(ConfigTable.quoted(n)) ("
                    + (all.isEmpty ? "no scene has counters" : "counters: \(all.joined(separator: ", "))") + ")")
            }
            owners = owners.filter { wanted.contains($0.key) }
        }
        return owners
    }

    public var isPrimary: Bool { settings.role == .primary }
    public var sharedCounters: [String] { owners.keys.sorted() }
    public func isShared(_ counter: String) -> Bool { owners[counter] != nil }
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
        transport.onConnectionChange { [weak self] up in self?.connectionChanged(up) }
        if isPrimary {
            transport.subscribe(base + "+/cmd") { [weak self] topic, payload in self?.receivedCommand(topic, payload) }
            transport.subscribe(base + "+") { [weak self] topic, payload in self?.receivedPrimaryState(topic, payload) }
            for name in sharedCounters { publishState(name) }
        } else {
            transport.subscribe(base + "+") { [weak self] topic, payload in self?.receivedState(topic, payload) }
        }
        logger.info("fleet started", metadata: ["role": "\(settings.role.rawValue)", "counters": "\(sharedCounters.joined(separator: ","))"])
    }

    /// (Primary) the ids of `name`'s record from its chunks (`IDChunks`); an older record's own
    /// ids are put into chunks, all written at the next commit.
    private func loadIDs(_ name: String, into r: inout Record) {
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
    }

    private func connectionChanged(_ up: Bool) {
        onConnectivity?(up)
        guard up else { return }
        if isPrimary {
            for name in sharedCounters { publishState(name) }
        } else {
            for id in pendingOrder { send(id) }
        }
    }

    // MARK: changes made here

    /// A touch or key action on a counter: taken (true) when the counter is shared.
    public func route(_ counter: String, _ action: CounterAction) -> Bool {
        let op: FleetCommand.Op
        switch action {
        case .increment: op = .inc
        case .decrement: op = .dec
        case .reset: op = .reset
        case .none: return false
        }
        guard isShared(counter) else { return false }
        submit(counter, op: op, value: nil, reply: nil)
        return true
    }

    /// A change of a shared counter made on this kiosk. The primary applies it at once; a
    /// follower sends it to the primary and answers when the primary's state containing it has
    /// come back (200), when the primary refused it (its error), or after `ackTimeoutMs` with a
    /// pending answer (202). `reply` nil: nobody waits (touch, keys).
    public func submit(_ counter: String, op: FleetCommand.Op, value: Int?, reply: ((ControlResponse) -> Void)?) {
        let field = op == .set ? "value" : "name"
        serial += 1
        let command = FleetCommand(op: op, value: op == .set ? (value ?? 0) : nil, id: "\(kioskID)-\(boot)-\(serial)")
        if isPrimary {
            if let message = conflictMessage(counter) {
                logger.warning("counter action refused", metadata: ["counter": "\(counter)", "error": "\(message)"])
                reply?(.error(409, message, field: field))
                return
            }
            apply(command, to: counter) { [logger] result in
                switch result {
                case .success(let v): reply?(.json(200, CounterAnswer(counter: counter, value: v)))
                case .failure(let e):
                    if reply == nil { logger.warning("counter action refused", metadata: ["counter": "\(counter)", "error": "\(e.message)"]) }
                    reply?(.from(e, field: field))
                }
            }
            return
        }
        if op == .set, let v = command.value, let info = info(counter), !(info.minimum...info.maximum).contains(v) {
            let e = v > info.maximum
                ? KioskError.outOfRange("counter '\(counter)': \(v) is above the largest value \(info.maximum) that the counter can show; the value stays \(info.value)")
                : KioskError.outOfRange("counter '\(counter)': \(v) is below the minimum \(info.minimum); the value stays \(info.value)")
            reply?(.from(e, field: field))
            return
        }
        guard pending.count < settings.queueLimit else {
            let message = "the fleet queue is full: \(pending.count) changes are waiting for the primary of group '\(settings.group)' to confirm them "
                + "(fleet.queue_limit \(settings.queueLimit); broker \(transport.isConnected ? "connected" : "offline")); the change of counter '\(counter)' (\(op.rawValue)) was refused"
            if !queueFullLogged { logger.warning("\(message)") }
            queueFullLogged = true
            reply?(.error(503, message, field: field))
            return
        }
        queueFullLogged = false
        var p = Pending(counter: counter, command: command, reply: reply)
        if reply != nil {
            p.timer = try? scheduler.schedule(after: Int64(settings.ackTimeoutMs) * 1_000_000) { [weak self] _ in
                self?.answerPending(command.id)
            }
        }
        pending[command.id] = p
        pendingOrder.append(command.id)
        send(command.id)
        armRetry()
    }

    /// Tells a waiting caller that its change is queued but not yet confirmed (202).
    private func answerPending(_ id: String) {
        guard var p = pending[id], let reply = p.reply else { return }
        p.reply = nil
        p.timer = nil
        pending[id] = p
        let message = "the change of counter '\(p.counter)' (\(p.command.op.rawValue)) is queued: the primary of group '\(settings.group)' has not confirmed it within \(settings.ackTimeoutMs) ms "
            + "(broker \(transport.isConnected ? "connected" : "offline")); it is resent until the primary confirms it, then every kiosk shows it"
        reply(.json(202, FleetPendingAnswer(counter: p.counter, id: id, message: message)))
    }

    private func send(_ id: String) {
        guard var p = pending[id], transport.isConnected else { return }
        let payload = (try? JSONEncoder().encode(p.command)).map { Array($0) } ?? []
        if let refusal = transport.publish(commandTopic(p.counter), payload, retain: false) {
            logger.debug("fleet command not sent yet", metadata: ["id": "\(id)", "reason": "\(refusal)"])
            return
        }
        p.sentNs = scheduler.now(.monotonic)
        pending[id] = p
    }

    /// Resends, while connected, the changes whose confirmation is overdue: the primary may have
    /// been down when they were sent (the broker keeps nothing for it), or the broker restarted.
    private func armRetry() {
        guard retryTimer == nil, !pending.isEmpty else { return }
        let interval = Int64(max(settings.ackTimeoutMs, 1000)) * 1_000_000
        retryTimer = try? scheduler.schedule(after: interval) { [weak self] _ in
            guard let self else { return }
            self.retryTimer = nil
            let cutoff = self.scheduler.now(.monotonic) - interval
            for id in self.pendingOrder where (self.pending[id]?.sentNs ?? Int64.min) <= cutoff { self.send(id) }
            self.armRetry()
        }
    }

    // MARK: primary

    private func receivedCommand(_ topic: String, _ payload: [UInt8]) {
        guard topic.hasPrefix(base), topic.hasSuffix("/cmd") else { return }
        let name = String(topic.dropFirst(base.count).dropLast(4))
        guard let command = try? JSONDecoder().decode(FleetCommand.self, from: Data(payload)), !command.id.isEmpty else {
            logger.warning("fleet command ignored: expected {\"op\": \"inc\"|\"dec\"|\"set\"|\"reset\", \"value\": N, \"id\": \"…\"}",
                           metadata: ["topic": "\(topic)", "payload": "\(String(decoding: payload.prefix(200), as: UTF8.self))"])
            return
        }
        guard isShared(name) else {
            logger.warning("fleet command for a counter that is not shared here ignored", metadata: ["topic": "\(topic)"])
            return
        }
        if let refusal = Self.idProblem(command.id) {
            // Refused on the error topic, never kept in the record or the retained state.
            let message = "fleet command for counter '\(name)' refused: \(refusal)"
            logger.warning("\(message)", metadata: ["topic": "\(topic)"])
            _ = transport.publish("kioskd/\(kioskID)/error", Array(message.utf8), retain: false)
            return
        }
        apply(command, to: name) { [logger] result in
            if case .failure(let e) = result {
                logger.info("fleet command refused", metadata: ["id": "\(command.id)", "error": "\(e.message)"])
            }
        }
    }

    /// Applies `command` once (primary), as a stage of the command pipeline: the commands of a
    /// counter that arrive while its last change is being committed wait, and are then decided in
    /// order against the committed record and made durable together — the counter's value and
    /// the record in one commit — then shown and published; `done` gets the value after the
    /// command (after its commit). A known id changes nothing and publishes the state again with
    /// that id, so that its sender learns it was applied.
    public func apply(_ command: FleetCommand, to name: String, done: @escaping (Result<Int, KioskError>) -> Void) {
        guard records[name] != nil, owners[name]?.first != nil else {
            done(.failure(.notFound("counter '\(name)' is not shared by fleet group '\(settings.group)'")))
            return
        }
        if let refusal = Self.idProblem(command.id) {
            done(.failure(.outOfRange("fleet command for counter '\(name)' refused: \(refusal)")))
            return
        }
        waiting[name, default: []].append((command, done))
        decideWaiting(name)
    }

    /// The value `command` gives a counter at `old` by the counter's rules (its refusal otherwise).
    private func decide(_ command: FleetCommand, _ name: String, from old: Int) throws -> Int {
        guard let c = owners[name]?.first else { throw KioskError.notFound("counter '\(name)' is not shared") }
        let edit: CounterEdit
        switch command.op {
        case .inc: edit = .increment
        case .dec: edit = .decrement
        case .reset: edit = .reset
        case .set:
            guard let v = command.value else { throw KioskError.control("counter '\(name)': \"set\" needs a \"value\"") }
            edit = .set(v)
        }
        return try c.rules(of: name).apply(edit, to: old)
    }

    /// (Primary) decides the commands waiting for `name` and commits them together, unless a
    /// commit of `name` is in flight (then this runs again when it is done).
    private func decideWaiting(_ name: String) {
        guard !committing.contains(name), let batch = waiting.removeValue(forKey: name), !batch.isEmpty,
              var record = records[name] else { return }
        var set = applied[name] ?? []
        var chunks = idChunks[name] ?? IDChunks(limit: settings.appliedIdLimit)
        var touched = unwrittenChunks[name] ?? []
        let old = record.value
        var outcomes: [Result<Int, KioskError>] = []
        var isChange: [Bool] = []
        var again: [String] = []
        var refused: [String: String] = [:]
        for (command, _) in batch {
            if set.contains(command.id) {
                again.append(command.id)
                outcomes.append(.success(record.value)); isChange.append(false)
                continue
            }
            if let message = conflictMessage(name) {
                refused[command.id] = message
                outcomes.append(.failure(.state(message))); isChange.append(false)
                continue
            }
            do {
                let new = try decide(command, name, from: record.value)
                record.value = new
                record.seq += 1
                for gone in chunks.append(command.id) { set.remove(gone) }
                set.insert(command.id)
                touched.insert(chunks.current)
                outcomes.append(.success(new)); isChange.append(true)
            } catch {
                // Refused: nothing changed and the id is not kept (a resend is judged again).
                let e = error as? KioskError ?? .state("\(error)")
                refused[command.id] = e.message
                outcomes.append(.failure(e)); isChange.append(false)
            }
        }
        let answer = { [weak self] (results: [Result<Int, KioskError>], published: Bool) in
            if !published, let self, !again.isEmpty || !refused.isEmpty {
                self.publishState(name, extraIDs: again, refused: refused.isEmpty ? nil : refused)
            }
            for ((_, done), r) in zip(batch, results) { done(r) }
        }
        guard isChange.contains(true) else {
            answer(outcomes, false)
            return
        }
        record.ids = chunks.ids
        record.chunk = chunks.current
        let writes: [(key: String, value: String)]
        do {
            writes = try self.writes(name, record, chunks: touched.sorted().map { ($0, chunks.chunks[$0]) })
        } catch {
            answer(outcomes.enumerated().map { isChange[$0.offset] ? .failure(.state("\(error)")) : $0.element }, false)
            return
        }
        committing.insert(name)
        commit(writes) { [weak self] error in
            guard let self else { return }
            self.committing.remove(name)
            if let error {
                let e = KioskError.state("counter '\(name)': cannot save the fleet record: \(error); the value stays \(old)")
                self.logger.error("\(e.message)")
                answer(outcomes.enumerated().map { isChange[$0.offset] ? .failure(e) : $0.element }, false)
            } else {
                self.records[name] = record
                self.applied[name] = set
                self.idChunks[name] = chunks
                self.unwrittenChunks[name] = nil
                let at = self.now()
                for c in self.owners[name] ?? [] { c.showCommitted(name, value: record.value, up: record.value >= old, now: at) }
                self.publishState(name, extraIDs: again, refused: refused.isEmpty ? nil : refused)
                self.onChange?()
                answer(outcomes, true)
            }
            self.decideWaiting(name)
        }
    }


    private func publishState(_ name: String, extraIDs: [String] = [], refused: [String: String]? = nil) {
        guard let r = records[name] else { return }
        var ids = Array(r.ids.suffix(Self.idsPublished))
        for x in extraIDs where !ids.contains(x) { ids.append(x) }
        let s = FleetCounterState(value: r.value, seq: r.seq, ids: ids, refused: refused, primary: kioskID)
        guard let data = try? JSONEncoder().encode(s) else { return }
        if let refusal = transport.publish(stateTopic(name), Array(data), retain: true) {
            logger.warning("fleet state not published", metadata: ["counter": "\(name)", "reason": "\(refusal)"])
        }
    }

    /// Why a change of `name` is refused now (another primary in the group), nil when it is not.
    private func conflictMessage(_ name: String) -> String? {
        guard isPrimary, !otherPrimaries.isEmpty else { return nil }
        let who = otherPrimaries.map { "'\($0)'" }.joined(separator: ", ")
        return "group '\(settings.group)' has two primaries: kiosk \(who) publishes the group's states too (this kiosk is '\(kioskID)'); "
            + "the change of counter '\(name)' was refused; make one of them a follower (fleet.role); changes are taken again "
            + "\(PrimaryConflict.holdSeconds) s after the other primary's last state"
    }

    /// (Primary) a state on the group's topic: another primary's makes this one stop
    /// acknowledging; one in this primary's name that it did not publish (a seq beyond its own)
    /// is logged as forged.
    private func receivedPrimaryState(_ topic: String, _ payload: [UInt8]) {
        let name = String(topic.dropFirst(base.count))
        guard topic.hasPrefix(base), isShared(name),
              let s = try? JSONDecoder().decode(FleetCounterState.self, from: Data(payload)),
              let other = s.primary else { return }
        guard other != kioskID else {
            if let r = records[name], s.seq > r.seq {
                refusedState(name, s, "a state in this primary's name ('\(kioskID)') with seq \(s.seq) beyond its own \(r.seq) was published by another client "
                    + "(forged; followers with fleet.primary may show it until this primary's seq passes it; restrict the state topic with broker ACLs)")
            }
            return
        }
        conflict.saw(other, atNs: scheduler.now(.monotonic))
        updateConflict()
    }

    /// Re-reads who else is a primary; logs, tells the daemon and (while in conflict) republishes
    /// this primary's states so that the other sees it too.
    private func updateConflict() {
        let nowNs = scheduler.now(.monotonic)
        conflict.expire(atNs: nowNs)
        let others = conflict.others(atNs: nowNs)
        guard others != otherPrimaries else { return }
        let was = otherPrimaries
        otherPrimaries = others
        if others.isEmpty {
            logger.notice("fleet has one primary again: shared changes are taken", metadata: ["gone": "\(was.joined(separator: ","))"])
            if let t = conflictTimer { scheduler.cancel(t); conflictTimer = nil }
        } else {
            let who = others.map { "'\($0)'" }.joined(separator: ", ")
            let message = "two primaries in fleet group '\(settings.group)': kiosk \(who) publishes the group's states too; "
                + "shared changes are refused until only one primary remains (fleet.role)"
            logger.error("\(message)", metadata: ["kiosk": "\(kioskID)"])
            if was.isEmpty { for name in sharedCounters { publishState(name) } }
            armConflictTimer()
        }
        onConflict?()
    }

    private func armConflictTimer() {
        guard conflictTimer == nil else { return }
        conflictTimer = try? scheduler.schedule(after: PrimaryConflict.holdSeconds * 1_000_000_000 / 3) { [weak self] _ in
            guard let self else { return }
            self.conflictTimer = nil
            if !self.otherPrimaries.isEmpty {
                for name in self.sharedCounters { self.publishState(name) }
                self.armConflictTimer()
            }
            self.updateConflict()
        }
    }

    // MARK: follower

    private func receivedState(_ topic: String, _ payload: [UInt8]) {
        guard topic.hasPrefix(base) else { return }
        let name = String(topic.dropFirst(base.count))
        guard isShared(name), let s = try? JSONDecoder().decode(FleetCounterState.self, from: Data(payload)) else { return }
        receive(s, for: name)
    }

    /// A state from the primary: shown when `FleetStateRule` says so (newer, from the configured
    /// primary, a possible seq); the changes it contains (or refused) are then answered with the
    /// value shown. A refused state is logged (at most once a minute per counter) and ignored,
    /// its ids included. A state to show is kept (the counter's value and the record in one
    /// commit, off the loop) before it is shown and its ids are answered; states arriving while
    /// that commit is in flight are judged against it, and the newest of them is kept next.
    public func receive(_ s: FleetCounterState, for name: String) {
        guard let shownRecord = deciding[name] ?? records[name] else { return }
        let at = now()
        let shown = FleetStateRule.Shown(seq: shownRecord.seq, primary: shownRecord.primary,
                                         secondsAgo: shownRecord.takenNs.map { Double(at.realtimeNs - $0) / 1e9 })
        let verdict = FleetStateRule.judge(s, expected: settings.primary, shown: shown)
        if case .refused(let why) = verdict {
            refusedState(name, s, why)
            return
        }
        if committing.contains(name) {
            // Answered after the commit in flight (and the next one, if this state is newer).
            var later = laterAnswers[name] ?? ([], [:])
            later.ids += s.ids
            for (id, m) in s.refused ?? [:] { later.refused[id] = m }
            laterAnswers[name] = later
            if verdict == .show { nextState[name] = s; deciding[name] = Record(value: s.value, seq: s.seq, ids: [], primary: s.primary, takenNs: at.realtimeNs) }
            return
        }
        if verdict == .show {
            laterAnswers[name] = (s.ids, s.refused ?? [:])
            keepAndShow(s, for: name, at: at)
            return
        }
        answer(ids: s.ids, refused: s.refused ?? [:], for: name)
    }

    /// The writes of one commit of `name`: each owner's value, the record's head (its ids are
    /// kept in chunks, see `IDChunks`) and the given id chunks.
    private func writes(_ name: String, _ record: Record, chunks: [(index: Int, ids: [String])]) throws -> [(key: String, value: String)] {
        var head = record
        head.ids = []
        func json<T: Encodable>(_ v: T) throws -> String { String(decoding: try JSONEncoder().encode(v), as: UTF8.self) }
        return (owners[name] ?? []).map { ($0.stateKey(name), String(record.value)) }
            + [(Self.recordKey(group: settings.group, counter: name), try json(head))]
            + (try chunks.map { (Self.chunkKey(group: settings.group, counter: name, index: $0.index), try json($0.ids)) })
    }

    /// (Follower) commits the state's value and record, then shows the value and answers the
    /// ids waiting in `laterAnswers` (this state's and those of states received meanwhile); then
    /// the next state, if one came.
    private func keepAndShow(_ s: FleetCounterState, for name: String, at: WallTime) {
        let record = Record(value: s.value, seq: s.seq, ids: [], primary: s.primary, takenNs: at.realtimeNs)
        let old = records[name]?.value ?? s.value
        deciding[name] = record
        committing.insert(name)
        let writes: [(key: String, value: String)]
        do { writes = try self.writes(name, record, chunks: []) } catch {
            logger.error("cannot save the fleet's value", metadata: ["counter": "\(name)", "value": "\(s.value)", "error": "\(error)"])
            writes = []
        }
        commit(writes) { [weak self] error in
            guard let self else { return }
            self.committing.remove(name)
            if let error {
                // Shown all the same: the primary's value is the group's; it is kept at the next state.
                self.logger.error("cannot save the fleet's value", metadata: ["counter": "\(name)", "value": "\(s.value)", "error": "\(error)"])
            }
            self.records[name] = record
            let now = self.now()
            for c in self.owners[name] ?? [] { c.showCommitted(name, value: s.value, up: s.value >= old, now: now) }
            self.onChange?()
            if let next = self.nextState.removeValue(forKey: name) {
                self.keepAndShow(next, for: name, at: now)
            } else {
                self.deciding[name] = nil
                let pending = self.laterAnswers.removeValue(forKey: name) ?? ([], [:])
                self.answer(ids: pending.ids, refused: pending.refused, for: name)
            }
        }
    }

    /// Answers the changes a state contains (the value this kiosk shows now) or refused.
    private func answer(ids: [String], refused: [String: String], for name: String) {
        let value = currentValue(name) ?? records[name]?.value ?? 0
        for id in ids { confirm(id, .json(200, CounterAnswer(counter: name, value: value))) }
        for (id, message) in refused {
            let field = pending[id]?.command.op == .set ? "value" : "name"
            confirm(id, .from(KioskError.outOfRange(message), field: field))
        }
    }

    private func refusedState(_ name: String, _ s: FleetCounterState, _ why: String) {
        refusedStates += 1
        let nowNs = scheduler.now(.monotonic)
        if let last = refusalLog[name], nowNs - last.atNs < Self.refusalLogSeconds * 1_000_000_000 {
            refusalLog[name] = (last.atNs, last.suppressed + 1)
            return
        }
        let suppressed = refusalLog[name]?.suppressed ?? 0
        refusalLog[name] = (nowNs, 0)
        logger.error("fleet state ignored: \(why)", metadata: [
            "topic": "\(stateTopic(name))", "value": "\(s.value)", "seq": "\(s.seq)", "primary": "\(s.primary ?? "none")",
            "shown.seq": "\(records[name]?.seq ?? 0)", "refused.since.last.log": "\(suppressed)",
        ])
    }

    private func confirm(_ id: String, _ answer: ControlResponse) {
        guard let p = pending.removeValue(forKey: id) else { return }
        pendingOrder.removeAll { $0 == id }
        if let t = p.timer { scheduler.cancel(t) }
        p.reply?(answer)
        if pending.isEmpty, let t = retryTimer { scheduler.cancel(t); retryTimer = nil }
    }

    // MARK: counters

    private func info(_ name: String) -> CounterInfo? {
        owners[name]?.first?.counterInfo.first { $0.name == name }
    }

    private func currentValue(_ name: String) -> Int? { try? owners[name]?.first?.value(of: name) }

    private func show(_ name: String, _ value: Int) {
        let at = now()
        for c in owners[name] ?? [] where (try? c.value(of: name)) != value {
            do { try c.set(name, to: value, now: at) } catch {
                logger.error("cannot show the fleet's saved value", metadata: ["counter": "\(name)", "value": "\(value)", "error": "\(error)"])
            }
        }
    }
}
