import KioskMQTT
import Logging
import XCTest

/// The MQTT session driven by events on virtual time: no broker, no thread, no clock; every time
/// and random fraction is given, every effect is an action compared exactly.
final class MQTTSessionTests: XCTestCase {
    typealias Action = MQTTSession.Action
    let s: Int64 = 1_000_000_000

    func config(_ edit: (inout MQTTConfig) -> Void = { _ in }) -> MQTTConfig {
        var c = MQTTConfig(host: "127.0.0.1", port: 1883, id: "k1")
        c.backoffInitial = s
        c.backoffMax = 8 * s
        c.connectTimeout = 10 * s
        edit(&c)
        return c
    }

    let online = MQTTSession.Outgoing(topic: "kioskd/k1/availability", payload: Array("online".utf8), qos: 1, retain: true)

    /// The delay of the retry scheduled among `actions` (nil: none).
    func retryDelay(_ actions: [Action]) -> Int64? {
        for case .scheduleRetry(let d) in actions { return d }
        return nil
    }

    func logs(_ actions: [Action]) -> [String] {
        actions.compactMap { if case .log(_, let m, _) = $0 { return m } else { return nil } }
    }

    /// A connect attempt that opens its socket and gets `code` back; returns the CONNACK's actions.
    @discardableResult
    func connectAttempt(_ session: inout MQTTSession, at now: Int64, code: Int32 = 0, text: String = "") -> [Action] {
        _ = session.handle(.connectReturned(failure: nil, storedProperties: true, now: now, jitter: 0))
        XCTAssertEqual(session.handle(.socketOpened), [.armConnectTimeout(after: 10 * s)])
        return session.handle(.connack(code: code, text: text, now: now))
    }

    // MARK: - Backoff

    func testRetriesDoubleAfterRepeatedFailuresAndStartAgainAfterAGoodConnection() {
        var session = MQTTSession(config: config())
        XCTAssertEqual(session.handle(.start(now: 0)), [.stateChanged(.connecting), .connect(.v5, full: true)])
        XCTAssertEqual(session.handle(.start(now: 0)), [], "started once")
        var delays: [Int64] = []
        var warnings = 0
        for i in 0..<6 {
            let failed = session.handle(.connectReturned(failure: "Connection refused", storedProperties: true, now: Int64(i) * s, jitter: 0))
            XCTAssertEqual(session.state, .disconnected(reason: "Connection refused"))
            warnings += logs(failed).count
            delays.append(retryDelay(failed) ?? -1)
            XCTAssertEqual(session.handle(.retryTimerFired(now: Int64(i) * s)),
                           [.stateChanged(.connecting), .connect(.v5, full: false)], "the CONNECT's properties were stored once")
        }
        XCTAssertEqual(delays, [1, 2, 4, 8, 8, 8].map { $0 * s })
        XCTAssertEqual(warnings, 1, "one warning per reason, not per retry")
        XCTAssertEqual(session.counters.attempts, 7)
        XCTAssertEqual(session.attemptTimes.count, 7)

        // A connection that lasts resets the count: the next loss waits the initial delay again,
        // shortened by the jitter's fraction of a fifth.
        connectAttempt(&session, at: 100 * s)
        XCTAssertEqual(session.failures, 0)
        let lost = session.handle(.closed(error: "Connection reset by peer", now: 200 * s, jitter: 0.5))
        XCTAssertEqual(retryDelay(lost), s - s / 10)
        XCTAssertEqual(session.state, .disconnected(reason: "Connection reset by peer"))
        XCTAssertEqual(session.handle(.closed(error: "again", now: 200 * s, jitter: 0)).filter { retryDelay([$0]) != nil }, [],
                       "one retry at a time")
    }

    func testAConnectTimeoutAbortsTheSocketAndIsTheReasonReported() {
        var session = MQTTSession(config: config())
        _ = session.handle(.start(now: 0))
        _ = session.handle(.connectReturned(failure: nil, storedProperties: true, now: 0, jitter: 0))
        XCTAssertEqual(session.handle(.socketOpened), [.armConnectTimeout(after: 10 * s)])
        XCTAssertEqual(session.handle(.connectTimeoutFired), [.abortConnection])
        let closed = session.handle(.closed(error: "Connection reset", now: 10 * s, jitter: 0))
        XCTAssertEqual(closed.first, .closeSocket)
        XCTAssertEqual(session.state, .disconnected(reason: "no CONNACK within 10 s"))
        XCTAssertEqual(retryDelay(closed), s)
        // Once connected the timeout has nothing to abort.
        _ = session.handle(.retryTimerFired(now: 11 * s))
        connectAttempt(&session, at: 11 * s)
        XCTAssertEqual(session.handle(.connectTimeoutFired), [])
    }

