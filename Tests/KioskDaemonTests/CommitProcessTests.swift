import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskTestTraits
import Testing
import KioskTesting

/// Group commit with the real `kioskd` binary (KIOSK_SLOW_TESTS=1, see ProcessTests): a burst
/// of counter changes from 20 control-socket clients is acknowledged in full, kept across a
/// restart, and the 1 Hz clock on screen meanwhile keeps drawing: no gap between frames beyond
/// `maxGapMs` (a loose bound for loaded CI machines that still catches the old stalls of 4 to 30 s;
/// the 1.1 s target is judged by `kioskd-bench control-burst`, BENCHMARKS.md).
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct CommitProcessTests {
    static let maxGapMs = 3000.0
    func config(_ d: String) -> String {
        """
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scenes]
        order = ["clock", "score"]
        [scene.clock]
        kind = "clock"
        [scene.score]
        kind = "counter"
        digits = 6
        [[scene.score.counter]]
        name = "HOME"
        [[scene.score.counter]]
        name = "AWAY"
        [control]
        socket = "\(d)/c.sock"
        """
    }

    func waitForSocket(_ socket: String, _ child: Child) -> Bool {
        for _ in 0..<1200 {
            if ControlClient.socketAnswers(socket) { return true }
            if !child.process.isRunning { break }
            usleep(25_000)
        }
        Issue.record("kioskd did not open \(socket); its log:\n\(child.log)")
        return false
    }

    func get(_ socket: String, _ path: String) throws -> [String: Any] {
        try ControlClient(socketPath: socket, timeout: 10).send(method: .GET, path: path).jsonObject ?? [:]
    }

    @Test func twentyClientsBurstIsAcknowledgedKeptAndTheClockKeepsTicking() throws {
        let d = tempDir()
        let path = write(config(d), d)
        let sock = "\(d)/c.sock"
        let child = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log1")
        guard waitForSocket(sock, child) else { return }
        // Let the clock tick a few times so the heartbeat has frames to measure between.
        sleep(3)
        let before = try get(sock, "/status")
        let gapBefore = (before["frame_gap_ms"] as? [String: Any])?["since_start"] as? Double
        let clients = 20, perClient = 150
        let burst = ControlBurst.run(socket: sock, clients: clients, perClient: perClient) { c in
            [c % 2 == 0 ? "/counter/HOME/inc" : "/counter/AWAY/inc"]
        }
        #expect(burst.failures.isEmpty, "\(burst.failures)")
        #expect(burst.acknowledged == clients * perClient)
        let home = try get(sock, "/counter/HOME")["value"] as? Int
        let away = try get(sock, "/counter/AWAY")["value"] as? Int
        #expect(home == clients / 2 * perClient && away == clients / 2 * perClient, "HOME \(home ?? -1), AWAY \(away ?? -1)")
        let after = try get(sock, "/status")
        let gap = (after["frame_gap_ms"] as? [String: Any])?["last_minute"] as? Double
        let commits = after["commits"] as? [String: Any]
        print("burst: \(burst.acknowledged) acknowledged in \(burst.seconds) s (\(Int(burst.perSecond))/s); longest frame gap \(gap ?? -1) ms (before the burst \(gapBefore ?? -1) ms); commits \(commits ?? [:])")
        #expect(gap != nil && gap! <= Self.maxGapMs, "longest frame gap over the last minute \(gap ?? -1) ms (before the burst \(gapBefore ?? -1) ms)")
        // Fewer fsync rounds than changes: changes were committed in groups.
        if let batches = commits?["batches"] as? Int { #expect(batches < clients * perClient) }
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 20))

        let again = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log2")
        guard waitForSocket(sock, again) else { return }
        #expect(try get(sock, "/counter/HOME")["value"] as? Int == home)
        #expect(try get(sock, "/counter/AWAY")["value"] as? Int == away)
        again.signal(SIGTERM)
        #expect(again.wait(seconds: 20))
    }
}

