import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskMQTTComponent
import KioskDaemonTesting
import KioskMQTT
import KioskPosix
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import KioskTestTraits
import Testing

/// The daemon on a real mosquitto broker: Home Assistant's view (discovery, retained state) and
/// its commands, each checked on the kiosk. The loop runs on the test's thread.
@Suite(.ownThreads, .serialized, .enabled(if: MQTTTestBroker.available, "mosquitto is not installed (scripts/apt-mqtt.txt)"))
struct MQTTBridgeTests {
    struct Rig {
        let broker: MQTTTestBroker
        let daemon: Daemon
        let loop: EventLoop
        let bridge: MQTTBridge
        let log: CapturedLog

        /// Runs the loop until every message the bridge published is acknowledged.
        func settle() throws {
            try pump(loop) { bridge.clientState == .connected && bridge.unacknowledged == 0 && bridge.clientView.snapshot.queued == 0 }
            try loop.runOnce(timeoutMs: 0)
            #expect(try pump(loop) { bridge.unacknowledged == 0 })
        }

        func counter() -> Int { daemon.kioskState().counters.first { $0.name == "HOME" }?.value ?? -1 }
        func png() -> [UInt8] { daemon.handle(.screenshot()).body }
    }

    /// A kiosk on the broker; `outputs`: `[[output]]` tables (one headless display each) in
    /// place of the one 160x90 display.
    func rig(port: Int? = nil, startBroker: Bool = true, broker given: MQTTTestBroker? = nil, digits: Int = 2,
             state: StateStore = MemoryStateStore(durability: .volatile), outputs: String = "", extra: String = "",
             tune: (inout MQTTConfig) -> Void = { _ in }) throws -> Rig {
        let broker = try given ?? MQTTTestBroker()
        if startBroker && given == nil { try broker.start() }
        let dir = tempDir()
        let path = write("""
        state = "volatile"
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "160x90"
        \(outputs)
        [scene.score]
        kind = "counter"
        digits = \(digits)
        [[scene.score.counter]]
        name = "HOME"
        label = "Home"
        [scene.clock]
        kind = "clock"
        [mqtt]
        broker = "mqtt://127.0.0.1:\(port ?? broker.port)"
        id = "k1"
        \(extra)
        """, dir)
        var config = try DaemonConfig.load(path: path, environment: [:])
        var m = try #require(config.mqtt)
        m.backoffInitial = 20_000_000
        m.backoffMax = 200_000_000
        tune(&m)
        config.mqtt = m
        let loop = try EventLoop()
        let log = CapturedLog()
        let displays: [any DisplayOutput] = outputs.isEmpty ? [try HeadlessDisplay(size: Size(width: 160, height: 90))]
            : try Backends.makeDisplays(config, loop: loop, logger: quietLogger).outputs
        let d = try Daemon(config: config, displays: displays, input: nil, state: state, loop: loop, logger: quietLogger)
        let bridge = try MQTTBridge(config: m, logger: log.logger)
        d.add(bridge)
        d.startAsKioskd(committedByTest: false)
        return Rig(broker: broker, daemon: d, loop: loop, bridge: bridge, log: log)
    }

    /// What kioskd publishes on kioskd/k1/error from now on, as Home Assistant would see it.
    final class ErrorWatch {
        let client: MQTTClient
        var seen: [String] = []

        /// Subscribed once a probe on the topic came back (the probe is then forgotten).
        init(_ r: Rig) throws {
            client = try MQTTClient(config: MQTTConfig(host: "127.0.0.1", port: r.broker.port, id: "ha"), loop: r.loop)
            client.subscribe("kioskd/k1/error") { [unowned self] in self.seen.append($0.text) }
            client.start()
            #expect(try pump(r.loop) { self.client.state == .connected })
            for _ in 0..<50 where seen.isEmpty {
                client.publish("kioskd/k1/error", "probe", qos: 1)
                try pump(r.loop, seconds: 0.1) { !self.seen.isEmpty }
            }
            #expect(try pump(r.loop) { self.seen.contains("probe") })
            seen.removeAll()
        }

        /// The messages published after `topic` got `payload` (at least one, waited for).
        func after(_ r: Rig, _ topic: String, _ payload: String) throws -> [String] {
            seen.removeAll()
            try r.broker.publish(topic, payload)
            #expect(try pump(r.loop) { !self.seen.isEmpty }, "nothing on kioskd/k1/error after \(payload) on \(topic)")
            return seen
        }
    }

