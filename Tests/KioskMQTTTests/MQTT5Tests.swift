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

/// MQTT 5: the maximum packet size told to the broker, the 3.1.1 path kept for brokers that do
/// not speak MQTT 5, and the reading pause.
final class MQTT5Tests: XCTestCase {
    /// A receiver for `size/#` with `maxMessageBytes` 1024 and a sender, both connected, the
    /// subscription in place (a probe came back).
    func pair(_ broker: Broker, _ loop: EventLoop, protocolVersion: MQTTConfig.ProtocolVersion, logs: CapturedLog) throws
        -> (sender: MQTTClient, receiver: MQTTClient, got: () -> [Int], clear: () -> Void) {
        let sender = try MQTTClient(config: testConfig(port: broker.port, id: "big-sender-\(protocolVersion.rawValue)"), loop: loop)
        var small = testConfig(port: broker.port, id: "receiver-\(protocolVersion.rawValue)")
        small.maxMessageBytes = 1024
        small.protocolVersion = protocolVersion
        let receiver = try MQTTClient(config: small, loop: loop, logger: logs.logger)
        final class Box { var got: [Int] = [] }
        let box = Box()
        receiver.subscribe("size/#") { box.got.append($0.payload.count) }
        receiver.start()
        sender.start()
        XCTAssertTrue(try runUntil(loop) { sender.state == .connected && receiver.state == .connected })
        var probes = 0
        while box.got.isEmpty && probes < 50 {
            sender.publish("size/probe", "1", qos: 1)
            try runUntil(loop, seconds: 0.1) { !box.got.isEmpty }
            probes += 1
        }
        XCTAssertFalse(box.got.isEmpty, "the receiver's subscription never took effect")
        box.got.removeAll()
        return (sender, receiver, { box.got }, { box.got.removeAll() })
    }

    /// MQTT 5: the broker is told the maximum packet size (`maxMessageBytes` + 4 096) and never
    /// sends a larger message: the receiver does not even read it (messagesIn does not count it).
    func testTheBrokerNeverSendsAMessageLargerThanTheMaximumPacketSize() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let logs = CapturedLog()
        let p = try pair(broker, loop, protocolVersion: .v5, logs: logs)
        XCTAssertEqual(p.receiver.protocolVersion, .v5)
        XCTAssertEqual(p.receiver.maximumPacketSize, 1024 + 4096)
        let before = p.receiver.counters.messagesIn
        p.sender.publish("size/big", [UInt8](repeating: 65, count: 64 * 1024), qos: 1)
        p.sender.publish("size/ok", [UInt8](repeating: 67, count: 1024), qos: 1)
        XCTAssertTrue(try runUntil(loop) { p.got().count >= 1 })
        try runFor(loop, seconds: 0.2)
        XCTAssertEqual(p.got(), [1024])
        XCTAssertEqual(p.receiver.counters.messagesIn, before + 1, "the 64 KiB message never reached the receiver")
        XCTAssertEqual(p.receiver.counters.oversized, 0)
        XCTAssertEqual(logs.count(containing: "larger than max_message_bytes"), 0)
    }

    /// MQTT 3.1.1 (`protocol = "3.1.1"`): the broker is told nothing; the large message is read
    /// and dropped on arrival, counted and logged once.
    func testWithMQTT311ALargerMessageIsDroppedOnArrival() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let logs = CapturedLog()
        let p = try pair(broker, loop, protocolVersion: .v311, logs: logs)
        XCTAssertEqual(p.receiver.protocolVersion, .v311)
        p.sender.publish("size/big", [UInt8](repeating: 65, count: 64 * 1024), qos: 1)
        p.sender.publish("size/ok", [UInt8](repeating: 67, count: 1024), qos: 1)
        XCTAssertTrue(try runUntil(loop) { p.got().count >= 1 && p.receiver.counters.oversized == 1 })
        XCTAssertEqual(p.got(), [1024])
        XCTAssertEqual(logs.count(containing: "larger than max_message_bytes"), 1)
    }

    /// A broker that answers an MQTT 5 CONNECT with 3.1.1's "unacceptable protocol version"
    /// (a fake one on loopback): the client says so once and connects with 3.1.1.
    func testABrokerWithoutMQTT5IsSpokenToIn311() throws {
        let fake = try FakeV3Broker()
        let loop = try EventLoop()
        let logs = CapturedLog()
        var config = testConfig(port: fake.port, id: "old")
        config.backoffInitial = 10_000_000
        let client = try MQTTClient(config: config, loop: loop, logger: logs.logger)
        client.start()
        XCTAssertTrue(try runUntil(loop) { client.state == .connected }, "state \(client.state); \(logs.all)")
        XCTAssertEqual(client.protocolVersion, .v311)
        XCTAssertEqual(client.view.snapshot.protocolVersion, .v311)
        XCTAssertEqual(fake.levels, [5, 4], "an MQTT 5 CONNECT, then a 3.1.1 one")
        XCTAssertEqual(logs.count(containing: "speaking MQTT 3.1.1 from now on"), 1, "\(logs.all)")
    }

    /// While reading is paused, messages wait (at the broker, in the socket); resumed, they all
    /// arrive, in order.
    func testPausedReadingHoldsMessagesUntilResumed() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let logs = CapturedLog()
        let p = try pair(broker, loop, protocolVersion: .v5, logs: logs)
        p.receiver.pauseReading(true)
        XCTAssertTrue(p.receiver.view.snapshot.readingPaused)
        for i in 1...50 { p.sender.publish("size/n", [UInt8](repeating: 1, count: i), qos: 1) }
        try runFor(loop, seconds: 0.3)
        XCTAssertEqual(p.got(), [], "nothing is read while paused")
        XCTAssertEqual(p.receiver.state, .connected)
        p.receiver.pauseReading(false)
        XCTAssertTrue(try runUntil(loop) { p.got().count == 50 })
        XCTAssertEqual(p.got(), Array(1...50))
    }
}

