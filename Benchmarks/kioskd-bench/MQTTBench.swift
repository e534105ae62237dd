#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskState
import KioskConfig
import KioskTesting
import KioskCore
import KioskDaemon
import KioskMQTT
import KioskPosix
import KioskRender
import Logging

/// MQTT figures on a mosquitto of the benchmark's own (loopback): a counter command published by
/// a client → the kiosk's state changed with the frame requested (median, p99), and the idle CPU
/// of a kioskd connected to the broker against the same kioskd without `[mqtt]`.
enum MQTTBench {
    static let mosquitto = "/usr/sbin/mosquitto"

    static func run(res: Results, size: Size, runs: Int, idleSeconds: Double, log: Progress) throws {
        guard access(mosquitto, X_OK) == 0 else {
            res.notes.append("mosquitto is not installed (\(mosquitto)): the MQTT rows are missing (apt-get install mosquitto, scripts/apt-mqtt.txt)")
            log.say("MQTT skipped: no \(mosquitto)")
            return
        }
        let dir = "/tmp/kioskd-bench-mqtt-\(getpid())"
        mkdir(dir, 0o700)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let broker = try startBroker(dir: dir)
        defer { kill(broker.pid, SIGTERM); var st: Int32 = 0; waitpid(broker.pid, &st, 0) }

        log.say("MQTT command → flip request, \(runs) commands")
        let latency = try commandLatency(port: broker.port, dir: dir, size: size, runs: runs)
        res.add(Row(section: "mqtt", name: "MQTT command → flip request (loopback broker)", size: size, kioskd: .samples(latency),
                    vsFloor: false, note: "target ≤ 5 ms median", key: "mqtt.command_to_flip"))

        guard let kioskd = Daemon.locate() else {
            res.notes.append("kioskd not built next to kioskd-bench: the MQTT idle row is missing")
            return
        }
        log.say("kioskd clock idle, with and without MQTT, \(fmt(idleSeconds, 0)) s each")
        let plain = try Daemon.writeConfig(kind: "clock", size: size, dir: dir)
        let connected = "\(dir)/kioskd-clock-mqtt.toml"
        let text = try String(contentsOfFile: plain, encoding: .utf8)
            + "\n[mqtt]\nbroker = \"mqtt://127.0.0.1:\(broker.port)\"\nid = \"bench\"\n"
        try text.write(toFile: connected, atomically: true, encoding: .utf8)
        let without = try Daemon.run(kioskd: kioskd, config: plain, dir: dir, holdSeconds: idleSeconds)
        let with = try Daemon.run(kioskd: kioskd, config: connected, dir: dir, holdSeconds: idleSeconds)
        res.add(Row(section: "mqtt", name: "kioskd clock idle, connected to a broker: CPU s per hour", size: size,
                    kioskd: .value(with.idleCPUPerHour, unit: "CPU s/h"), vsFloor: false,
                    note: "unconnected \(fmt(without.idleCPUPerHour, 2)); difference \(fmt(with.idleCPUPerHour - without.idleCPUPerHour, 2)) (target ≤ +0.5)",
                    key: "mqtt.idle_cpu"))
    }

    /// mosquitto on a free loopback port; waits until it accepts connections.
    static func startBroker(dir: String) throws -> (pid: pid_t, port: Int) {
        let port = try Loopback.freePort()
        let conf = "\(dir)/mosquitto.conf"
        try "listener \(port) 127.0.0.1\npersistence false\nuser root\nallow_anonymous true\nset_tcp_nodelay true\n".write(toFile: conf, atomically: true, encoding: .utf8)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "\(dir)/mosquitto.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = [mosquitto, "-c", conf]
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, mosquitto, &actions, nil, &cArgs, environ)
        guard rc == 0 else { throw KioskError(.system, "cannot start \(mosquitto): \(String(cString: strerror(rc)))", errno: rc) }
        let deadline = nowNanos(.monotonic) + 5_000_000_000
        while !Loopback.accepts(port) {
            guard nowNanos(.monotonic) < deadline else {
                kill(pid, SIGKILL)
                throw KioskError(.system, "mosquitto did not listen on 127.0.0.1:\(port) within 5 s")
            }
            usleep(5_000)
        }
        return (pid, port)
    }

    /// A kiosk (counter scene, headless) and a client on one loop: the client publishes
    /// `kioskd/bench/counter/HOME/set`, the time runs until the kiosk's state has the new value
    /// (the end of the loop iteration that carried the command out and asked for the frame).
    static func commandLatency(port: Int, dir: String, size: Size, runs: Int) throws -> Samples {
        let path = "\(dir)/latency.toml"
        try """
        state = "volatile"
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "\(size)"
        [scene.score]
        kind = "counter"
        digits = 3
        [[scene.score.counter]]
        name = "HOME"
        [mqtt]
        broker = "mqtt://127.0.0.1:\(port)"
        id = "bench"
        """.write(toFile: path, atomically: true, encoding: .utf8)
        let config = try DaemonConfig.load(path: path, environment: [:])
        guard let m = config.mqtt else { throw KioskError(.config, "\(path): no [mqtt]") }
        let loop = try EventLoop()
        let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        let daemon = try KioskDaemon.Daemon(config: config, display: try HeadlessDisplay(size: size), input: nil,
                                state: MemoryStateStore(durability: .volatile), loop: loop, logger: quiet)
        let bridge = try MQTTBridge(config: m, logger: quiet)
        daemon.add(bridge)
        daemon.start()
        daemon.startPipeline()  // as kioskd starts it: counter commands are kept by the pipeline
        daemon.startComponents()
        let sender = try MQTTClient(config: MQTTConfig(host: "127.0.0.1", port: port, id: "bench-sender"), loop: loop, logger: quiet)
        sender.start()
        var changedAt: Int64 = 0
        var lastValue = -1
        daemon.changes.observe { state in
            if let v = state.counters.first?.value, v != lastValue { lastValue = v; changedAt = nowNanos(.monotonic) }
        }
        func until(_ seconds: Double, _ cond: () -> Bool) throws {
            let end = nowNanos(.monotonic) + Int64(seconds * 1e9)
            while !cond() {
                guard nowNanos(.monotonic) < end else { throw KioskError(.system, "MQTT bench: no answer within \(seconds) s") }
                try loop.runOnce(timeoutMs: 5)
            }
        }
        try until(10) { bridge.clientState == .connected && sender.state == .connected && bridge.unacknowledged == 0 }
        // The command subscriptions are in place once a first command comes through.
        var warm = 0
        while lastValue != 500 && warm < 100 {
            sender.publish("kioskd/bench/counter/HOME/set", "500", qos: 1)
            let end = nowNanos(.monotonic) + 100_000_000
            while lastValue != 500 && nowNanos(.monotonic) < end { try loop.runOnce(timeoutMs: 5) }
            warm += 1
        }
        var samples: [Double] = []
        for i in 0..<runs {
            let v = i % 2 == 0 ? 1 : 2
            // What the previous command published is acknowledged first.
            try until(5) { bridge.unacknowledged == 0 }
            let t0 = nowNanos(.monotonic)
            sender.publish("kioskd/bench/counter/HOME/set", String(v), qos: 1)
            try until(5) { lastValue == v }
            samples.append(Double(changedAt - t0) / 1e6)
        }
        sender.stop()
        var stopped = false
        bridge.stop { stopped = true }
        try until(3) { stopped }
        daemon.shutdown()
        return Samples(samples)
    }

}