    /// The screen once the digits have stopped rolling (bounded), decoded from the control API's
    /// screenshot.
    func settledPicture(_ r: Rig) throws -> Canvas {
        let counter = r.daemon.manager.scenes.compactMap { $0 as? CounterScene }.first
        #expect(try pump(r.loop, seconds: 3) { counter?.isRolling == false }, "the digits still roll after 3 s")
        let path = "\(r.broker.dir)/shot.png"
        _ = FileManager.default.createFile(atPath: path, contents: Data(r.png()))
        return try Canvas.loadPNG(path: path)
    }

    @Test func configReadsTheMQTTTableWithLocations() throws {
        let dir = tempDir()
        try "pw\n".write(toFile: "\(dir)/secret", atomically: true, encoding: .utf8)
        let c = try loadConfig("""
        [scene.clock]
        kind = "clock"
        [mqtt]
        broker = "mqtt://10.1.2.3"
        id = "hall-east"
        username = "kiosk"
        password_file = "secret"
        discovery_prefix = "ha"
        """, dir: dir)
        #expect(c.mqtt?.host == "10.1.2.3")
        #expect(c.mqtt?.id == "hall-east")
        #expect(c.mqtt?.password == "pw", "password_file is relative to the config file's folder")
        #expect(c.mqtt?.discoveryPrefix == "ha")
        #expect(try loadConfig("[scene.clock]\nkind = \"clock\"\n").mqtt == nil)
        let e = configError { _ = try loadConfig("[scene.clock]\nkind = \"clock\"\n[mqtt]\nbroker = \"mqtt://h\"\nkeepalive = 1\n", dir: dir) }
        #expect(e == "\(dir)/kioskd.toml:5: key 'mqtt.keepalive': 1 is out of range 5...65535")
        let t = configError { _ = try loadConfig("[scene.clock]\nkind = \"clock\"\n[mqtt]\nbroker = \"mqtt://h\"\nqueue_limit = true\n", dir: dir) }
        #expect(t == "\(dir)/kioskd.toml:5: key 'mqtt.queue_limit': expected an integer, saw a boolean")
    }

    @Test func commandTopicsBecomeControlCommands() throws {
        func cmd(_ t: String, _ p: String) -> Result<ControlCommand?, MQTTBridge.CommandError> {
            MQTTBridge.command(levels: t.split(separator: "/").map(String.init), payload: p)
        }
        #expect(try cmd("scene/set", "clock\n").get() == .scene(name: "clock"))
        #expect(try cmd("blank/set", "on").get() == .blank(on: true))
        #expect(try cmd("counter/HOME/set", "7.0").get() == .counter(name: "HOME", op: .set, value: 7))
        #expect(try cmd("counter/HOME/inc", "PRESS").get() == .counter(name: "HOME", op: .inc, value: nil))
        #expect(cmd("counter/HOME/set", "7.5") == .failure(.init(message: "counter/HOME/set: expected an integer, got \"7.5\"")))
        #expect(cmd("blank/set", "maybe") == .failure(.init(message: "blank/set: expected ON or OFF, got \"maybe\"")))
        #expect(try cmd("status/set", "x").get() == nil)
    }

