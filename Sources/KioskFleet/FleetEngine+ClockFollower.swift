import FoundationEssentials
import KioskComponent
import KioskControl
import KioskCore
import Logging

/// A follower's game clocks: the primary's states judged (as counter states are), shown placed
/// by the realtime clock, kept, and the changes made here sent to the primary and answered
/// once a state containing them came back.
extension FleetEngine {
    // MARK: follower: states

    func receivedClockState(_ topic: String, _ payload: [UInt8]) {
        guard let scene = clockScene(topic), let s = try? JSONDecoder().decode(FleetClockState.self, from: Data(payload)) else { return }
        receiveClock(s, for: scene)
    }

    /// A state of `scene`'s clock from the primary: shown (and kept) when `FleetStateRule` says
    /// so; the changes it contains or refused are answered once it is kept.
    public func receiveClock(_ s: FleetClockState, for scene: String) {
        guard let clocks = clockBook.clocks else { return }
        let at = now()
        let old = clockBook.kept[scene] ?? .init()
        let shown = FleetStateRule.Shown(seq: old.seq, primary: old.primary, secondsAgo: old.takenNs.map { Double(at.realtimeNs - $0) / 1e9 })
        switch FleetStateRule.judge(seq: s.seq, primary: s.primary, expected: settings.primary, shown: shown) {
        case .refused(let why):
            refusedClockState(scene, s, why)
        case .older:
            // The state this follower kept before a restart (the broker's retained one): shown
            // again from the primary's record, so that it follows the realtime clock and the
            // time truth as before; nothing new to keep.
            if clockBook.records[scene] == nil, s.seq == old.seq, s.primary == old.primary {
                clockBook.records[scene] = s.clock
                clockBook.primarySynced[scene] = s.synced
                showFleetClock(scene)
            }
            answerClock(scene, ids: s.ids, refused: s.refused ?? [:])
        case .show:
            clockBook.records[scene] = s.clock
            clockBook.primarySynced[scene] = s.synced
            guard showFleetClock(scene) else { return }
            let k = FleetClockBook.Kept(seq: s.seq, ids: [], primary: s.primary, takenNs: at.realtimeNs)
            clockBook.kept[scene] = k
            // The clock as placed here, kept under this kiosk's own key (a restart resumes it).
            var also: [(key: String, value: String)] = []
            if let c = clocks.clock(scene, at), let data = try? JSONEncoder().encode(GameClockRecord(c, bootID: clocks.bootID)) {
                also.append((GameClockRecord.stateKey(scene: scene), String(decoding: data, as: UTF8.self)))
            }
            keepClockRecord(scene, k, also: also) { [weak self] in self?.answerClock(scene, ids: s.ids, refused: s.refused ?? [:]) }
        }
    }

    /// Shows the primary's last record of `scene` with the warning this kiosk's time truth asks for.
    @discardableResult
    func showFleetClock(_ scene: String) -> Bool {
        guard let clocks = clockBook.clocks, let record = clockBook.records[scene] else { return false }
        let shown = clocks.show(scene, record, clockWarning(scene)?.screen)
        if !shown { logger.warning("the primary's game clock cannot be shown here", metadata: ["scene": "\(scene)"]) }
        return shown
    }

    /// Why a follower shows no time on `scene`'s clock: its own system clock, or the primary's,
    /// is not synchronised (the primary's realtime instants cannot be placed here); the screen's
    /// short text and the status's. Nil on the primary and while both are synchronised.
    public func clockWarning(_ scene: String) -> (screen: String, status: String)? {
        guard !isPrimary, let clocks = clockBook.clocks else { return nil }
        if !clocks.synchronized() {
            return ("time not synchronised", "the system clock of this kiosk ('\(kioskID)') is not synchronised: the fleet's game clock of scene '\(scene)' "
                + "is not shown (it is placed by the realtime clock); enable systemd-timesyncd (timedatectl set-ntp true) or chrony")
        }
        if clockBook.primarySynced[scene] == false {
            return ("primary's time not synchronised", "the primary of group '\(settings.group)' says its system clock is not synchronised: "
                + "the fleet's game clock of scene '\(scene)' is not shown here")
        }
        return nil
    }

    /// Every clock's warning for the status (`warnings`).
    public var clockWarnings: [String] {
        guard let clocks = clockBook.clocks else { return [] }
        return clocks.scenes().compactMap { clockWarning($0)?.status }
    }

    /// This kiosk's system clock became synchronised, or stopped being: followers show their
    /// clocks again (with or without the warning); the primary publishes them again.
    public func timeSynchronizationChanged() {
        if isPrimary {
            // A new state (a seq beyond the last): followers take its `synced` and its instants.
            if let clocks = clockBook.clocks {
                let at = now()
                for scene in clocks.scenes() { if let c = clocks.clock(scene, at) { clockKept(scene, c, id: nil) } }
            }
            return
        }
        for scene in clockBook.records.keys.sorted() { showFleetClock(scene) }
        onChange?()
    }

    func refusedClockState(_ scene: String, _ s: FleetClockState, _ why: String) {
        noteRefused(&clockBook.refusalLog, "fleet clock state ignored: \(why)", [
            "topic": "\(clockStateTopic(scene))", "seq": "\(s.seq)", "primary": "\(s.primary ?? "none")",
            "shown.seq": "\(clockBook.kept[scene]?.seq ?? 0)",
        ])
    }

