import FoundationEssentials
import KioskControl
import KioskCore
import Logging

/// The primary's part: commands applied once, committed, published; another primary seen.
extension FleetEngine {
    // MARK: primary

    func receivedCommand(_ topic: String, _ payload: [UInt8]) {
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
        guard records[name] != nil, counter(name) != nil else {
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
    func decide(_ command: FleetCommand, _ name: String, from old: Int) throws -> Int {
        guard let c = counter(name) else {
            throw KioskError.notFound("counter '\(name)': no counter scene has it since the last reload; the fleet keeps its value \(old)")
        }
        return try c.rules.apply(try command.edit(counter: name), to: old)
    }

    /// (Primary) decides the commands waiting for `name` and commits them together, unless a
    /// commit of `name` is in flight (then this runs again when it is done).
    func decideWaiting(_ name: String) {
        guard !committing.contains(name), let batch = waiting.removeValue(forKey: name), !batch.isEmpty,
              var record = records[name] else { return }
        var ids = appliedIDs(name)
        let old = record.value
        var outcomes: [Result<Int, KioskError>] = []
        var isChange: [Bool] = []
        var again: [String] = []
        var refused: [String: String] = [:]
        for (command, _) in batch {
            if ids.set.contains(command.id) {
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
                ids.add(command.id)
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
        do {
            try keep(name, record, ids: ids, shownFrom: old,
                     extraIDs: again, refused: refused.isEmpty ? nil : refused) { [weak self] error in
                if let error {
                    let e = KioskError.state("counter '\(name)': cannot save the fleet record: \(error); the value stays \(old)")
                    self?.logger.error("\(e.message)")
                    answer(outcomes.enumerated().map { isChange[$0.offset] ? .failure(e) : $0.element }, false)
                } else {
                    self?.changedSinceStart.insert(name)
                    answer(outcomes, true)
                }
            }
        } catch {
            answer(outcomes.enumerated().map { isChange[$0.offset] ? .failure(.state("\(error)")) : $0.element }, false)
        }
    }

    /// (Primary) a counter's applied ids as they will be kept with its next record: the ids, their
    /// chunks and the chunks to write (`keep`).
    struct AppliedIDs {
        var set: Set<String>
        var chunks: IDChunks
        var touched: Set<Int>
        /// Keeps `id`: in the current chunk, forgetting the oldest ids when it moves on to the next.
        mutating func add(_ id: String) {
            for gone in chunks.append(id) { set.remove(gone) }
            set.insert(id)
            touched.insert(chunks.current)
        }
    }

    /// (Primary) `name`'s applied ids as kept now, and the chunks not yet written.
    func appliedIDs(_ name: String) -> AppliedIDs {
        AppliedIDs(set: applied[name] ?? [], chunks: idChunks[name] ?? IDChunks(limit: settings.appliedIdLimit),
                   touched: unwrittenChunks[name] ?? [])
    }

    /// (Primary) writes `record` (with the id chunks `ids` touched) in one commit; once it is kept,
    /// it becomes this primary's record with its applied ids, is shown (rolling up when it is not
    /// below `old`) and published with `extraIDs`/`refused`, and `done` gets nil; a failed commit
    /// changes nothing and `done` gets its error. The commands waiting for `name` are decided
    /// after either. Throws (nothing committed) when the writes cannot be made.
    func keep(_ name: String, _ record: Record, ids: AppliedIDs, shownFrom old: Int,
              extraIDs: [String] = [], refused: [String: String]? = nil, done: @escaping (Error?) -> Void) throws {
        var record = record
        let chunks = ids.chunks
        record.ids = chunks.ids
        record.chunk = chunks.current
        let writes = try self.writes(name, record, chunks: ids.touched.sorted().map { ($0, chunks.chunks[$0]) })
        committing.insert(name)
        commit(writes) { [weak self] error in
            guard let self else { return }
            self.committing.remove(name)
            if error == nil {
                self.records[name] = record
                self.applied[name] = ids.set
                self.idChunks[name] = chunks
                self.unwrittenChunks[name] = nil
                self.shown(FleetShown(counter: name, value: record.value, up: record.value >= old, at: self.now()))
                self.publishState(name, extraIDs: extraIDs, refused: refused)
                self.onChange?()
            }
            done(error)
            self.decideWaiting(name)
        }
    }


    func publishState(_ name: String, extraIDs: [String] = [], refused: [String: String]? = nil) {
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
    func conflictMessage(_ name: String) -> String? {
        guard isPrimary, !otherPrimaries.isEmpty else { return nil }
        let who = otherPrimaries.map { "'\($0)'" }.joined(separator: ", ")
        return "group '\(settings.group)' has two primaries: kiosk \(who) publishes the group's states too (this kiosk is '\(kioskID)'); "
            + "the change of counter '\(name)' was refused; make one of them a follower (fleet.role); changes are taken again "
            + "\(PrimaryConflict.holdSeconds) s after the other primary's last state"
    }

    /// (Primary) a state on the group's topic: another primary's makes this one stop
    /// acknowledging. One in this primary's name with a seq beyond its own is the group's state
    /// this primary kept before its record was lost or restored from an older backup when the
    /// broker hands it over as retained at the first connection, before any change here: taken
    /// over (`takeOver`); published later by another client it is logged as forged.
    func receivedPrimaryState(_ topic: String, _ payload: [UInt8], retained: Bool) {
        let name = String(topic.dropFirst(base.count))
        guard topic.hasPrefix(base), isShared(name),
              let s = try? JSONDecoder().decode(FleetCounterState.self, from: Data(payload)),
              let other = s.primary else { return }
        guard other != kioskID else {
            if let r = records[name], s.seq > r.seq {
                if retained, connects <= 1, !changedSinceStart.contains(name), !committing.contains(name), s.seq <= FleetStateRule.maxSeq,
                   let rules = counter(name)?.rules, (rules.minimum...rules.maximum).contains(s.value) {
                    takeOver(name, s, from: r)
                    return
                }
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
    func updateConflict() {
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
            if was.isEmpty {
                for name in sharedCounters { publishState(name) }
                publishClocks()
            }
            armConflictTimer()
        }
        onConflict?()
    }

    func armConflictTimer() {
        guard conflictTimer == nil else { return }
        conflictTimer = try? scheduler.schedule(after: PrimaryConflict.holdSeconds * 1_000_000_000 / 3) { [weak self] _ in
            guard let self else { return }
            self.conflictTimer = nil
            if !self.otherPrimaries.isEmpty {
                for name in self.sharedCounters { self.publishState(name) }
                self.publishClocks()
                self.armConflictTimer()
            }
            self.updateConflict()
        }
    }

    /// (Primary) takes over the group's retained state in this primary's name: its value, its
    /// seq (the followers show it already; the next change is seq + 1) and its ids (a resend of
    /// one of them changes nothing), kept in one commit, then shown and published. Logged.
    func takeOver(_ name: String, _ s: FleetCounterState, from old: Record) {
        var record = old
        record.value = s.value
        record.seq = s.seq
        var ids = appliedIDs(name)
        for id in s.ids where !ids.set.contains(id) && Self.idProblem(id) == nil { ids.add(id) }
        let logger = self.logger
        logger.notice("fleet record is behind the group's retained state in this primary's name (state folder wiped or restored from an older backup): taking over its value and seq",
                      metadata: ["counter": "\(name)", "kept.seq": "\(old.seq)", "kept.value": "\(old.value)", "seq": "\(s.seq)", "value": "\(s.value)"])
        do {
            try keep(name, record, ids: ids, shownFrom: old.value) { error in
                guard let error else { return }
                logger.error("cannot keep the group's retained state; the record stays as it was",
                             metadata: ["counter": "\(name)", "seq": "\(old.seq)", "value": "\(old.value)", "error": "\(error)"])
            }
        } catch {
            logger.error("cannot keep the group's retained state", metadata: ["counter": "\(name)", "error": "\(error)"])
        }
    }
}