    /// Home Assistant's flow: discovery and availability, then the number, the selects and the
    /// switch, each checked on the kiosk and in the retained state; a refused value publishes the
    /// control API's message on kioskd/k1/error and changes nothing.
    @Test func homeAssistantSeesAndDrivesTheKiosk() throws {
        let r = try rig()
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/availability") == "online")
        let discovery = try #require(try r.broker.retained("homeassistant/device/kioskd_k1/config"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(discovery.utf8)) as? [String: Any])
        let cmps = try #require(object["components"] as? [String: [String: Any]])
        #expect(cmps["counter_HOME"]?["command_topic"] as? String == "kioskd/k1/counter/HOME/set")
        #expect(cmps["counter_HOME"]?["max"] as? Int == 99)
        #expect(cmps["scene"]?["options"] as? [String] == ["score", "clock"])
        #expect((cmps["theme"]?["options"] as? [String])?.contains("dark") == true)
        #expect(try r.broker.retained("kioskd/k1/counter/HOME") == "0")
        #expect(try r.broker.retained("kioskd/k1/scene") == "score")
        #expect(try r.broker.retained("kioskd/k1/blank") == "OFF")
        let status = try #require(try r.broker.retained("kioskd/k1/status"))
        #expect(status.contains("\"output\":\"headless 160x90"), "\(status)")
        let zero = try settledPicture(r)

        // The number: set 7.
        try r.broker.publish(cmps["counter_HOME"]?["command_topic"] as? String ?? "", "7")
        #expect(try pump(r.loop) { r.counter() == 7 })
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/counter/HOME") == "7")
        #expect(r.daemon.handle(.counter(name: "HOME", op: .get, value: nil)).jsonObject?["value"] as? Int == 7)
        // The screen shows it (once the digits stopped rolling), as the same value set through
        // the control API does. The two may differ in a few edge pixels left by the roll's
        // partial redraws; a changed digit changes hundreds.
        let seven = try settledPicture(r)
        #expect(Pixels.differingPixels(seven, zero) > 300, "the screen hardly changed after the counter was set to 7")
        _ = try r.daemon.answer(.counter(name: "HOME", op: .set, value: 0))
        _ = try settledPicture(r)
        _ = try r.daemon.answer(.counter(name: "HOME", op: .set, value: 7))
        let control = try settledPicture(r)
        #expect(Pixels.differingPixels(seven, control) <= 30, "7 set through the control API looks different from 7 set through MQTT")

        // The buttons.
        try r.broker.publish("kioskd/k1/counter/HOME/inc", "PRESS")
        #expect(try pump(r.loop) { r.counter() == 8 })
        try r.broker.publish("kioskd/k1/counter/HOME/reset", "PRESS")
        #expect(try pump(r.loop) { r.counter() == 0 })
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/counter/HOME") == "0")

        // Out of range: the control API's message on kioskd/k1/error, nothing changes.
        let errors = try ErrorWatch(r)
        let seen = try errors.after(r, "kioskd/k1/counter/HOME/set", "100")
        let expected = try r.daemon.answer(.counter(name: "HOME", op: .set, value: 100)).errorMessage
        #expect(expected != nil)
        #expect(seen == [expected ?? ""])
        #expect(r.counter() == 0)
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/counter/HOME") == "0")
        // An unknown scene: the control API's 404 message.
        #expect(try errors.after(r, "kioskd/k1/scene/set", "nope") == [try r.daemon.answer(.scene(name: "nope")).errorMessage ?? ""])
        #expect(r.daemon.manager.current.name == "score")

        // The scene and theme selects.
        try r.broker.publish("kioskd/k1/scene/set", "clock")
        #expect(try pump(r.loop) { r.daemon.manager.current.name == "clock" })
        try r.broker.publish("kioskd/k1/theme/set", "dark")
        #expect(try pump(r.loop) { r.daemon.activeThemeName == "dark" })
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/scene") == "clock")
        #expect(try r.broker.retained("kioskd/k1/theme") == "dark")
        #expect(r.daemon.status().scene == "clock")

        // The switch: blank the panel.
        try r.broker.publish("kioskd/k1/blank/set", "ON")
        #expect(try pump(r.loop) { r.daemon.display.isBlanked })
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/blank") == "ON")
        #expect(r.daemon.status().blanked)
        try r.broker.publish("kioskd/k1/blank/set", "OFF")
        #expect(try pump(r.loop) { !r.daemon.display.isBlanked })

        errors.client.stop()
    }