    // MARK: - Protocol version

    func testABrokerRefusingMQTT5IsSpokenToIn311FromThenOn() {
        var session = MQTTSession(config: config())
        _ = session.handle(.start(now: 0))
        let refused = connectAttempt(&session, at: 0, code: 132, text: "Unsupported protocol version")
        XCTAssertEqual(logs(refused).count, 1)
        XCTAssertTrue(logs(refused)[0].contains("speaking MQTT 3.1.1 from now on"))
        XCTAssertEqual(session.protocolVersion, .v5, "switched on the next attempt")
        let closed = session.handle(.closed(error: nil, now: 0, jitter: 0))
        XCTAssertEqual(session.state, .disconnected(reason: "the broker does not speak MQTT 5; reconnecting with MQTT 3.1.1"))
        XCTAssertEqual(retryDelay(closed), s)
        XCTAssertEqual(session.handle(.retryTimerFired(now: s)),
                       [.stateChanged(.connecting), .setProtocol(.v311), .connect(.v311, full: true)])
        XCTAssertEqual(session.protocolVersion, .v311)
        // The same refusal in 3.1.1 is an ordinary refusal: no second switch.
        XCTAssertEqual(logs(connectAttempt(&session, at: s, code: 132, text: "Unsupported protocol version")), [])
        _ = session.handle(.closed(error: nil, now: s, jitter: 0))
        XCTAssertEqual(session.state, .disconnected(reason: "broker refused the connection: Unsupported protocol version (CONNACK code 132)"))
        XCTAssertEqual(session.handle(.retryTimerFired(now: 3 * s)), [.stateChanged(.connecting), .connect(.v311, full: false)])
    }

    func testAConfigured311ConnectionNeverSwitches() {
        var session = MQTTSession(config: config { $0.protocolVersion = .v311 })
        XCTAssertEqual(session.handle(.start(now: 0)), [.stateChanged(.connecting), .connect(.v311, full: true)])
        XCTAssertEqual(logs(connectAttempt(&session, at: 0, code: 132, text: "x")), [])
        _ = session.handle(.closed(error: nil, now: 0, jitter: 0))
        XCTAssertEqual(session.handle(.retryTimerFired(now: s)), [.stateChanged(.connecting), .connect(.v311, full: false)])
        XCTAssertEqual(session.protocolVersion, .v311)
    }

    func testARefusedLoginRetriesAtTheSlowestPaceAndIsLoggedOnce() {
        var session = MQTTSession(config: config { $0.username = "kiosk" })
        _ = session.handle(.start(now: 0))
        var errors = 0
        for i in 0..<3 {
            let refused = connectAttempt(&session, at: Int64(i) * 10 * s, code: 5, text: "Connection Refused: not authorised.")
            errors += logs(refused).count
            XCTAssertEqual(session.state, .refused(reason: "Connection Refused: not authorised. (CONNACK code 5)"))
            XCTAssertEqual(retryDelay(session.handle(.closed(error: nil, now: Int64(i) * 10 * s, jitter: 0.9))), 8 * s, "the ceiling, no jitter")
            XCTAssertEqual(session.state, .refused(reason: "Connection Refused: not authorised. (CONNACK code 5)"), "still refused while waiting")
            _ = session.handle(.retryTimerFired(now: Int64(i) * 10 * s + 8 * s))
        }
        XCTAssertEqual(errors, 1)
        // Fixed on the broker: connected, and the next loss backs off from the start.
        connectAttempt(&session, at: 100 * s)
        XCTAssertEqual(session.state, .connected)
        XCTAssertEqual(retryDelay(session.handle(.closed(error: "gone", now: 200 * s, jitter: 0))), s)
    }

    // MARK: - What a connect renews

