import Logging

/// The MQTT client's decisions as a value driven by events: connection state, the protocol
/// version and the fallback to 3.1.1, the reconnect backoff and takeover detection, what is
/// (re)subscribed and published on connect, the outgoing queue and its bound, pausing reading
/// while too many received commands wait, the clean stop, and what is logged when. No clock,
/// socket, thread or random source of its own: every time and random fraction comes with the
/// event, and every effect is an `Action` that `MQTTClient` carries out on libmosquitto and its
/// loop (which turns libmosquitto's callbacks and the loop's timers into events).
public struct MQTTSession: Sendable {
    /// Received commands that may wait for the disk before reading from the broker pauses.
    public static let maxWaitingCommands = 10_000
    /// Reading resumes once no more than this many commands wait.
    public static let resumeWaitingCommands = maxWaitingCommands / 2
    /// The shortest time between two log lines about oversized messages, or about paused reading.
    static let repeatedLogNs: Int64 = 60_000_000_000

    public let config: MQTTConfig
    public private(set) var state: State = .idle
    public private(set) var counters = Counters()
    /// The MQTT version of the current (or next) connection: `config.protocolVersion`, or 3.1.1
    /// after the broker refused MQTT 5.
    public private(set) var protocolVersion: MQTTConfig.ProtocolVersion
    /// Monotonic times (ns) of the last 64 connect attempts, oldest first.
    public private(set) var attemptTimes: [Int64] = []
    /// Messages waiting for a connection.
    public private(set) var queue: [Outgoing] = []
    /// Subscriptions, renewed on every connect.
    public private(set) var subscriptions: [(filter: String, qos: Int)] = []
    /// True while the broker's socket is not read.
    public private(set) var readingPaused = false
    /// When the current connection's CONNACK came (monotonic ns); nil while not connected.
    public private(set) var connectedNs: Int64?
    /// Set while another client with this client id is suspected (`TakeoverDetector`).
    public private(set) var duplicateWarning: String?
    public private(set) var takeover = TakeoverDetector()
    /// Failed attempts or lost connections since the last accepted CONNACK.
    public private(set) var failures = 0
    /// True while a retry is scheduled.
    public private(set) var retryScheduled = false
    /// The next attempt must be a full connect: the first one, and after a switch to 3.1.1.
    public private(set) var needsFullConnect = true
    public private(set) var stopping = false
    /// Set when the broker refused MQTT 5: the next attempt speaks 3.1.1.
    private var fallBackToV311 = false
    private var refusal: String?
    /// Why the connection is being torn down, reported instead of libmosquitto's generic error.
    private var pendingReason: String?
    /// The reason of an MQTT 5 broker's DISCONNECT on this connection.
    private var disconnectReason: (code: Int32, text: String)?
    private var lastLogged: State = .idle
    private var lastRefusalLogged: String?
    private var oversizedLoggedNs: Int64?
    private var pauseLoggedNs: Int64?

    public init(config: MQTTConfig) {
        self.config = config
        protocolVersion = config.protocolVersion
    }

    /// The status warning `duplicateWarning` at `now`: cleared by a connection that outlasts the
    /// other client's longest retry delay.
    public func duplicateIDWarning(now: Int64) -> String? {
        Self.liveWarning(duplicateWarning, connectedNs: connectedNs, now: now, backoffMax: config.backoffMax)
    }

    /// `warning` unless the connection accepted at `connectedNs` has outlived the other client's
    /// longest retry delay (`backoffMax`) by `now`.
    static func liveWarning(_ warning: String?, connectedNs: Int64?, now: Int64, backoffMax: Int64) -> String? {
        guard let w = warning else { return nil }
        if let at = connectedNs, now - at >= backoffMax + TakeoverDetector.shortSessionNs { return nil }
        return w
    }