    /// Counts a refused state and logs `message`, at most once per `refusalLogSeconds` per
    /// `log` (the refusals in between are counted, and named in the next line).
    func noteRefused(_ log: inout (atNs: Int64, suppressed: Int)?, _ message: String, _ metadata: Logger.Metadata) {
        refusedStates += 1
        let nowNs = scheduler.now(.monotonic)
        if let last = log, nowNs - last.atNs < Self.refusalLogSeconds * 1_000_000_000 {
            log = (last.atNs, last.suppressed + 1)
            return
        }
        var m = metadata
        m["refused.since.last.log"] = "\(log?.suppressed ?? 0)"
        logger.error("\(message)", metadata: m)
        log = (nowNs, 0)
    }

    // MARK: follower: changes made here

    /// (Follower) sends a change to the primary; answered when a state containing it is kept
    /// here (200, the clock shown), refused by the primary (its reason), or after
    /// `ackTimeoutMs` (202, resent until confirmed). A toggle is sent as the start or stop it
    /// means here, so that a resend cannot toggle twice.
    func submitFollowerClock(_ intent: ClockIntent, scene: String, at: WallTime, reply: @escaping (ControlResponse) -> Void) {
        var intent = intent
        if intent == .toggle { intent = clockBook.clocks?.clock(scene, at)?.isRunning == true ? .stop : .start }
        guard clockBook.pending.count < settings.queueLimit else {
            return reply(.error(503, "the fleet queue is full: \(clockBook.pending.count) clock changes are waiting for the primary of group '\(settings.group)' "
                + "(fleet.queue_limit \(settings.queueLimit)); the change of the game clock of scene '\(scene)' was refused", field: "clock"))
        }
        clockBook.serial += 1
        let id = "\(kioskID)-\(boot)-c\(clockBook.serial)"
        var p = FleetClockBook.Pending(scene: scene, command: FleetClockCommand(id: id, intent: intent.words), reply: reply)
        p.timer = try? scheduler.schedule(after: Int64(settings.ackTimeoutMs) * 1_000_000) { [weak self] _ in self?.answerClockPending(id) }
        clockBook.pending[id] = p
        clockBook.order.append(id)
        sendClock(id)
        armClockRetry()
    }

    func sendClock(_ id: String) {
        guard var p = clockBook.pending[id], transport.isConnected else { return }
        let payload = (try? JSONEncoder().encode(p.command)).map { Array($0) } ?? []
        guard transport.publish(clockCommandTopic(p.scene), payload, retain: false) == nil else { return }
        p.sentNs = scheduler.now(.monotonic)
        clockBook.pending[id] = p
    }

    /// Resends the changes whose confirmation is overdue (the primary or the broker was down).
    func armClockRetry() {
        guard clockBook.retryTimer == nil, !clockBook.pending.isEmpty else { return }
        let interval = Int64(max(settings.ackTimeoutMs, 1000)) * 1_000_000
        clockBook.retryTimer = try? scheduler.schedule(after: interval) { [weak self] _ in
            guard let self else { return }
            self.clockBook.retryTimer = nil
            let cutoff = self.scheduler.now(.monotonic) - interval
            for id in self.clockBook.order where (self.clockBook.pending[id]?.sentNs ?? Int64.min) <= cutoff { self.sendClock(id) }
            self.armClockRetry()
        }
    }

    /// Every clock change not yet sent or confirmed, sent again (on connect).
    func resendClocks() { for id in clockBook.order { sendClock(id) } }

    func answerClockPending(_ id: String) {
        guard var p = clockBook.pending[id], let reply = p.reply else { return }
        p.reply = nil
        p.timer = nil
        clockBook.pending[id] = p
        reply(.json(202, FleetPendingAnswer(counter: "clock:\(p.scene)", id: id, message: "the change of the game clock of scene '\(p.scene)' "
            + "(\(p.command.intent.joined(separator: " "))) is queued: the primary of group '\(settings.group)' has not confirmed it within \(settings.ackTimeoutMs) ms "
            + "(broker \(transport.isConnected ? "connected" : "offline")); it is resent until the primary confirms it, then every kiosk shows it")))
    }

    /// Answers the changes a state of `scene` contains (the clock shown now) or refused.
    func answerClock(_ scene: String, ids: [String], refused: [String: String]) {
        let at = now()
        for id in ids {
            guard let c = clockBook.clocks?.clock(scene, at) else { break }
            confirmClock(id, .json(200, ClockAnswer(ok: true, scene: scene, clock: .init(c, at: at))))
        }
        for (id, message) in refused { confirmClock(id, .from(KioskError.outOfRange(message), field: "clock")) }
    }

    func confirmClock(_ id: String, _ answer: ControlResponse) {
        guard let p = clockBook.pending.removeValue(forKey: id) else { return }
        clockBook.order.removeAll { $0 == id }
        if let t = p.timer { scheduler.cancel(t) }
        p.reply?(answer)
        if clockBook.pending.isEmpty, let t = clockBook.retryTimer { scheduler.cancel(t); clockBook.retryTimer = nil }
    }

    /// Answers the clock changes still waiting (202) and stops their timers (`stop`).
    func stopClocks() {
        for p in clockBook.pending.values { if let t = p.timer { scheduler.cancel(t) } }
        for id in clockBook.order { answerClockPending(id) }
        if let t = clockBook.retryTimer { scheduler.cancel(t); clockBook.retryTimer = nil }
    }
}
