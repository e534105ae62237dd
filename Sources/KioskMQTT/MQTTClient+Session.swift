#if canImport(Glibc)
import Glibc
#endif
import CKioskLinux
import CMosquitto
import FoundationEssentials
import KioskCore
import KioskPosix
import Logging

/// The client's link to `MQTTSession`: events in (from the public API, libmosquitto's callbacks,
/// the loop's timers), actions carried out.
extension MQTTClient {
    // MARK: - The session's events and actions

    /// Hands `event` to the session and publishes its new figures to `view`; returns its actions.
    func events(_ event: MQTTSession.Event) -> [MQTTSession.Action] {
        let actions = session.handle(event)
        let s = session
        view.update {
            $0.state = s.state
            $0.counters = s.counters
            $0.queued = s.queue.count
            $0.protocolVersion = s.protocolVersion
            $0.readingPaused = s.readingPaused
            $0.duplicateWarning = s.duplicateWarning
            $0.connectedNs = s.connectedNs
        }
        return actions
    }

    func fire(_ event: MQTTSession.Event) {
        for action in events(event) { perform(action) }
    }

    /// A random fraction (0 ..< 1) for the retry delay's jitter.
    func jitter() -> Double { Double(random.next() >> 11) / Double(UInt64(1) << 53) }

    func perform(_ action: MQTTSession.Action) {
        switch action {
        case .setProtocol(let v):
            _ = mosquitto_int_option(handle.mosq, MOSQ_OPT_PROTOCOL_VERSION, Int32(v == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311))
        case .connect(let v, let full):
            connect(v5: v == .v5, full: full)
        case .scheduleRetry(let delay):
            retryTimer = try? loop.schedule(after: delay) { [unowned self] _ in
                self.retryTimer = nil
                self.fire(.retryTimerFired(now: self.loop.now(.monotonic)))
            }
        case .cancelRetry:
            if let t = retryTimer { loop.cancel(t); retryTimer = nil }
        case .armConnectTimeout(let delay):
            if let t = connectTimer { loop.cancel(t) }
            connectTimer = try? loop.schedule(after: delay) { [unowned self] _ in
                self.connectTimer = nil
                guard self.socketFD >= 0 else { return }
                self.fire(.connectTimeoutFired)
            }
        case .abortConnection:
            // Make the socket fail: the next read reports the error and libmosquitto closes it.
            if socketFD >= 0 { shutdown(socketFD, Int32(SHUT_RDWR)) }
        case .send(let p):
            _ = send(p)
        case .subscribe(let filter, let qos):
            _ = mosquitto_subscribe(handle.mosq, nil, filter, Int32(qos))
        case .disconnect:
            _ = mosquitto_disconnect(handle.mosq)
            updateInterest()
        case .closeSocket:
            if !connectInFlight { closeSocket() }
        case .complete(let id, let result):
            completions.removeValue(forKey: id)?(result)
        case .deliver:
            break
        case .readingPaused:
            updateInterest()
        case .stateChanged(let s):
            onStateChange?(s)
        case .log(let level, let message, let metadata):
            logger.log(level: level, "\(message)", metadata: metadata.isEmpty ? nil : metadata)
        case .failInFlight(let reason):
            for (_, c) in inFlight { c.completion(.dropped(reason)) }
            inFlight.removeAll()
        case .stopFinished:
            let c = stopCompletion
            stopCompletion = nil
            c?()
        }
    }

    // MARK: - libmosquitto callbacks (on the loop's thread, inside loop_read/write/misc)

    func didConnect(_ rc: Int32) {
        if let t = connectTimer { loop.cancel(t); connectTimer = nil }
        // MQTT 5 reason codes are 128 and above; 3.1.1's CONNACK codes 1 to 5.
        let text = rc == 0 ? "" : rc >= 128 ? String(cString: mosquitto_reason_string(rc)) : String(cString: mosquitto_connack_string(rc))
        fire(.connack(code: rc, text: text, now: loop.now(.monotonic)))
    }

    func didDisconnect(_ rc: Int32) {
        // Reported through ioResult, which knows why; an MQTT 5 broker's DISCONNECT gives its
        // reason code here (142: another client took the session over), kept for the report.
        if rc != 0 { fire(.brokerDisconnect(code: rc, text: String(cString: mosquitto_reason_string(rc)))) }
        if session.stopping && rc == 0 {
            // Clean DISCONNECT written: libmosquitto has closed the socket.
            loop.deferToEndOfIteration { [weak self] in self?.fire(.disconnectWritten) }
        }
    }

    func didPublish(_ mid: Int32) {
        if let s = sending, mid == midSlot.pointee {
            sending = nil
            s.completion(s.qos == 0 ? .sent : .acknowledged)
            return
        }
        guard let c = inFlight.removeValue(forKey: mid) else { return }
        c.completion(c.qos == 0 ? .sent : .acknowledged)
    }

    func didReceive(_ m: mosquitto_message) {
        let topic = String(cString: m.topic)
        // The session drops a message larger than the limit before its payload is copied.
        let actions = events(.received(topic: topic, bytes: Int(m.payloadlen), now: loop.now(.monotonic)))
        actions.forEach(perform)
        guard actions.contains(.deliver) else { return }
        let payload = m.payloadlen > 0 && m.payload != nil
            ? Array(UnsafeRawBufferPointer(start: m.payload, count: Int(m.payloadlen))) : []
        let msg = Message(topic: topic, payload: payload, qos: Int(m.qos), retained: m.retain)
        for s in handlers {
            var match = false
            if mosquitto_topic_matches_sub(s.filter, topic, &match) == MOSQ_ERR_SUCCESS.rawValue, match {
                s.handler(msg)
            }
        }
    }
}