    public mutating func handle(_ event: Event) -> [Action] {
        var out: [Action] = []
        switch event {
        case .start(let now):
            if state == .idle { attempt(now, &out) }
        case .retryTimerFired(let now):
            retryScheduled = false
            attempt(now, &out)
        case .connectReturned(let failure, let stored, let now, let jitter):
            if stored { needsFullConnect = false }
            if stopping { return [.closeSocket] }
            if let failure { connectionLost(failure, now: now, jitter: jitter, &out) }
        case .socketOpened:
            out.append(.armConnectTimeout(after: config.connectTimeout))
        case .connectTimeoutFired:
            guard state == .connecting else { break }
            pendingReason = "no CONNACK within \(Self.seconds(config.connectTimeout)) s"
            out.append(.abortConnection)
        case .connack(let code, let text, let now):
            connack(code, text, now, &out)
        case .brokerDisconnect(let code, let text):
            if !stopping && code != 0 { disconnectReason = (code, text) }
        case .closed(let error, let now, let jitter):
            if stopping {
                if error != nil { out += [.closeSocket]; finishStop(&out) }
                break
            }
            let reason = pendingReason ?? error
                ?? disconnectReason.map { "the broker sent DISCONNECT: \($0.text) (reason code \($0.code))" }
                ?? "the broker closed the connection"
            pendingReason = nil
            disconnectReason = nil
            out.append(.closeSocket)
            if case .refused = state { scheduleRetry(jitter: jitter, &out) } else { connectionLost(reason, now: now, jitter: jitter, &out) }
        case .disconnectWritten:
            if stopping && state != .stopped { out.append(.closeSocket); finishStop(&out) }
        case .publish(let p):
            publish(p, &out)
        case .sendReturned(let id, let failure):
            if let failure {
                counters.dropped += 1
                out.append(.complete(id: id, .dropped(failure)))
            } else {
                counters.messagesOut += 1
            }
        case .subscribe(let filter, let qos):
            subscriptions.append((filter, qos))
            if state == .connected { out.append(.subscribe(filter: filter, qos: qos)) }
        case .received(let topic, let bytes, let now):
            counters.messagesIn += 1
            guard bytes > config.maxMessageBytes else { return [.deliver] }
            // Larger than the limit: dropped before its payload is copied or converted.
            counters.oversized += 1
            if oversizedLoggedNs.map({ now - $0 >= Self.repeatedLogNs }) ?? true {
                oversizedLoggedNs = now
                out.append(.log(.warning, "MQTT: dropped a message larger than max_message_bytes", [
                    "topic": "\(topic.prefix(256))", "bytes": "\(bytes)",
                    "max_message_bytes": "\(config.maxMessageBytes)", "dropped_so_far": "\(counters.oversized)"]))
            }
        case .pauseReading(let paused):
            setReadingPaused(paused, &out)
        case .commandsWaiting(let n, let now):
            if n >= Self.maxWaitingCommands && !readingPaused {
                setReadingPaused(true, &out)
                if pauseLoggedNs.map({ now - $0 >= Self.repeatedLogNs }) ?? true {
                    pauseLoggedNs = now
                    out.append(.log(.warning, "MQTT: \(n) commands wait for the disk; reading from the broker paused until half of them are committed (the broker keeps what it sends meanwhile, within its own limits)"))
                }
            } else if n <= Self.resumeWaitingCommands {
                setReadingPaused(false, &out)
            }
        case .stop:
            stop(&out)
        }
        return out
    }

    // MARK: - Connecting

    private mutating func attempt(_ now: Int64, _ out: inout [Action]) {
        guard !stopping else { return }
        counters.attempts += 1
        attemptTimes.append(now)
        if attemptTimes.count > 64 { attemptTimes.removeFirst(attemptTimes.count - 64) }
        setState(.connecting, log: false, &out)
        disconnectReason = nil
        if fallBackToV311 {
            fallBackToV311 = false
            protocolVersion = .v311
            needsFullConnect = true
            out.append(.setProtocol(.v311))
        }
        out.append(.connect(protocolVersion, full: needsFullConnect))
    }