    @Test func outputCommandTopicsNameOutputsBySafeLevels() throws {
        let outputs = ["HDMI-A-1", "Desk #2/left+"]
        func cmd(_ levels: [String], _ p: String) -> Result<ControlCommand?, MQTTBridge.CommandError> {
            MQTTBridge.command(levels: levels, payload: p, outputs: outputs)
        }
        let odd = KioskTopics.outputLevel("Desk #2/left+")
        #expect(odd.hasPrefix("Desk__2_left__") && odd.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-".contains($0)) }, "\(odd)")
        #expect(KioskTopics.outputLevel("HDMI-A-1") == "HDMI-A-1")
        #expect(KioskTopics.outputLevel("Desk #2/left#") != odd, "names differing only in replaced characters stay apart")
        #expect(KioskTopics(id: "k1").output("Desk #2/left+") == "kioskd/k1/output/\(odd)")
        #expect(try cmd(["output", "HDMI-A-1", "scene", "set"], " clock\n").get() == .scene(name: "clock", output: "HDMI-A-1"))
        #expect(try cmd(["output", odd, "scene", "set"], "score").get() == .scene(name: "score", output: "Desk #2/left+"))
        #expect(try cmd(["output", odd, "blank", "set"], "on").get() == .blank(on: true, output: "Desk #2/left+"))
        #expect(cmd(["output", odd, "blank", "set"], "dim") == .failure(.init(message: "output/\(odd)/blank/set: expected ON or OFF, got \"dim\"")))
        #expect(cmd(["output", "DSI-1", "scene", "set"], "clock")
                == .failure(.init(message: "output/DSI-1/scene/set: no output 'DSI-1'; outputs: HDMI-A-1, \(odd)")))
        #expect(MQTTBridge.command(levels: ["output", "HDMI-A-1", "scene", "set"], payload: "clock")
                == .failure(.init(message: "output/HDMI-A-1/scene/set: no output 'HDMI-A-1'; this kiosk has one output (use scene/set)")))
        let long = String(repeating: "x", count: 100)
        #expect(cmd(["output", long, "blank", "set"], "ON")
                == .failure(.init(message: "output/\(long.prefix(64))/blank/set: no output '\(long.prefix(64))'; outputs: HDMI-A-1, \(odd)")),
                "a long level is cut in the refusal")
        #expect(try cmd(["output", odd, "scene"], "x").get() == nil, "a state topic of ours")
        #expect(try cmd(["output", odd, "theme", "set"], "x").get() == nil)
    }

    /// With two outputs (one named oddly), Home Assistant gets a scene select and a blank switch
    /// per output; each changes only its output, and a refusal is published as on scene/set.
    @Test func homeAssistantDrivesEachOutput() throws {
        let odd = "Desk #2/left+"
        let r = try rig(outputs: """
        [[output]]
        connector = "HDMI-A-1"
        scenes = ["score"]
        [[output]]
        connector = "\(odd)"
        scenes = ["score", "clock"]
        """)
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        let discovery = try #require(try r.broker.retained("homeassistant/device/kioskd_k1/config"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(discovery.utf8)) as? [String: Any])
        let cmps = try #require(object["components"] as? [String: [String: Any]])
        #expect(cmps["scene"]?["options"] as? [String] == ["score"], "the first output's select stays")
        let hdmi = try #require(cmps["output_HDMI-A-1_scene"])
        #expect(hdmi["default_entity_id"] as? String == "select.kioskd_k1_scene_hdmi_a_1")
        #expect(hdmi["unique_id"] as? String == "kioskd_k1_output_HDMI-A-1_scene")
        #expect(hdmi["command_topic"] as? String == "kioskd/k1/output/HDMI-A-1/scene/set")
        #expect(hdmi["options"] as? [String] == ["score"])
        let level = KioskTopics.outputLevel(odd)
        let desk = try #require(cmps["output_\(level)_scene"])
        let deskState = try #require(desk["state_topic"] as? String)
        #expect(deskState == "kioskd/k1/output/\(level)/scene")
        #expect(!deskState.contains("+") && !deskState.contains("#") && deskState.split(separator: "/").count == 5, "\(deskState)")
        let entity = try #require(desk["default_entity_id"] as? String)
        #expect(entity.hasPrefix("select.kioskd_k1_scene_desk__2_left__") && entity.dropFirst(7).allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }, "\(entity)")
        #expect(desk["options"] as? [String] == ["score", "clock"])
        let deskBlank = try #require(cmps["output_\(level)_blank"])
        #expect((deskBlank["default_entity_id"] as? String)?.hasPrefix("switch.kioskd_k1_panel_blanked_desk__2_left__") == true)
        #expect(try r.broker.retained("kioskd/k1/output/HDMI-A-1/scene") == "score")
        #expect(try r.broker.retained(deskState) == "score")
        #expect(try r.broker.retained("kioskd/k1/output/\(level)/blank") == "OFF")

        // The second output's select changes the second output only.
        try r.broker.publish(try #require(desk["command_topic"] as? String), "clock")
        #expect(try pump(r.loop) { r.daemon.heads[1].manager.current.name == "clock" })
        try r.settle()
        #expect(r.daemon.heads[0].manager.current.name == "score")
        #expect(try r.broker.retained(deskState) == "clock")
        #expect(try r.broker.retained("kioskd/k1/scene") == "score")
        #expect(try r.broker.retained("kioskd/k1/output/HDMI-A-1/scene") == "score")

        // Its switch blanks the second output only.
        try r.broker.publish(try #require(deskBlank["command_topic"] as? String), "ON")
        #expect(try pump(r.loop) { r.daemon.heads[1].display.isBlanked })
        try r.settle()
        #expect(!r.daemon.heads[0].display.isBlanked)
        #expect(try r.broker.retained("kioskd/k1/output/\(level)/blank") == "ON")
        #expect(try r.broker.retained("kioskd/k1/blank") == "OFF")

        // Refusals: the control API's messages, nothing changes.
        let errors = try ErrorWatch(r)
        #expect(try errors.after(r, "kioskd/k1/output/HDMI-A-1/scene/set", "clock")
                == [try r.daemon.answer(.scene(name: "clock", output: "HDMI-A-1")).errorMessage ?? "(accepted)"])
        #expect(try errors.after(r, "kioskd/k1/output/\(level)/scene/set", "nope")
                == [try r.daemon.answer(.scene(name: "nope", output: odd)).errorMessage ?? "(accepted)"])
        #expect(try errors.after(r, "kioskd/k1/output/DSI-1/scene/set", "score") == ["output/DSI-1/scene/set: no output 'DSI-1'; outputs: HDMI-A-1, \(level)"])
        #expect(try errors.after(r, "kioskd/k1/output/\(level)/blank/set", "dim") == ["output/\(level)/blank/set: expected ON or OFF, got \"dim\""])
        #expect(r.daemon.heads.map(\.manager.current.name) == ["score", "clock"])
        #expect(r.daemon.heads[1].display.isBlanked)
        errors.client.stop()
    }

    /// Home Assistant restarted (it says `online` on homeassistant/status): discovery and state
    /// are published again, even when the broker lost them.
    @Test func homeAssistantOnlineRepublishesDiscovery() throws {
        let r = try rig()
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        try r.broker.publish("homeassistant/device/kioskd_k1/config", nil, retain: true)
        try r.broker.publish("kioskd/k1/counter/HOME", nil, retain: true)
        #expect(try r.broker.retained("homeassistant/device/kioskd_k1/config") == nil)
        try r.broker.publish("homeassistant/status", "online")
        #expect(try pump(r.loop) { r.log.count(containing: "Home Assistant is online") == 1 })
        try r.settle()
        #expect(try r.broker.retained("homeassistant/device/kioskd_k1/config")?.contains("\"counter_HOME\"") == true)
        #expect(try r.broker.retained("kioskd/k1/counter/HOME") == "0")
    }

    /// A command left retained on the broker reaches a connecting kiosk marked retained: it is
    /// not carried out (it would be again at every reconnect), and that is logged once.
    @Test func aRetainedCommandIsNotCarriedOutOnConnect() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        try broker.publish("kioskd/k1/counter/HOME/set", "5", retain: true)
        let r = try rig(broker: broker)
        #expect(try pump(r.loop) { r.log.count(containing: "ignored a retained command on kioskd/k1/counter/HOME/set") == 1 })
        try r.settle()
        #expect(r.counter() == 0)
        #expect(try r.broker.retained("kioskd/k1/counter/HOME") == "0")
        // A live command still works.
        try r.broker.publish("kioskd/k1/counter/HOME/set", "6")
        #expect(try pump(r.loop) { r.counter() == 6 })
    }

    /// A stop publishes `offline` and leaves the broker at once; the completion runs.
    @Test func stopPublishesOfflineWithinTwoSeconds() throws {
        let r = try rig()
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        var stopped = false
        let t0 = nowNanos()
        r.bridge.stop { stopped = true }
        #expect(try pump(r.loop, seconds: 3) { stopped })
        #expect(nowNanos() - t0 < 2_000_000_000)
        #expect(try r.broker.retained("kioskd/k1/availability") == "offline")
    }

    /// No broker: over 1 000 reconnect attempts the kiosk keeps drawing (the clock ticks), says
    /// why once, and answers a control request at once. (That the attempts leak no descriptors
    /// and no memory is MQTTClientTests' thousand-attempts test, in a process of its own where
    /// the counts are not disturbed by other tests.)
    @Test func brokerDownKeepsFramesComingAndLeaksNothing() throws {
        let port = try Loopback.freePort()
        let r = try rig(port: port, startBroker: false) { m in
            m.backoffInitial = 1_000_000
            m.backoffMax = 2_000_000
        }
        _ = try r.daemon.answer(.scene(name: "clock"))
        #expect(try pump(r.loop) { r.bridge.clientView.snapshot.counters.attempts >= 20 })
        let frames = r.daemon.manager.frameCount
        let t0 = nowNanos()
        #expect(try pump(r.loop, seconds: 30) { r.bridge.clientView.snapshot.counters.attempts >= 1020 && nowNanos() - t0 > 2_100_000_000 })
        #expect(r.daemon.manager.frameCount >= frames + 2, "the clock drew \(r.daemon.manager.frameCount - frames) frames in 2 s")
        #expect(r.log.count(containing: "MQTT disconnected: Connection refused") == 1, "\(r.log.all.prefix(5))")
        // A command through the control API meanwhile is answered at once.
        let c0 = nowNanos()
        #expect(try r.daemon.answer(.counter(name: "HOME", op: .inc, value: nil)).status == 200)
        #expect(nowNanos() - c0 < 100_000_000)
    }
}

