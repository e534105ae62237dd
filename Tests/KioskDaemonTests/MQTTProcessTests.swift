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

    /// Home Assistant's name for the kiosk set with `kioskctl config set` is published at once and
    /// again after a restart: the bridge starts with the settings layer over the file.
    @Test func theNameSetFromTheLayerIsPublishedAfterARestartToo() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let d = tempDir()
        let topic = "homeassistant/device/kioskd_proc/config"
        let named = { (name: String) in { (v: String) in v.contains("\"device\":{\"identifiers\":[\"kioskd_proc\"],\"manufacturer\":\"kioskd\",\"model\":\"kiosk display\",\"name\":\"\(name)\"}") } }
        guard let first = try start(d, broker, round: 0) else { return }
        #expect(try waitRetained(broker, topic, named("kioskd proc")))
        let set = try kioskctl(["config", "set", "homeassistant.name", "Hall scoreboard", "--socket", "\(d)/c.sock"])
        #expect(set.0 == 0, "\(set.2)")
        #expect(try waitRetained(broker, topic, named("Hall scoreboard")), "\((try? broker.retained(topic)) ?? "none")")
        first.signal(SIGKILL)
        #expect(first.wait(seconds: 10))
        try broker.publish(topic, nil, retain: true) // forgotten: the next start must publish it again
        #expect(try waitRetained(broker, "kioskd/proc/availability", "offline"))

        guard let second = try start(d, broker, round: 1) else { return }
        #expect(try waitRetained(broker, topic, named("Hall scoreboard")), "after the restart: \((try? broker.retained(topic)) ?? "none")")
        second.signal(SIGTERM)
        #expect(second.wait(seconds: 10))
    }
}