    private mutating func connack(_ code: Int32, _ text: String, _ now: Int64, _ out: inout [Action]) {
        guard code == 0 else {
            let reason = "\(text) (CONNACK code \(code))"
            // 132: unsupported protocol version (also what libmosquitto reports for a 3.1.1
            // broker's "unacceptable protocol version").
            if code == 132 && protocolVersion == .v5 {
                fallBackToV311 = true
                out.append(.log(.notice, "MQTT: the broker does not speak MQTT 5 (\(reason)); speaking MQTT 3.1.1 from now on: messages larger than max_message_bytes are then received and dropped on arrival"))
                pendingReason = "the broker does not speak MQTT 5; reconnecting with MQTT 3.1.1"
                return
            }
            // 4, 5 (3.1.1) and 134, 135 (MQTT 5): bad user name or password, not authorised.
            if code == 4 || code == 5 || code == 134 || code == 135 {
                refusal = reason
                setState(.refused(reason: reason), log: true, &out)
            } else {
                pendingReason = "broker refused the connection: \(reason)"
            }
            return
        }
        failures = 0
        refusal = nil
        connectedNs = now
        counters.connects += 1
        setState(.connected, log: true, &out)
        out.append(.send(Outgoing(topic: config.availabilityTopic, payload: Array("online".utf8), qos: 1, retain: true)))
        for s in subscriptions { out.append(.subscribe(filter: s.filter, qos: s.qos)) }
        for p in queue { out.append(.send(p)) }
        queue.removeAll()
    }

    private mutating func connectionLost(_ reason: String, now: Int64, jitter: Double, _ out: inout [Action]) {
        guard !stopping else { return }
        failures += 1
        var reason = reason
        if let at = connectedNs {
            connectedNs = nil
            if takeover.lost(connectedNs: at, lostNs: now, longestRetryNs: config.backoffMax) {
                let warning = "another MQTT client probably uses the client id \"\(config.clientID)\" (mqtt.id \"\(config.id)\"): "
                    + "the broker closed this connection \(takeover.shortInARow) times in a row within \(Self.seconds(TakeoverDetector.shortSessionNs)) s of accepting it"
                duplicateWarning = warning
                out.append(.log(.error, "\(warning); give each kiosk its own mqtt.id; reconnecting with backoff up to \(Self.seconds(config.backoffMax)) s",
                                ["mqtt.client_id": "\(config.clientID)", "mqtt.broker": "\(config.host):\(config.port)"]))
            }
            if takeover.suspected {
                reason = "taken over by another client with the client id \"\(config.clientID)\""
            } else {
                duplicateWarning = nil
            }
        }
        setState(.disconnected(reason: reason), log: true, &out)
        scheduleRetry(jitter: jitter, &out)
    }

    private mutating func scheduleRetry(jitter: Double, _ out: inout [Action]) {
        guard !stopping, !retryScheduled else { return }
        let refused = refusal != nil
        let delay = ReconnectBackoff(initial: config.backoffInitial, max: config.backoffMax)
            .delay(failures: failures, refused: refused, takeover: takeover, fraction: refused ? 0 : jitter)
        retryScheduled = true
        out.append(.scheduleRetry(after: delay))
    }

    private mutating func setState(_ new: State, log: Bool, _ out: inout [Action]) {
        guard new != state else { return }
        state = new
        if log {
            switch new {
            case .connected:
                out.append(.log(.info, "MQTT connected as \(config.clientID)"))
            case .disconnected(let reason):
                // Once per change of reason: a retry failing the same way is not logged again.
                if case .disconnected(let r) = lastLogged, r == reason { break }
                out.append(.log(.warning, "MQTT disconnected: \(reason); retrying with backoff \(Self.seconds(config.backoffInitial)) s doubling to \(Self.seconds(config.backoffMax)) s, never giving up"))
                lastLogged = new
            case .refused(let reason):
                if lastLogged != new {
                    out.append(.log(.error, "MQTT broker refused the login as \(config.username.map { "user \"\($0)\"" } ?? "anonymous"): \(reason); check username and password_file; retrying every \(Self.seconds(config.backoffMax)) s"))
                }
                lastLogged = new
            case .stopped:
                out.append(.log(.info, "MQTT stopped"))
            default: break
            }
            if new == .connected || new == .stopped { lastLogged = new }
        }
        out.append(.stateChanged(new))
    }

