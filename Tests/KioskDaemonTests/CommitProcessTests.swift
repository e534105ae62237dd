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
        let gapBefore = gapMs(before, "since_start")
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
        let gap = gapMs(after, "last_minute")
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

/// 10 000 QoS 1 increments published at once on a real mosquitto with its DEFAULT limits
/// (`max_queued_messages` 1000, `max_inflight_messages` 20): kioskd reads the broker's socket on
/// its own thread (`kioskd-mqtt`) and hands each command to the pipeline without the render
/// loop, so none is dropped by the broker; all are applied, kept across a restart, and the
/// clock on screen keeps ticking (KIOSK_SLOW_TESTS=1 and mosquitto).
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

    func statusOf(_ sock: String) throws -> [String: Any] {
        try ControlClient(socketPath: sock, timeout: 10).send(method: .GET, path: "/status").jsonObject ?? [:]
    }

    func waitOnline(_ broker: MQTTTestBroker) throws -> Bool {
        for _ in 0..<200 {
            if try broker.retained("kioskd/burst/availability") == "online" { return true }
            usleep(50_000) // bounded polling of the retained availability
        }
        return false
    }

    /// A kioskd connected to `broker`, its clock ticking for a while (frames for the heartbeat).
    func start(_ broker: MQTTTestBroker, _ d: String) throws -> (Child, String, String)? {
        let path = write(config(d, port: broker.port), d)
        let sock = "\(d)/c.sock"
        let child = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log1")
        guard CommitProcessTests().waitForSocket(sock, child) else { return nil }
        #expect(try waitOnline(broker), "kioskd did not connect to the broker; its log:\n\(child.log)")
        sleep(2)
        return (child, path, sock)
    }

    @Test func tenThousandQoS1IncrementsWithTheBrokersDefaultLimitsAreAllAppliedAndKept() throws {
        let broker = try MQTTTestBroker()
        try broker.start() // mosquitto's defaults: max_queued_messages 1000, max_inflight_messages 20
        let d = tempDir()
        guard let (child, path, sock) = try start(broker, d) else { return }
        let n = 10_000
        let lines = String(repeating: "1\n", count: n)
        try lines.write(toFile: "\(d)/lines", atomically: true, encoding: .utf8)
        let (status, out) = try runTool("/bin/sh", ["-c", "/usr/bin/mosquitto_pub -h 127.0.0.1 -p \(broker.port) -q 1 -t kioskd/burst/counter/HOME/inc -l < \(d)/lines"])
        #expect(status == 0, "mosquitto_pub: \(out)")
        var seen: Int?
        var same = 0
        for _ in 0..<600 {
            let v = try value(sock)
            if v == n { seen = v; break }
            // Settled below n (nothing more comes for 3 s): the rest was dropped.
            same = v == seen ? same + 1 : 0
            seen = v
            if same >= 30 { break }
            usleep(100_000) // bounded polling of "every command applied"
        }
        let st = try statusOf(sock)
        let gap = gapMs(st, "last_minute")
        print("MQTT burst with the broker's default limits: \(seen ?? -1) of \(n) applied; longest frame gap \(gap ?? -1) ms; commits \(st["commits"] ?? "none")")
        #expect(seen == n, "applied \(seen ?? -1) of \(n); broker log:\n\((try? String(contentsOfFile: "\(broker.dir)/broker.log", encoding: .utf8))?.suffix(1000) ?? "")\nkioskd log:\n\(child.log.suffix(2000))")
        #expect(gap != nil && gap! <= CommitProcessTests.maxGapMs, "longest frame gap \(gap ?? -1) ms")
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 20))
        let again = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log2")
        guard CommitProcessTests().waitForSocket(sock, again) else { return }
        #expect(try value(sock) == seen)
        again.signal(SIGTERM)
        #expect(again.wait(seconds: 20))
    }

    /// Peak RSS (VmHWM) and current RSS (VmRSS) of `pid`, in KiB.
    func memory(_ pid: Int32) -> (hwm: Int, rss: Int) {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return -1 }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
        }
        return (field("VmHWM:"), field("VmRSS:"))
    }

    /// One 64 MB message on a counter's `inc` topic (whose payload is ignored): with MQTT 5 the
    /// broker is told kioskd's maximum packet size and never sends it, so kioskd's peak RSS grows
    /// by at most 16 MB and the clock keeps ticking; the counter is not incremented, and a small
    /// command right after it is carried out. KIOSK_BIG_MESSAGE_MB sets another size (255: the
    /// benchmark's second row).
    @Test func aHugeMessageIsNeverReadIntoMemory() throws {
        let broker = try MQTTTestBroker()
        try broker.start()
        let d = tempDir()
        guard let (child, _, sock) = try start(broker, d) else { return }
        let mb = Int(ProcessInfo.processInfo.environment["KIOSK_BIG_MESSAGE_MB"] ?? "") ?? 64
        let big = "\(d)/big"
        #expect(FileManager.default.createFile(atPath: big, contents: nil))
        let h = try FileHandle(forWritingTo: URL(fileURLWithPath: big))
        let chunk = Data(repeating: UInt8(ascii: "7"), count: 1 << 20)
        for _ in 0..<mb { h.write(chunk) }
        try h.close()
        let pid = child.process.pid
        let before = memory(pid)
        let (status, out) = try runTool("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-q", "1", "-t", "kioskd/burst/counter/HOME/inc", "-f", big])
        #expect(status == 0, "mosquitto_pub: \(out)")
        unlink(big)
        try broker.publish("kioskd/burst/counter/HOME/set", "5")
        var v: Int?
        for _ in 0..<300 {
            v = try value(sock)
            if v == 5 { break }
            usleep(100_000) // bounded polling of the small command after the big one
        }
        #expect(v == 5, "the command after the big message was not carried out; kioskd log:\n\(child.log.suffix(2000))")
        sleep(1)
        let after = memory(pid)
        let st = try statusOf(sock)
        let gap = gapMs(st, "last_minute")
        let growthMB = Double(after.hwm - before.rss) / 1024
        print("\(mb) MB message: RSS \(before.rss / 1024) MB before, peak \(after.hwm / 1024) MB after (growth \(growthMB) MB); longest frame gap \(gap ?? -1) ms")
        #expect(growthMB <= 16, "peak RSS grew by \(growthMB) MB")
        #expect(gap != nil && gap! <= CommitProcessTests.maxGapMs, "longest frame gap \(gap ?? -1) ms")
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 20))
    }
}

/// The frame gap `key` of a status (a whole number of milliseconds is read as an integer).
private func gapMs(_ status: [String: Any], _ key: String) -> Double? {
    let v = (status["frame_gap_ms"] as? [String: Any])?[key]
    return (v as? Double) ?? (v as? Int).map(Double.init)
}
