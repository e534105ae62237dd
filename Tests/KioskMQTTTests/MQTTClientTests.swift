#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskTesting
import KioskCore
import KioskMQTT
import KioskPosix
import Logging
import XCTest

final class MQTTClientTests: XCTestCase {
    func testConnectPublishesOnlineRetainedSeenByMosquittoSub() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let logs = CapturedLog()
        let client = try MQTTClient(config: testConfig(port: broker.port, id: "k1"), loop: loop, logger: logs.logger)
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.state == .connected }, "state \(client.state)")
        // A QoS 1 message after `online` on the same connection: once it is acknowledged, the
        // broker has stored the retained `online` too.
        var ack: MQTTClient.PublishResult?
        client.publish("probe", "x", qos: 1) { ack = $0 }
        XCTAssertTrue(try runUntil(loop) { ack != nil })
        let out = try runTool("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "kioskd/k1/availability", "-C", "1", "-W", "5", "-v", "-F", "%t %p %r"])
        XCTAssertEqual(out.trimmingCharacters(in: .whitespacesAndNewlines), "kioskd/k1/availability online 1")
        XCTAssertEqual(client.counters.attempts, 1)
        XCTAssertEqual(client.counters.connects, 1)
        XCTAssertEqual(logs.count(containing: "MQTT connected as kioskd-k1"), 1, "\(logs.all)")
    }

    func testHostNameIsResolvedOffTheLoopAndConnects() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let client = try MQTTClient(config: testConfig(port: broker.port, id: "named", host: "localhost"), loop: loop)
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.state == .connected }, "state \(client.state)")
    }

    func testPublishQoS1IsAcknowledgedAndSubscriberReceives() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let sender = try MQTTClient(config: testConfig(port: broker.port, id: "sender"), loop: loop)
        let receiver = try MQTTClient(config: testConfig(port: broker.port, id: "receiver"), loop: loop)
        var got: [MQTTClient.Message] = []
        var readies = 0
        receiver.subscribe("room/+/temp") { got.append($0) }
        receiver.subscribe("room/ready") { _ in readies += 1 }
        receiver.start()
        sender.start()
        XCTAssertTrue(try runUntil(loop) { sender.state == .connected && receiver.state == .connected })
        // The subscriptions are in place once a message on one of them arrives (the SUBSCRIBE
        // may reach the broker after the first probe: probe again, bounded).
        var probes = 0
        while readies == 0 && probes < 50 {
            sender.publish("room/ready", "1", qos: 1)
            try runUntil(loop, seconds: 0.1) { readies > 0 }
            probes += 1
        }
        XCTAssertGreaterThan(readies, 0)

        var result: MQTTClient.PublishResult?
        let outcome = sender.publish("room/a/temp", "21.5", qos: 1, retain: false) { result = $0 }
        XCTAssertEqual(outcome, .sent)
        XCTAssertTrue(try runUntil(loop) { result != nil && !got.isEmpty })
        XCTAssertEqual(result, .acknowledged)
        XCTAssertEqual(got.map(\.topic), ["room/a/temp"])
        XCTAssertEqual(got.first?.text, "21.5")
        XCTAssertEqual(got.first?.qos, 1)
        XCTAssertEqual(got.first?.retained, false)
        sender.publish("other/topic", "no", qos: 0)
        var zero: MQTTClient.PublishResult?
        sender.publish("room/b/temp", "19", qos: 0) { zero = $0 }
        XCTAssertTrue(try runUntil(loop) { got.count == 2 })
        XCTAssertEqual(zero, .sent)
        XCTAssertEqual(got.map(\.topic), ["room/a/temp", "room/b/temp"], "a message outside the filter is not delivered")
        XCTAssertEqual(receiver.counters.messagesIn, readies + 2, "the probes received and the two temperatures")
        XCTAssertEqual(sender.counters.messagesOut, 1 + probes + 3, "online, the probes, then three")
    }

    /// A message larger than `maxMessageBytes` is dropped on arrival (counted, logged once);
    /// the ones after it still arrive.
    func testAMessageLargerThanTheLimitIsDroppedAndTheNextOneArrives() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let sender = try MQTTClient(config: testConfig(port: broker.port, id: "big-sender"), loop: loop)
        var small = testConfig(port: broker.port, id: "small-receiver")
        small.maxMessageBytes = 1024
        let logs = CapturedLog()
        let receiver = try MQTTClient(config: small, loop: loop, logger: logs.logger)
        var got: [Int] = []
        receiver.subscribe("size/#") { got.append($0.payload.count) }
        receiver.start()
        sender.start()
        XCTAssertTrue(try runUntil(loop) { sender.state == .connected && receiver.state == .connected })
        var probes = 0
        while got.isEmpty && probes < 50 {
            sender.publish("size/probe", "1", qos: 1)
            try runUntil(loop, seconds: 0.1) { !got.isEmpty }
            probes += 1
        }
        got.removeAll()
        sender.publish("size/big", [UInt8](repeating: 65, count: 1025), qos: 1)
        sender.publish("size/big", [UInt8](repeating: 66, count: 4096), qos: 1)
        sender.publish("size/ok", [UInt8](repeating: 67, count: 1024), qos: 1)
        XCTAssertTrue(try runUntil(loop) { got.count >= 1 && receiver.counters.oversized == 2 })
        _ = try runUntil(loop, seconds: 0.2) { false }
        XCTAssertEqual(got, [1024], "only the message within the limit is delivered")
        XCTAssertEqual(receiver.counters.oversized, 2)
        XCTAssertEqual(logs.count(containing: "larger than max_message_bytes"), 1, "one log line a minute")
    }

    func testRetainedMessageReachesALaterSubscriberMarkedRetained() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let a = try MQTTClient(config: testConfig(port: broker.port, id: "a"), loop: loop)
        a.start()
        XCTAssertTrue(try runUntil(loop) { a.state == .connected })
        var acked: MQTTClient.PublishResult?
        a.publish("kioskd/a/scene", "clock", qos: 1, retain: true) { acked = $0 }
        XCTAssertTrue(try runUntil(loop) { acked == .acknowledged })
        let b = try MQTTClient(config: testConfig(port: broker.port, id: "b"), loop: loop)
        var got: MQTTClient.Message?
        b.subscribe("kioskd/a/scene") { got = $0 }
        b.start()
        XCTAssertTrue(try runUntil(loop) { got != nil })
        XCTAssertEqual(got?.text, "clock")
        XCTAssertEqual(got?.retained, true)
    }

    func testBrokerDownAtStartRetriesWithGrowingBoundedBackoffThenConnects() throws {
        let port = try Loopback.freePort()
        let loop = try EventLoop()
        let logs = CapturedLog()
        var config = testConfig(port: port, id: "late")
        config.backoffInitial = 20_000_000
        config.backoffMax = 160_000_000
        let client = try MQTTClient(config: config, loop: loop, logger: logs.logger)
        client.start()
        XCTAssertTrue(try runUntil(loop, seconds: 10) { client.counters.attempts >= 8 })
        guard case .disconnected(let reason) = client.state else { return XCTFail("state \(client.state)") }
        XCTAssertTrue(reason.contains("Connection refused"), reason)
        let t = client.attemptTimes
        let gaps = zip(t.dropFirst(), t).map { Double($0 - $1) / 1e6 } // ms
        // Nominal 20, 40, 80, 160, 160...; each 0-20 % shorter; plus loop latency.
        let nominal: [Double] = [20, 40, 80, 160, 160, 160, 160]
        for (i, g) in gaps.prefix(nominal.count).enumerated() {
            XCTAssertGreaterThanOrEqual(g, nominal[i] * 0.8 - 1, "gap \(i): \(gaps)")
            XCTAssertLessThanOrEqual(g, nominal[i] + 60, "gap \(i): \(gaps)")
        }
        XCTAssertLessThan(gaps[0], gaps[1], "\(gaps)")
        XCTAssertLessThan(gaps[1], gaps[2], "\(gaps)")
        XCTAssertLessThan(gaps[2], gaps[3], "\(gaps)")
        // Logged once, not per retry.
        XCTAssertEqual(logs.count(containing: "MQTT disconnected"), 1, "\(logs.all)")
        XCTAssertEqual(logs.count(containing: "never giving up"), 1)

        let broker = try Broker(port: port)
        try broker.start()
        XCTAssertTrue(try runUntil(loop, seconds: 5) { client.state == .connected }, "state \(client.state)")
        XCTAssertEqual(logs.count(containing: "MQTT connected"), 1)
        XCTAssertEqual(client.counters.connects, 1)
    }

    func testBrokerRestartReconnectsAndResubscribes() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let logs = CapturedLog()
        let client = try MQTTClient(config: testConfig(port: broker.port, id: "r"), loop: loop, logger: logs.logger)
        var got: [String] = []
        client.subscribe("cmd/#") { got.append($0.text) }
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.state == .connected })
        broker.kill()
        XCTAssertTrue(try runUntil(loop) { if case .disconnected = client.state { return true } else { return false } }, "state \(client.state)")
        try broker.start()
        XCTAssertTrue(try runUntil(loop) { client.state == .connected }, "state \(client.state)")
        XCTAssertEqual(client.counters.connects, 2)
        // Resubscribed: a message from another client arrives.
        let other = try MQTTClient(config: testConfig(port: broker.port, id: "o"), loop: loop)
        other.start()
        XCTAssertTrue(try runUntil(loop) { other.state == .connected })
        var n = 0
        while got.isEmpty && n < 50 { // until the resubscription is in place: bounded
            other.publish("cmd/x", "go", qos: 1)
            try runUntil(loop, seconds: 0.1) { !got.isEmpty }
            n += 1
        }
        XCTAssertEqual(got.first, "go")
        XCTAssertEqual(logs.count(containing: "MQTT connected"), 2, "\(logs.all)")
        XCTAssertEqual(logs.count(containing: "MQTT disconnected"), 1, "\(logs.all)")
    }

    func testQueueWhileDisconnectedIsBoundedAndFlushedOnConnect() throws {
        let port = try Loopback.freePort()
        let loop = try EventLoop()
        var config = testConfig(port: port, id: "q")
        config.queueLimit = 2
        let logs = CapturedLog()
        let client = try MQTTClient(config: config, loop: loop, logger: logs.logger)
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.counters.attempts >= 2 })
        var results: [String: MQTTClient.PublishResult] = [:]
        XCTAssertEqual(client.publish("kioskd/q/scene", "a", retain: true) { results["a"] = $0 }, .queued)
        XCTAssertEqual(client.publish("kioskd/q/scene", "b", retain: true) { results["b"] = $0 }, .queued)
        XCTAssertEqual(results["a"], .dropped("superseded by a newer retained message on kioskd/q/scene before the broker was reached"))
        XCTAssertEqual(client.publish("kioskd/q/theme", "dark", retain: true) { results["t"] = $0 }, .queued)
        let refused = client.publish("kioskd/q/blank", "ON", retain: true) { results["full"] = $0 }
        let expected = "the outgoing MQTT queue is full (queue_limit 2 messages, broker \(client.state)); refused \"kioskd/q/blank\""
        XCTAssertEqual(refused, .refused(expected))
        XCTAssertEqual(results["full"], .dropped(expected))
        XCTAssertEqual(client.queuedCount, 2)
        XCTAssertEqual(client.counters.dropped, 2)
        XCTAssertEqual(logs.count(containing: "MQTT publish refused: the outgoing MQTT queue is full (queue_limit 2 messages"), 1)

        let broker = try Broker(port: port)
        try broker.start()
        XCTAssertTrue(try runUntil(loop) { results["b"] != nil && results["t"] != nil }, "state \(client.state)")
        XCTAssertEqual(results["b"], .acknowledged)
        XCTAssertEqual(results["t"], .acknowledged)
        XCTAssertEqual(client.queuedCount, 0)
        let out = try runTool("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", "kioskd/q/scene", "-t", "kioskd/q/theme", "-t", "kioskd/q/blank", "-C", "2", "-W", "5", "-F", "%t=%p"])
        XCTAssertEqual(Set(out.split(separator: "\n").map(String.init)), ["kioskd/q/scene=b", "kioskd/q/theme=dark"])
    }

    func testCleanStopPublishesOfflineAndStopsRetrying() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let client = try MQTTClient(config: testConfig(port: broker.port, id: "s"), loop: loop)
        let watcher = try MQTTClient(config: testConfig(port: broker.port, id: "w"), loop: loop)
        var seen: [String] = []
        watcher.subscribe("kioskd/s/availability") { seen.append($0.text) }
        watcher.start()
        XCTAssertTrue(try runUntil(loop) { watcher.state == .connected })
        client.start()
        XCTAssertTrue(try runUntil(loop) { seen.last == "online" })
        var stopped = false
        client.stop { stopped = true }
        XCTAssertTrue(try runUntil(loop) { stopped && seen.last == "offline" }, "seen \(seen), state \(client.state)")
        XCTAssertEqual(client.state, .stopped)
        XCTAssertEqual(client.publish("x", "y"), .refused("the MQTT client is stopped; \"x\" was not sent"))
        try runFor(loop, seconds: 0.3)
        XCTAssertEqual(client.counters.attempts, 1)
        XCTAssertEqual(seen, ["online", "offline"])
    }

    func testWrongPasswordIsRefusedClearlyWithoutTightRetries() throws {
        let broker = try Broker(users: ["kiosk": "right"])
        try broker.start()
        let loop = try EventLoop()
        let logs = CapturedLog()
        var config = testConfig(port: broker.port, id: "pw")
        config.username = "kiosk"
        config.password = "wrong"
        config.backoffInitial = 10_000_000
        config.backoffMax = 5_000_000_000
        let client = try MQTTClient(config: config, loop: loop, logger: logs.logger)
        client.start()
        XCTAssertTrue(try runUntil(loop) { if case .refused = client.state { return true } else { return false } }, "state \(client.state)")
        // MQTT 5: the reason code 135 (3.1.1 said "Connection Refused: not authorised." with code 5).
        XCTAssertEqual(client.state, .refused(reason: "Not authorized (CONNACK code 135)"))
        try runFor(loop, seconds: 0.5)
        XCTAssertEqual(client.counters.attempts, 1, "no retry before backoff_max after a refused login")
        XCTAssertEqual(logs.all.filter { $0.hasPrefix("error") }, [
            "error: MQTT broker refused the login as user \"kiosk\": Not authorized (CONNACK code 135); check username and password_file; retrying every 5 s",
        ])
        // The same broker lets the right password in.
        config.password = "right"
        config.id = "pw2"
        let good = try MQTTClient(config: config, loop: loop)
        good.start()
        XCTAssertTrue(try runUntil(loop) { good.state == .connected }, "state \(good.state)")
    }

    func testThousandReconnectAttemptsLeakNoFdsAndLoopTimersStayOnTime() throws {
        let port = try Loopback.freePort()
        let loop = try EventLoop()
        var config = testConfig(port: port, id: "many")
        config.backoffInitial = 1_000_000
        config.backoffMax = 1_000_000
        let client = try MQTTClient(config: config, loop: loop)
        // A 10 ms repeating timer, as a frame clock would be.
        var ticks: [Int64] = []
        func tick() {
            ticks.append(nowNanos())
            _ = try? loop.schedule(after: 10_000_000) { _ in tick() }
        }
        tick()
        client.start()
        XCTAssertTrue(try runUntil(loop, seconds: 30) { client.counters.attempts >= 20 })
        let fdsBefore = openFDCount()
        let rssBefore = residentKiB()
        let start = nowNanos()
        let firstTick = ticks.count
        XCTAssertTrue(try runUntil(loop, seconds: 60) { client.counters.attempts >= 1020 }, "attempts \(client.counters.attempts)")
        let elapsedMs = Double(nowNanos() - start) / 1e6
        let fdsAfter = openFDCount()
        let rssAfter = residentKiB()
        XCTAssertEqual(fdsAfter, fdsBefore, "open fds after 1000 failed connects")
        XCTAssertLessThan(rssAfter - rssBefore, 2048, "RSS grew from \(rssBefore) to \(rssAfter) KiB")
        let measured = Array(ticks[firstTick...])
        let gaps = zip(measured.dropFirst(), measured).map { Double($0 - $1) / 1e6 }
        let worst = gaps.max() ?? 0
        XCTAssertGreaterThanOrEqual(Double(measured.count), elapsedMs / 10 * 0.8, "\(measured.count) ticks in \(elapsedMs) ms")
        XCTAssertLessThan(worst, 50, "worst gap between 10 ms ticks: \(worst) ms")
        print("1000 reconnects: \(Int(elapsedMs)) ms, fds \(fdsBefore)→\(fdsAfter), RSS \(rssBefore)→\(rssAfter) KiB, ticks \(measured.count), worst tick gap \(worst) ms")
    }

    /// A peer that accepts TCP but never answers (a hung broker, a black-holing proxy): each
    /// attempt is abandoned after the connect timeout, and the loop keeps running meanwhile.
    func testSilentPeerTimesOutAndRetries() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                XCTAssertEqual(bind(fd, sa, len), 0)
                XCTAssertEqual(getsockname(fd, sa, &len), 0)
            }
        }
        XCTAssertEqual(listen(fd, 16), 0) // never accepted: the kernel completes the handshake, nobody answers
        let loop = try EventLoop()
        let logs = CapturedLog()
        var config = testConfig(port: Int(UInt16(bigEndian: addr.sin_port)), id: "silent")
        config.connectTimeout = 200_000_000
        config.backoffInitial = 10_000_000
        let client = try MQTTClient(config: config, loop: loop, logger: logs.logger)
        var tickTimes: [Int64] = []
        func tick() { tickTimes.append(nowNanos()); _ = try? loop.schedule(after: 10_000_000) { _ in tick() } }
        tick()
        let start = nowNanos()
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.counters.attempts >= 3 }, "state \(client.state)")
        XCTAssertTrue(try runUntil(loop) { client.state != .connecting }, "state \(client.state)")
        let elapsed = Double(nowNanos() - start) / 1e6
        XCTAssertEqual(client.state, .disconnected(reason: "no CONNACK within 0.2 s"))
        XCTAssertGreaterThanOrEqual(elapsed, 600, "three timeouts of 200 ms passed")
        // A loop held by a connect attempt would miss its 10 ms timer for a whole 200 ms timeout;
        // a loaded machine only delays it (a ratio of ticks to time failed beside stress-ng).
        let longestGap = zip(tickTimes.dropFirst(), tickTimes).map { Double($0 - $1) / 1e6 }.max() ?? .infinity
        XCTAssertLessThan(longestGap, 150, "the loop ran its 10 ms timer meanwhile (\(tickTimes.count) ticks)")
        XCTAssertEqual(logs.count(containing: "MQTT disconnected: no CONNACK within 0.2 s"), 1, "\(logs.all)")
    }

    func testTLSConnectsWithTheRightCAAndSaysWhyWithABadOne() throws {
        let broker = try Broker()
        broker.tls = try makeCertificates(in: broker.dir)
        try broker.start()
        let otherDir = broker.dir + "/other"
        try FileManager.default.createDirectory(atPath: otherDir, withIntermediateDirectories: true)
        let other = try makeCertificates(in: otherDir, name: "other-ca")
        let loop = try EventLoop()

        var good = testConfig(port: broker.port, id: "tls")
        good.tls = MQTTConfig.TLS(caFile: broker.tls!.ca)
        let client = try MQTTClient(config: good, loop: loop)
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.state == .connected }, "state \(client.state)")

        var bad = testConfig(port: broker.port, id: "badca")
        bad.tls = MQTTConfig.TLS(caFile: other.ca)
        let logs = CapturedLog()
        let refused = try MQTTClient(config: bad, loop: loop, logger: logs.logger)
        refused.start()
        XCTAssertTrue(try runUntil(loop) { refused.counters.attempts >= 3 }, "state \(refused.state)")
        XCTAssertTrue(try runUntil(loop) { refused.state != .connecting }, "state \(refused.state)")
        let expected = "A TLS error occurred. (mosquitto error 8): OpenSSL Error[0]: error:0A000086:SSL routines::certificate verify failed (ca_file \(other.ca))"
        XCTAssertEqual(refused.state, .disconnected(reason: expected))
        XCTAssertEqual(logs.count(containing: "MQTT disconnected: \(expected)"), 1, "\(logs.all)")
        XCTAssertEqual(refused.counters.connects, 0)
    }
}