    func testEveryConnectPublishesOnlineResubscribesAndFlushesTheQueueInOrder() {
        var session = MQTTSession(config: config())
        XCTAssertEqual(session.handle(.subscribe(filter: "kioskd/k1/+/set", qos: 1)), [], "not connected: kept for the connect")
        _ = session.handle(.subscribe(filter: "homeassistant/status", qos: 0))
        _ = session.handle(.start(now: 0))
        let first = MQTTSession.Outgoing(id: 1, topic: "kioskd/k1/scene", payload: [1], qos: 1, retain: true)
        XCTAssertEqual(session.handle(.publish(first)), [], "queued")
        XCTAssertEqual(connectAttempt(&session, at: 0), [
            .log(.info, "MQTT connected as kioskd-k1"), .stateChanged(.connected), .send(online),
            .subscribe(filter: "kioskd/k1/+/set", qos: 1), .subscribe(filter: "homeassistant/status", qos: 0), .send(first),
        ])
        XCTAssertEqual(session.queue, [])
        // Connected: straight out, and a new subscription is sent at once.
        let live = MQTTSession.Outgoing(id: 2, topic: "kioskd/k1/theme", payload: [2], qos: 1, retain: true)
        XCTAssertEqual(session.handle(.publish(live)), [.send(live)])
        XCTAssertEqual(session.handle(.subscribe(filter: "fleet/#", qos: 1)), [.subscribe(filter: "fleet/#", qos: 1)])

        // Lost: the newest retained state of a topic waits, an older one is superseded.
        _ = session.handle(.closed(error: "gone", now: 100 * s, jitter: 0))
        let old = MQTTSession.Outgoing(id: 3, topic: "kioskd/k1/scene", payload: [3], qos: 1, retain: true)
        let event = MQTTSession.Outgoing(id: 4, topic: "kioskd/k1/error", payload: [4], qos: 1, retain: false)
        let newer = MQTTSession.Outgoing(id: 5, topic: "kioskd/k1/scene", payload: [5], qos: 1, retain: true)
        _ = session.handle(.publish(old))
        _ = session.handle(.publish(event))
        XCTAssertEqual(session.handle(.publish(newer)),
                       [.complete(id: 3, .dropped("superseded by a newer retained message on kioskd/k1/scene before the broker was reached"))])
        _ = session.handle(.retryTimerFired(now: 101 * s))
        // The state change lets the bridge publish discovery and every state again.
        XCTAssertEqual(connectAttempt(&session, at: 101 * s), [
            .log(.info, "MQTT connected as kioskd-k1"), .stateChanged(.connected), .send(online),
            .subscribe(filter: "kioskd/k1/+/set", qos: 1), .subscribe(filter: "homeassistant/status", qos: 0),
            .subscribe(filter: "fleet/#", qos: 1), .send(event), .send(newer),
        ])
        XCTAssertEqual(session.counters.connects, 2)
    }

    func testTheQueueIsBoundedAndRefusalsAreCountedAndLoggedOncePerReason() {
        var session = MQTTSession(config: config { $0.queueLimit = 3 })
        _ = session.handle(.start(now: 0))
        for id in 1...3 {
            XCTAssertEqual(session.handle(.publish(.init(id: id, topic: "t/\(id)", payload: [], qos: 1, retain: false))), [])
        }
        let full = "the outgoing MQTT queue is full (queue_limit 3 messages, broker connecting); refused \"t/4\""
        XCTAssertEqual(session.handle(.publish(.init(id: 4, topic: "t/4", payload: [], qos: 1, retain: false))),
                       [.log(.warning, "MQTT publish refused: \(full)"), .complete(id: 4, .dropped(full))])
        XCTAssertEqual(session.handle(.publish(.init(id: 5, topic: "t/4", payload: [], qos: 1, retain: false))),
                       [.complete(id: 5, .dropped(full))], "logged once")
        XCTAssertEqual(session.queue.map(\.id), [1, 2, 3])
        XCTAssertEqual(logs(session.handle(.publish(.init(id: 6, topic: "a/+", payload: [], qos: 1, retain: false)))),
                       ["MQTT publish refused: topic \"a/+\" contains a wildcard (+ or #), which only subscriptions may use"])
        XCTAssertEqual(session.handle(.publish(.init(id: 7, topic: "a", payload: [], qos: 2, retain: false))).last,
                       .complete(id: 7, .dropped("QoS 2 is not supported (0 or 1)")))
        XCTAssertEqual(session.counters.dropped, 4)
        // A libmosquitto refusal counts as dropped too; a message taken counts as sent.
        XCTAssertEqual(session.handle(.sendReturned(id: 9, failure: "no")), [.complete(id: 9, .dropped("no"))])
        _ = session.handle(.sendReturned(id: 10, failure: nil))
        XCTAssertEqual(session.counters.dropped, 5)
        XCTAssertEqual(session.counters.messagesOut, 1)
    }

