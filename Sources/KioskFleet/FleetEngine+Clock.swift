import FoundationEssentials
import KioskComponent
import KioskControl
import KioskCore
import Logging

/// The group's game clocks (docs/scoreboard.md, "One clock on every screen"): the primary
/// decides and keeps every change of a clock (its own and those its followers send), then
/// publishes the clock's record with a seq; followers show the primary's record placed by
/// the realtime clock, keep it, and send their changes to the primary.
extension FleetEngine {
    var clockBase: String { "kioskd/group/\(settings.group)/clock/" }
    public func clockStateTopic(_ scene: String) -> String { clockBase + scene }
    public func clockCommandTopic(_ scene: String) -> String { clockBase + scene + "/cmd" }
    static func clockKeptKey(group: String, scene: String) -> String { StateKey.join(["fleet", group, "clock", scene]) }

    /// Whether the group shares this kiosk's game clocks (`SharedClocks` given at start).
    public var sharesClocks: Bool { clockBook.clocks != nil }

    /// The clocks' part of `start`: the kept seqs read, the topics subscribed, and (primary)
    /// every clock published.
    func startClocks() {
        guard let clocks = clockBook.clocks else { return }
        for scene in clocks.scenes() {
            let key = Self.clockKeptKey(group: settings.group, scene: scene)
            guard let raw = state.load(key) else { continue }
            if let k = try? JSONDecoder().decode(FleetClockBook.Kept.self, from: Data(raw.utf8)), k.seq >= 0, k.seq <= FleetStateRule.maxSeq {
                clockBook.kept[scene] = k
            } else {
                logger.error("fleet clock record is not readable; starting from seq 0", metadata: ["state.key": "\(key)", "stored": "\(raw.prefix(200))"])
            }
        }
        if isPrimary {
            transport.subscribe(clockBase + "+/cmd") { [weak self] topic, payload, _ in self?.receivedClockCommand(topic, payload) }
            transport.subscribe(clockBase + "+") { [weak self] topic, payload, retained in self?.receivedPrimaryClockState(topic, payload, retained: retained) }
            publishClocks()
        } else {
            transport.subscribe(clockBase + "+") { [weak self] topic, payload, _ in self?.receivedClockState(topic, payload) }
        }
    }

    /// The scene a clock topic names (nil: not one of this kiosk's clocks).
    func clockScene(_ topic: String, suffix: String = "") -> String? {
        guard topic.hasPrefix(clockBase), topic.hasSuffix(suffix), let clocks = clockBook.clocks else { return nil }
        let scene = String(topic.dropFirst(clockBase.count).dropLast(suffix.count))
        return clocks.scenes().contains(scene) ? scene : nil
    }

    /// A change of a game clock made on this kiosk: decided and kept here on the primary (then
    /// published), sent to the primary from a follower (`submitFollowerClock`).
    public func submitClock(_ intent: ClockIntent, scene: String, at: WallTime, reply: @escaping (ControlResponse) -> Void) {
        guard isPrimary else { return submitFollowerClock(intent, scene: scene, at: at, reply: reply) }
        guard let clocks = clockBook.clocks else { return reply(.error(404, "the fleet does not share game clocks", field: "scene")) }
        if let m = clockConflictMessage(scene) { return reply(.error(409, m, field: "clock")) }
        clocks.decide(intent, scene, at) { [weak self] result in
            switch result {
            case .success(let c):
                self?.clockKept(scene, c, id: nil)
                reply(.json(200, ClockAnswer(ok: true, scene: scene, clock: .init(c, at: self?.now() ?? at))))
            case .failure(let e):
                reply(.from(e, field: "clock"))
            }
        }
    }

    /// Why a clock change is refused now on the primary (another primary in the group).
    func clockConflictMessage(_ scene: String) -> String? {
        guard !otherPrimaries.isEmpty else { return nil }
        return "group '\(settings.group)' has two primaries: kiosk \(otherPrimaries.map { "'\($0)'" }.joined(separator: ", ")) publishes the group's states too "
            + "(this kiosk is '\(kioskID)'); the change of the game clock of scene '\(scene)' was refused; make one of them a follower (fleet.role)"
    }

    // MARK: primary

    /// (Primary) a change of `scene`'s clock was kept: the next seq (and the command's id) kept,
    /// then the clock published.
    func clockKept(_ scene: String, _ clock: GameClock, id: String?, refused: [String: String]? = nil) {
        var k = clockBook.kept[scene] ?? .init()
        k.seq += 1
        if let id { k.ids = Array((k.ids + [id]).suffix(FleetClockBook.idLimit)) }
        clockBook.kept[scene] = k
        keepClockRecord(scene, k, also: []) { [weak self] in self?.publishClock(scene, refused: refused) }
    }

