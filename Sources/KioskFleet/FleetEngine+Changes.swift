import FoundationEssentials
import KioskControl
import KioskCore
import KioskState
import Logging

/// Changes made on this kiosk to shared counters: sent to the group, answered when the primary has kept them.
extension FleetEngine {
    // MARK: changes made here

    /// A change of a shared counter made on this kiosk. The primary applies it at once; a
    /// follower sends it to the primary and answers when the primary's state containing it has
    /// come back (200), when the primary refused it (its error), or after `ackTimeoutMs` with a
    /// pending answer (202). `reply` nil: nobody waits.
    /// `id`: the change's own id (an MQTT command's), made the group's command id with this
    /// kiosk's id before it: a change submitted again with it changes nothing more.
    public func submit(_ counter: String, _ edit: CounterEdit, id: String? = nil, reply: ((ControlResponse) -> Void)?) {
        let field = edit.field
        let op = edit.fleetOp
        serial += 1
        let command = FleetCommand(edit, id: id.map { "\(kioskID)/\($0)" } ?? "\(kioskID)-\(boot)-\(serial)")
        if id != nil, let problem = Self.idProblem(command.id) {
            reply?(.error(400, "the change of counter '\(counter)' was refused: its id with this kiosk's id (\"\(command.id.prefix(80))\") is not a fleet command id: \(problem)", field: "id"))
            return
        }
        if !isPrimary, pending[command.id] != nil {
            // Submitted again (an MQTT redelivery) while the first is on its way: not sent twice.
            reply?(.json(202, FleetPendingAnswer(counter: counter, id: command.id, message: "the change with id '\(command.id)' is already on its way to the primary")))
            return
        }
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
        if case .set(let v) = edit, let c = self.counter(counter), !(c.rules.minimum...c.rules.maximum).contains(v) {
            let e = v > c.rules.maximum
                ? KioskError.outOfRange("counter '\(counter)': \(v) is above the largest value \(c.rules.maximum) that the counter can show; the value stays \(c.value)")
                : KioskError.outOfRange("counter '\(counter)': \(v) is below the minimum \(c.rules.minimum); the value stays \(c.value)")
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
        p.shownSeq = (deciding[counter] ?? records[counter])?.seq ?? 0
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
    func answerPending(_ id: String) {
        guard var p = pending[id], let reply = p.reply else { return }
        p.reply = nil
        p.timer = nil
        pending[id] = p
        let message = "the change of counter '\(p.counter)' (\(p.command.op.rawValue)) is queued: the primary of group '\(settings.group)' has not confirmed it within \(settings.ackTimeoutMs) ms "
            + "(broker \(transport.isConnected ? "connected" : "offline")); it is resent until the primary confirms it, then every kiosk shows it"
        reply(.json(202, FleetPendingAnswer(counter: p.counter, id: id, message: message)))
    }

    func send(_ id: String) {
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
    func armRetry() {
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
}