/// Answers CONNECT like an MQTT 3.1.1-only broker: level 5 → CONNACK "unacceptable protocol
/// version" (3.1.1 form) and close; level 4 → CONNACK accepted, then reads and ignores
/// everything. One thread, two connections at most.
final class FakeV3Broker: @unchecked Sendable {
    // @unchecked: `seen` is guarded by `lock`; the listening socket is the thread's.
    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var seen: [UInt8] = []
    var levels: [UInt8] { lock.lock(); defer { lock.unlock() }; return seen }

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        a.sin_port = 0
        let rc = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard rc == 0, listen(listener, 4) == 0 else { throw Posix.error("bind/listen", errno: errno) }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        port = Int(UInt16(bigEndian: a.sin_port))
        fd = listener
        let fd = listener
        Thread.detachNewThread { [self] in
            for _ in 0..<2 {
                let c = accept(fd, nil, nil)
                guard c >= 0 else { return }
                var buf = [UInt8](repeating: 0, count: 512)
                let n = read(c, &buf, buf.count)
                guard n > 8 else { close(c); continue }
                // Fixed header, remaining length (1–4 bytes), protocol name (2 + 4), level.
                var i = 1
                while i < 5 && buf[i] & 0x80 != 0 { i += 1 }
                let level = buf[i + 7]
                lock.lock(); seen.append(level); lock.unlock()
                if level == 4 {
                    let accepted: [UInt8] = [0x20, 0x02, 0x00, 0x00]
                    _ = write(c, accepted, 4)
                    // Keep the connection; read until the client goes.
                    while read(c, &buf, buf.count) > 0 {}
                    close(c)
                    return
                }
                let refused: [UInt8] = [0x20, 0x02, 0x00, 0x01] // 3.1.1: unacceptable protocol version
                _ = write(c, refused, 4)
                close(c)
            }
        }
    }

    deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }
}