    // MARK: - Reading

    func testTenThousandWaitingCommandsPauseReadingUntilHalfAreCommitted() {
        var session = MQTTSession(config: config())
        XCTAssertEqual(MQTTSession.maxWaitingCommands, 10_000)
        XCTAssertEqual(session.handle(.commandsWaiting(9_999, now: 0)), [])
        let paused = session.handle(.commandsWaiting(10_000, now: 0))
        XCTAssertEqual(paused.first, .readingPaused(true))
        XCTAssertEqual(logs(paused), ["MQTT: 10000 commands wait for the disk; reading from the broker paused until half of them are committed (the broker keeps what it sends meanwhile, within its own limits)"])
        XCTAssertTrue(session.readingPaused)
        XCTAssertEqual(session.handle(.commandsWaiting(10_001, now: 0)), [])
        XCTAssertEqual(session.handle(.commandsWaiting(5_001, now: 0)), [], "still more than half")
        XCTAssertEqual(session.handle(.commandsWaiting(5_000, now: 0)), [.readingPaused(false)])
        XCTAssertFalse(session.readingPaused)
        XCTAssertEqual(session.handle(.commandsWaiting(7_000, now: 0)), [], "not paused again below the bound")
        // Paused again within the minute: not logged again; after it: logged.
        XCTAssertEqual(session.handle(.commandsWaiting(10_000, now: 59 * s)), [.readingPaused(true)])
        _ = session.handle(.commandsWaiting(0, now: 59 * s))
        XCTAssertEqual(logs(session.handle(.commandsWaiting(10_000, now: 60 * s))).count, 1)
        // Pausing by hand is the same switch.
        XCTAssertEqual(session.handle(.pauseReading(true)), [])
        XCTAssertEqual(session.handle(.pauseReading(false)), [.readingPaused(false)])
    }

    func testAMessageLargerThanTheLimitIsDroppedAndLoggedOnceAMinute() {
        var session = MQTTSession(config: config { $0.maxMessageBytes = 100 })
        XCTAssertEqual(session.handle(.received(topic: "t", bytes: 100, now: 0)), [.deliver])
        XCTAssertEqual(logs(session.handle(.received(topic: "t", bytes: 101, now: 0))), ["MQTT: dropped a message larger than max_message_bytes"])
        XCTAssertEqual(session.handle(.received(topic: "t", bytes: 101, now: 59 * s)), [])
        XCTAssertEqual(logs(session.handle(.received(topic: "t", bytes: 101, now: 60 * s))).count, 1)
        XCTAssertEqual(session.counters.messagesIn, 4)
        XCTAssertEqual(session.counters.oversized, 3)
    }

    // MARK: - Stopping

    func testAStopWhileConnectedPublishesOfflineAndEndsOnceTheDisconnectIsWritten() {
        var session = MQTTSession(config: config())
        _ = session.handle(.start(now: 0))
        connectAttempt(&session, at: 0)
        let offline = MQTTSession.Outgoing(topic: "kioskd/k1/availability", payload: Array("offline".utf8), qos: 0, retain: true)
        XCTAssertEqual(session.handle(.stop), [.send(offline), .disconnect])
        XCTAssertEqual(session.state, .connected, "until the DISCONNECT is written")
        XCTAssertEqual(session.handle(.publish(.init(id: 1, topic: "t", payload: [], qos: 1, retain: false))).last,
                       .complete(id: 1, .dropped("the MQTT client is stopped; \"t\" was not sent")))
        XCTAssertEqual(session.handle(.stop), [], "stopped once")
        XCTAssertEqual(session.handle(.closed(error: nil, now: s, jitter: 0)), [], "libmosquitto's close of our DISCONNECT is no loss")
        XCTAssertEqual(session.handle(.disconnectWritten), [
            .closeSocket, .failInFlight("the MQTT client stopped before the broker acknowledged"),
            .log(.info, "MQTT stopped"), .stateChanged(.stopped), .stopFinished,
        ])
        XCTAssertEqual(session.handle(.disconnectWritten), [])
        XCTAssertEqual(session.handle(.retryTimerFired(now: 2 * s)), [], "no more attempts")
    }