/// A store whose batch commits wait until `open()` (a disk that stalls).
final class GatedStore: StateStore, @unchecked Sendable {
    // @unchecked: `inner` locks itself; `isOpen` is guarded by `cond`.
    let inner = MemoryStateStore(durability: .durable)
    private let cond = NSCondition()
    private var isOpen = false
    func open() { cond.lock(); isOpen = true; cond.broadcast(); cond.unlock() }
    func load(_ key: String) -> String? { inner.load(key) }
    func save(_ key: String, _ value: String) throws { try inner.save(key, value) }
    func saveBatch(_ changes: [(key: String, value: String)]) throws {
        cond.lock()
        while !isOpen { cond.wait() }
        cond.unlock()
        try inner.saveBatch(changes)
    }
}

extension MQTTBridgeTests {
    /// Counter commands go from the MQTT thread to the pipeline; while the disk stalls, at most
    /// `maxCommandsInPipeline` of them wait in kioskd's memory and reading from the broker
    /// pauses; once the disk comes back every command is applied (none lost: the broker held
    /// the rest meanwhile, with its default limits) and reading resumes.
    @Test func commandsWaitingForTheDiskAreBoundedAndNoneIsLost() throws {
        let store = GatedStore()
        let r = try rig(digits: 6, state: store)
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        let n = MQTTBridge.maxCommandsInPipeline + 500
        let d = r.broker.dir
        try String(repeating: "1\n", count: n).write(toFile: "\(d)/lines", atomically: true, encoding: .utf8)
        let (status, out) = try runTool("/bin/sh", ["-c", "/usr/bin/mosquitto_pub -h 127.0.0.1 -p \(r.broker.port) -q 1 -t kioskd/k1/counter/HOME/inc -l < \(d)/lines"])
        #expect(status == 0, "mosquitto_pub: \(out)")
        let bound = MQTTBridge.maxCommandsInPipeline
        #expect(try pump(r.loop, seconds: 30) { r.bridge.commandsInPipeline >= bound }, "in the pipeline: \(r.bridge.commandsInPipeline)")
        #expect(r.bridge.clientView.snapshot.readingPaused)
        try pump(r.loop, seconds: 0.5) { false }
        #expect(r.bridge.commandsInPipeline == bound, "reading went on past the bound")
        #expect(r.bridge.commandsInPipelinePeak == bound)
        #expect(r.counter() == 0, "nothing is shown before it is committed")
        store.open()
        // Shown first (the batch's values), then its commands answered and released.
        #expect(try pump(r.loop, seconds: 60) { r.counter() == n && r.bridge.commandsInPipeline == 0 },
                "applied \(r.counter()) of \(n), \(r.bridge.commandsInPipeline) still waiting")
        #expect(!r.bridge.clientView.snapshot.readingPaused)
        #expect(store.inner.load("counter.score.HOME") == String(n))
        r.daemon.pipeline.stop()
    }
}