/// 10 000 QoS 1 increments published at once on a real mosquitto: kioskd drops none of the
/// commands it receives (the pipeline's queue is not bounded), all are kept across a restart and
/// the clock on screen keeps ticking (KIOSK_SLOW_TESTS=1 and mosquitto). The broker's queue for
/// kioskd is raised to 20 000 (`max_queued_messages`; mosquitto's default is 1 000), so that a
/// debug kioskd on a loaded machine, reading slower than mosquitto_pub publishes, is not judged
/// by the broker's drops: with the defaults the count depends on the machine (BENCHMARKS.md).
@Suite(.ownThreads, .serialized, .enabled(if: slowTests && MQTTTestBroker.available, "set KIOSK_SLOW_TESTS=1 (and install mosquitto) to run the kioskd MQTT process tests"))
struct MQTTBurstProcessTests {
    func config(_ d: String, port: Int) -> String {
        """
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scenes]
        order = ["clock", "score"]
        [scene.clock]
        kind = "clock"
        [scene.score]
        kind = "counter"
        digits = 6
        [[scene.score.counter]]
        name = "HOME"
        [control]
        socket = "\(d)/c.sock"
        [mqtt]
        broker = "mqtt://127.0.0.1:\(port)"
        id = "burst"
        """
    }

    func value(_ sock: String) throws -> Int? {
        try ControlClient(socketPath: sock, timeout: 10).send(method: .GET, path: "/counter/HOME").jsonObject?["value"] as? Int
    }

    func waitOnline(_ broker: MQTTTestBroker) throws -> Bool {
        for _ in 0..<200 {
            if try broker.retained("kioskd/burst/availability") == "online" { return true }
            usleep(50_000) // bounded polling of the retained availability
        }
        return false
    }

    @Test func tenThousandQoS1IncrementsReceivedAreAllAppliedAndKept() throws {
        let broker = try MQTTTestBroker()
        try broker.start(extra: "max_queued_messages 20000\n")
        let d = tempDir()
        let path = write(config(d, port: broker.port), d)
        let sock = "\(d)/c.sock"
        let child = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log1")
        guard CommitProcessTests().waitForSocket(sock, child) else { return }
        #expect(try waitOnline(broker), "kioskd did not connect to the broker; its log:\n\(child.log)")
        sleep(2)
        let n = 10_000
        let lines = String(repeating: "1\n", count: n)
        try lines.write(toFile: "\(d)/lines", atomically: true, encoding: .utf8)
        let (status, out) = try runTool("/bin/sh", ["-c", "/usr/bin/mosquitto_pub -h 127.0.0.1 -p \(broker.port) -q 1 -t kioskd/burst/counter/HOME/inc -l < \(d)/lines"], dir: d)
        #expect(status == 0, "mosquitto_pub: \(out)")
        var seen: Int?
        for _ in 0..<600 {
            seen = try value(sock)
            if seen == n { break }
            usleep(100_000) // bounded polling of "every command applied"
        }
        #expect(seen == n, "applied \(seen ?? -1) of \(n); kioskd log:\n\(child.log.suffix(2000))")
        let st = try ControlClient(socketPath: sock, timeout: 10).send(method: .GET, path: "/status").jsonObject ?? [:]
        let gap = (st["frame_gap_ms"] as? [String: Any])?["last_minute"] as? Double
        print("MQTT burst: \(seen ?? -1) of \(n) applied; longest frame gap \(gap ?? -1) ms; commits \(st["commits"] ?? "none")")
        #expect(gap != nil && gap! <= CommitProcessTests.maxGapMs, "longest frame gap \(gap ?? -1) ms")
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 20))
        let again = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log2")
        guard CommitProcessTests().waitForSocket(sock, again) else { return }
        #expect(try value(sock) == seen)
        again.signal(SIGTERM)
        #expect(again.wait(seconds: 20))
    }
}
