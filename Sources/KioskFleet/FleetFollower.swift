import FoundationEssentials
import KioskControl
import KioskCore
import Logging

/// The follower's part: the primary's states judged, kept and shown; changes answered.
extension FleetEngine {
    // MARK: follower

    func receivedState(_ topic: String, _ payload: [UInt8]) {
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
        answer(ids: s.ids, refused: s.refused ?? [:], for: name, olderSeq: s.seq)
    }

    /// The writes of one commit of `name`: the value under each scene's key, the record's head (its ids are
    /// kept in chunks, see `IDChunks`) and the given id chunks.
    func writes(_ name: String, _ record: Record, chunks: [(index: Int, ids: [String])]) throws -> [(key: String, value: String)] {
        var head = record
        head.ids = []
        func json<T: Encodable>(_ v: T) throws -> String { String(decoding: try JSONEncoder().encode(v), as: UTF8.self) }
        return (counter(name)?.keys ?? []).map { ($0, String(record.value)) }
            + [(Self.recordKey(group: settings.group, counter: name), try json(head))]
            + (try chunks.map { (Self.chunkKey(group: settings.group, counter: name, index: $0.index), try json($0.ids)) })
    }

    /// (Follower) commits the state's value and record, then shows the value and answers the
    /// ids waiting in `laterAnswers` (this state's and those of states received meanwhile); then
    /// the next state, if one came.
    func keepAndShow(_ s: FleetCounterState, for name: String, at: WallTime) {
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
            self.shown(FleetShown(counter: name, value: s.value, up: s.value >= old, at: now))
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
    /// `olderSeq`: the seq of a state older than the one shown. A change made here once the
    /// shown seq was already that far cannot be in what is shown (the primary's seq went back:
    /// its record was lost): it is not answered 200, and stays unconfirmed (202, resent).
    func answer(ids: [String], refused: [String: String], for name: String, olderSeq: Int? = nil) {
        let value = currentValue(name) ?? records[name]?.value ?? 0
        for id in ids {
            if let older = olderSeq, let p = pending[id], p.shownSeq >= older {
                refusedState(name, FleetCounterState(value: value, seq: older, ids: [id], primary: records[name]?.primary),
                             "the primary's state with seq \(older) names change '\(id)', made here when seq \(p.shownSeq) was shown: the primary's seq went back "
                                + "(its state folder lost?); the change is not shown here and stays unconfirmed until a state that can be shown contains it")
                continue
            }
            confirm(id, .json(200, CounterAnswer(counter: name, value: value)))
        }
        for (id, message) in refused {
            let field = pending[id]?.command.op == .set ? "value" : "name"
            confirm(id, .from(KioskError.outOfRange(message), field: field))
        }
    }

    func refusedState(_ name: String, _ s: FleetCounterState, _ why: String) {
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

    func confirm(_ id: String, _ answer: ControlResponse) {
        guard let p = pending.removeValue(forKey: id) else { return }
        pendingOrder.removeAll { $0 == id }
        if let t = p.timer { scheduler.cancel(t) }
        p.reply?(answer)
        if pending.isEmpty, let t = retryTimer { scheduler.cancel(t); retryTimer = nil }
    }

    // MARK: counters

    func currentValue(_ name: String) -> Int? { counter(name)?.value }

    /// Shows the value kept in the fleet's record for `name` (its commit wrote the scenes' own
    /// keys too).
    func show(_ name: String, _ value: Int) {
        guard let current = currentValue(name), current != value else { return }
        shown(FleetShown(counter: name, value: value, up: value >= current, at: now()))
    }

    /// A reload made new scenes: they show the value kept here for each shared counter (what
    /// they read from the state directory may be older than a commit still in flight).
    public func scenesReplaced() {
        let at = now()
        for name in sharedCounters {
            guard let r = records[name], currentValue(name) != r.value else { continue }
            shown(FleetShown(counter: name, value: r.value, up: true, at: at))
        }
        // A follower's new scenes show the primary's clocks again (placed by the realtime clock).
        if !isPrimary { for scene in clockBook.records.keys.sorted() { showFleetClock(scene) } }
        onChange?()
    }
}
