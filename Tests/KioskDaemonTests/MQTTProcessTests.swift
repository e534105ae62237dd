import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskPosix
import KioskTestTraits
import Testing
import KioskTesting

/// The real `kioskd` (headless) on a real broker: commands over MQTT seen through the control
/// socket, `offline` on SIGTERM, the last will on SIGKILL (KIOSK_SLOW_TESTS=1, see ProcessTests).
@Suite(.ownThreads, .serialized, .enabled(if: slowTests && MQTTTestBroker.available, "set KIOSK_SLOW_TESTS=1 (and install mosquitto) to run the kioskd MQTT process tests"))
struct MQTTProcessTests {
    func start(_ d: String, _ broker: MQTTTestBroker, round: Int) throws -> Child? {
        let path = write("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scene.score]
        kind = "counter"
        digits = 2
        [[scene.score.counter]]
        name = "HOME"
        [control]
        socket = "\(d)/c.sock"
        [mqtt]
        broker = "mqtt://127.0.0.1:\(broker.port)"
        id = "proc"
        keepalive = 5
        """, d)
        let child = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log\(round)")
        for _ in 0..<1200 {
            if ControlClient.socketAnswers("\(d)/c.sock") { return child }
            if !child.process.isRunning { break }
            usleep(25_000) // bounded polling of "the socket answers"
        }
        Issue.record("kioskd did not open its socket; its log:\n\(child.log)")
        return nil
    }

    func waitRetained(_ broker: MQTTTestBroker, _ topic: String, _ value: String, seconds: Double = 10) throws -> Bool {
        try waitRetained(broker, topic, seconds: seconds) { $0 == value }
    }

    func waitRetained(_ broker: MQTTTestBroker, _ topic: String, seconds: Double = 10, _ matches: (String) -> Bool) throws -> Bool {
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if let v = try broker.retained(topic), matches(v) { return true }
            usleep(50_000) // bounded polling of the retained value
        }
        return false
    }

    func get(_ d: String, _ path: String) throws -> ControlResponse {
        try ControlClient(socketPath: "\(d)/c.sock", timeout: 5).send(method: .GET, path: path)
    }

    @Test func sigtermPublishesOfflineAndSigkillLeavesTheLastWill() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let d = tempDir()
        guard let first = try start(d, broker, round: 0) else { return }
        #expect(try waitRetained(broker, "kioskd/proc/availability", "online"))
        // Discovery follows `online` (the render loop computes it once connected).
        #expect(try waitRetained(broker, "homeassistant/device/kioskd_proc/config") { $0.contains("\"counter_HOME\"") })
        try broker.publish("kioskd/proc/counter/HOME/set", "42")
        #expect(try waitRetained(broker, "kioskd/proc/counter/HOME", "42"))
        #expect(try get(d, "/counter/HOME").jsonObject?["value"] as? Int == 42)
        // Out of range: refused on MQTT as on the control socket.
        try broker.publish("kioskd/proc/counter/HOME/set", "100")
        let refused = "MQTT command refused: counter 'HOME': 100 is above the largest value 99"
        for _ in 0..<200 where !first.log.contains(refused) { usleep(25_000) } // bounded polling of the log line
        #expect(first.log.contains(refused), "\(first.log)")
        #expect(try get(d, "/counter/HOME").jsonObject?["value"] as? Int == 42)

        let t0 = Date()
        first.signal(SIGTERM)
        #expect(first.wait(seconds: 10))
        #expect(Date().timeIntervalSince(t0) < 5)
        #expect(try broker.retained("kioskd/proc/availability") == "offline")
        #expect(first.log.contains("MQTT stopped"), "\(first.log)")

        // The value was kept (durable state) and is published again at the next start.
        guard let second = try start(d, broker, round: 1) else { return }
        #expect(try waitRetained(broker, "kioskd/proc/availability", "online"))
        #expect(try broker.retained("kioskd/proc/counter/HOME") == "42")
        second.signal(SIGKILL)
        #expect(second.wait(seconds: 10))
        #expect(try waitRetained(broker, "kioskd/proc/availability", "offline", seconds: 10), "the broker publishes the last will")
    }
}