    func testAStopWhileDisconnectedDropsTheQueueAndCancelsTheRetry() {
        var session = MQTTSession(config: config())
        _ = session.handle(.start(now: 0))
        _ = session.handle(.connectReturned(failure: "Connection refused", storedProperties: true, now: 0, jitter: 0))
        XCTAssertTrue(session.retryScheduled)
        _ = session.handle(.publish(.init(id: 7, topic: "t", payload: [], qos: 1, retain: false)))
        XCTAssertEqual(session.handle(.stop), [
            .complete(id: 7, .dropped("the MQTT client stopped before the broker was reached")), .cancelRetry, .closeSocket,
            .failInFlight("the MQTT client stopped before the broker acknowledged"),
            .log(.info, "MQTT stopped"), .stateChanged(.stopped), .stopFinished,
        ])
        XCTAssertEqual(session.state, .stopped)
        // A connect call still under way comes back to a stopped session: only its socket closes.
        XCTAssertEqual(session.handle(.connectReturned(failure: nil, storedProperties: true, now: s, jitter: 0)), [.closeSocket])
    }

    // MARK: - Another client with the same id

    func testShortConnectionsInARowAreATakeoverWithItsOwnDelaysUntilOneLasts() {
        var session = MQTTSession(config: config())
        _ = session.handle(.start(now: 0))
        var delays: [Int64] = []
        var errors: [String] = []
        for i in 0..<4 {
            let t = Int64(i) * 100 * s
            connectAttempt(&session, at: t)
            _ = session.handle(.brokerDisconnect(code: 142, text: "Session taken over"))
            let lost = session.handle(.closed(error: nil, now: t + s, jitter: 0))
            delays.append(retryDelay(lost) ?? -1)
            errors += logs(lost).filter { $0.contains("another MQTT client") }
            if i == 0 {
                XCTAssertEqual(session.state, .disconnected(reason: "the broker sent DISCONNECT: Session taken over (reason code 142)"))
            }
            _ = session.handle(.retryTimerFired(now: t + 50 * s))
        }
        XCTAssertEqual(delays, [1, 2, 4, 8].map { $0 * s }, "doubling per short connection, not per failure")
        XCTAssertEqual(errors.count, 1, "reported once per spell")
        XCTAssertTrue(errors[0].hasPrefix("another MQTT client probably uses the client id \"kioskd-k1\" (mqtt.id \"k1\")"))
        XCTAssertEqual(session.state, .connecting)
        XCTAssertNotNil(session.duplicateIDWarning(now: 400 * s))

        // A connection that outlives the other's longest retry delay clears the warning and the spell.
        connectAttempt(&session, at: 400 * s)
        XCTAssertNotNil(session.duplicateIDWarning(now: 412 * s))
        XCTAssertNil(session.duplicateIDWarning(now: 413 * s), "backoffMax 8 s + 5 s")
        let lost = session.handle(.closed(error: "gone", now: 414 * s, jitter: 0))
        XCTAssertEqual(session.state, .disconnected(reason: "gone"))
        XCTAssertNil(session.duplicateWarning)
        XCTAssertEqual(retryDelay(lost), s)
    }

    func testWhileSuspectedALostConnectionIsReportedAsTakenOver() {
        var session = MQTTSession(config: config())
        _ = session.handle(.start(now: 0))
        for i in 0..<3 {
            connectAttempt(&session, at: Int64(i) * 100 * s)
            _ = session.handle(.closed(error: "Connection lost", now: Int64(i) * 100 * s + s, jitter: 0))
            _ = session.handle(.retryTimerFired(now: Int64(i) * 100 * s + 50 * s))
        }
        XCTAssertEqual(session.takeover.shortInARow, 3)
        connectAttempt(&session, at: 1_000 * s)
        _ = session.handle(.closed(error: "Connection lost", now: 1_010 * s, jitter: 0))
        XCTAssertEqual(session.state, .disconnected(reason: "taken over by another client with the client id \"kioskd-k1\""),
                       "10 s is still short once suspected")
    }
}