    private mutating func setReadingPaused(_ paused: Bool, _ out: inout [Action]) {
        guard paused != readingPaused else { return }
        readingPaused = paused
        out.append(.readingPaused(paused))
    }

    // MARK: - Publishing and stopping

    private mutating func publish(_ p: Outgoing, _ out: inout [Action]) {
        if let problem = Self.topicProblem(p.topic) { return refuse(p.id, "topic \"\(p.topic)\" \(problem)", &out) }
        guard p.qos == 0 || p.qos == 1 else { return refuse(p.id, "QoS \(p.qos) is not supported (0 or 1)", &out) }
        if stopping || state == .stopped { return refuse(p.id, "the MQTT client is stopped; \"\(p.topic)\" was not sent", &out) }
        if state == .connected, queue.isEmpty { return out.append(.send(p)) }
        // Only the newest retained state of a topic matters.
        if p.retain, let i = queue.firstIndex(where: { $0.retain && $0.topic == p.topic }) {
            let old = queue.remove(at: i)
            counters.dropped += 1
            out.append(.complete(id: old.id, .dropped("superseded by a newer retained message on \(p.topic) before the broker was reached")))
        }
        guard queue.count < config.queueLimit else {
            return refuse(p.id, "the outgoing MQTT queue is full (queue_limit \(config.queueLimit) messages, broker \(state)); refused \"\(p.topic)\"", &out)
        }
        queue.append(p)
    }

    private mutating func refuse(_ id: Int, _ reason: String, _ out: inout [Action]) {
        counters.dropped += 1
        if lastRefusalLogged != reason {
            out.append(.log(.warning, "MQTT publish refused: \(reason)"))
            lastRefusalLogged = reason
        }
        out.append(.complete(id: id, .dropped(reason)))
    }

    private mutating func stop(_ out: inout [Action]) {
        guard !stopping, state != .stopped else { return }
        stopping = true
        for p in queue { out.append(.complete(id: p.id, .dropped("the MQTT client stopped before the broker was reached"))) }
        queue.removeAll()
        if retryScheduled { retryScheduled = false; out.append(.cancelRetry) }
        if state == .connected {
            // `offline` retained, then a clean DISCONNECT (the broker discards the last will);
            // `disconnectWritten` finishes the stop.
            out.append(.send(Outgoing(topic: config.availabilityTopic, payload: Array("offline".utf8), qos: 0, retain: true)))
            out.append(.disconnect)
        } else {
            out.append(.closeSocket)
            finishStop(&out)
        }
    }

    private mutating func finishStop(_ out: inout [Action]) {
        stopping = true
        if retryScheduled { retryScheduled = false; out.append(.cancelRetry) }
        out.append(.failInFlight("the MQTT client stopped before the broker acknowledged"))
        setState(.stopped, log: true, &out)
        out.append(.stopFinished)
    }

    static func topicProblem(_ t: String) -> String? {
        if t.isEmpty { return "is empty" }
        if t.contains("+") || t.contains("#") { return "contains a wildcard (+ or #), which only subscriptions may use" }
        if t.utf8.count > 65535 { return "is longer than 65535 bytes" }
        return nil
    }

    static func seconds(_ ns: Int64) -> String {
        let s = Double(ns) / 1e9
        return s == s.rounded() ? String(Int(s)) : String(s)
    }
}