    /// Commits `scene`'s fleet clock record with `also`, then `then` on the loop (logged, and
    /// `then` called all the same, when the commit fails: the clock itself is kept).
    func keepClockRecord(_ scene: String, _ k: FleetClockBook.Kept, also: [(key: String, value: String)], then: @escaping () -> Void) {
        let key = Self.clockKeptKey(group: settings.group, scene: scene)
        let value = (try? JSONEncoder().encode(k)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        commit(also + [(key, value)]) { [weak self] error in
            if let error { self?.logger.error("cannot save the fleet clock record", metadata: ["scene": "\(scene)", "seq": "\(k.seq)", "error": "\(error)"]) }
            then()
        }
    }

    /// (Primary) publishes every clock (at start, on every connect, when this kiosk's clock's
    /// synchronisation changed, and while another primary is seen).
    public func publishClocks() {
        guard isPrimary, let clocks = clockBook.clocks else { return }
        for scene in clocks.scenes() { publishClock(scene) }
    }

    /// (Primary) publishes `scene`'s clock as it is now, retained, with its seq and latest ids.
    func publishClock(_ scene: String, extraIDs: [String] = [], refused: [String: String]? = nil) {
        guard let clocks = clockBook.clocks else { return }
        let at = now()
        guard let c = clocks.clock(scene, at) else { return }
        let k = clockBook.kept[scene] ?? .init()
        var ids = k.ids
        for x in extraIDs where !ids.contains(x) { ids.append(x) }
        let s = FleetClockState(primary: kioskID, seq: k.seq, ids: ids, refused: refused, synced: clocks.synchronized(),
                                clock: GameClockRecord(c, bootID: clocks.bootID, wallAt: at))
        guard let data = try? JSONEncoder().encode(s) else { return }
        if let refusal = transport.publish(clockStateTopic(scene), Array(data), retain: true) {
            logger.warning("fleet clock not published", metadata: ["scene": "\(scene)", "reason": "\(refusal)"])
        }
    }

    /// (Primary) a follower's change: decided at the instant it arrived here, kept, published
    /// with its id (a known id changes nothing and is published again; a refused one is
    /// published with the reason).
    func receivedClockCommand(_ topic: String, _ payload: [UInt8]) {
        guard let scene = clockScene(topic, suffix: "/cmd"), let clocks = clockBook.clocks else {
            logger.warning("fleet clock command for a scene without a game clock here ignored", metadata: ["topic": "\(topic.prefix(200))"])
            return
        }
        guard let command = try? JSONDecoder().decode(FleetClockCommand.self, from: Data(payload)), Self.idProblem(command.id) == nil else {
            logger.warning("fleet clock command ignored: expected {\"id\": \"…\" (1…\(Self.maxIDBytes) bytes), \"intent\": [\"start\"]}",
                           metadata: ["topic": "\(topic)", "payload": "\(String(decoding: payload.prefix(200), as: UTF8.self))"])
            return
        }
        if clockBook.kept[scene]?.ids.contains(command.id) == true { return publishClock(scene, extraIDs: [command.id]) }
        let refuse = { [weak self] (message: String) in
            self?.logger.info("fleet clock command refused", metadata: ["id": "\(command.id)", "error": "\(message)"])
            self?.publishClock(scene, refused: [command.id: message])
        }
        if let m = clockConflictMessage(scene) { return refuse(m) }
        let intent: ClockIntent
        do { intent = try ClockIntent.parse(command.intent) } catch { return refuse("\(error)") }
        clocks.decide(intent, scene, now()) { [weak self] result in
            switch result {
            case .success(let c): self?.clockKept(scene, c, id: command.id)
            case .failure(let e): refuse(e.message)
            }
        }
    }

    /// (Primary) a clock state on the group's topic: another primary's is a conflict; one in this
    /// primary's name with a seq beyond its own, retained at the first connection, is the
    /// group's state from before this primary's record was lost: its seq is taken over.
    func receivedPrimaryClockState(_ topic: String, _ payload: [UInt8], retained: Bool) {
        guard let scene = clockScene(topic), let s = try? JSONDecoder().decode(FleetClockState.self, from: Data(payload)),
              let other = s.primary else { return }
        guard other == kioskID else {
            conflict.saw(other, atNs: scheduler.now(.monotonic))
            updateConflict()
            return
        }
        let own = clockBook.kept[scene] ?? .init()
        guard s.seq > own.seq, retained, connects <= 1, s.seq <= FleetStateRule.maxSeq else { return }
        logger.notice("fleet clock record is behind the group's retained state in this primary's name: its seq continues from there",
                      metadata: ["scene": "\(scene)", "kept.seq": "\(own.seq)", "seq": "\(s.seq)"])
        var k = own
        k.seq = s.seq + 1
        clockBook.kept[scene] = k
        keepClockRecord(scene, k, also: []) { [weak self] in self?.publishClock(scene) }
    }
}
