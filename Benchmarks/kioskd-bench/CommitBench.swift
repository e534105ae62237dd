#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskCore
import KioskDaemon
import KioskState
import KioskTesting
import Logging

/// `kioskd-bench fsync`: this disk's floor for durable saves — write + fsync of a small file,
/// the whole `FileStateStore.save` sequence (temp file, fsync, .bak, rename, directory fsync)
/// and one `saveBatch` of two keys, through the journal (one fsync, a checkpoint every 64 KiB)
/// and straight into the state files (a checkpoint every batch) — each as operations per second.
struct FsyncProbe: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "fsync", abstract: "Measure this disk's fsync rate (the floor of acknowledged changes).")

    @Option(help: "Directory on the disk to measure (default: a new directory under /var/tmp).") var dir: String?
    @Option(help: "Operations per figure.") var count: Int = 500

    func run() throws {
        let d = dir ?? "/var/tmp/kioskd-fsync-\(getpid())"
        mkdir(d, 0o700)
        let r = try Self.measure(directory: d, count: count)
        print("fsync floor in \(d) (\(count) each):")
        print("  write + fsync, small file:            \(Int(r.writeFsync)) /s")
        print("  FileStateStore.save (2 fsyncs):       \(Int(r.save)) /s")
        print("  FileStateStore.saveBatch, 2 keys:     \(Int(r.batch2)) batches/s (journal: one fsync, a checkpoint every 64 KiB)")
        print("  the same into the state files:        \(Int(r.batch2Files)) batches/s (3 fsyncs; journal/files = \(String(format: "%.2f", r.batch2 / r.batch2Files))×)")
        if dir == nil { _ = try? FileManager.default.removeItem(atPath: d) }
    }

    struct Result { var writeFsync: Double; var save: Double; var batch2: Double; var batch2Files: Double }

    static func measure(directory d: String, count: Int) throws -> Result {
        let path = "\(d)/probe"
        let bytes = Array("kioskd-state 1 4 0\n1234".utf8)
        var t0 = nowNanos(.monotonic)
        for _ in 0..<count {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640)
            guard fd >= 0 else { throw KioskError(.system, "open \(path) failed", errno: errno) }
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            guard fsync(fd) == 0 else { throw KioskError(.system, "fsync \(path) failed", errno: errno) }
            close(fd)
        }
        let raw = Double(count) / (Double(nowNanos(.monotonic) - t0) / 1e9)
        unlink(path)
        let store = try FileStateStore(directory: "\(d)/state", logger: Logger(label: "bench"))
        defer { store.close() }
        t0 = nowNanos(.monotonic)
        for i in 0..<count { try store.save("probe", String(i)) }
        let save = Double(count) / (Double(nowNanos(.monotonic) - t0) / 1e9)
        t0 = nowNanos(.monotonic)
        for i in 0..<count { try store.saveBatch([("a", String(i)), ("b", String(i))]) }
        let batch = Double(count) / (Double(nowNanos(.monotonic) - t0) / 1e9)
        // A checkpoint after every batch, in the batch's time (kioskd runs them beside the commits).
        let files = try FileStateStore(directory: "\(d)/state-files", logger: Logger(label: "bench"), checkpoints: .manual)
        defer { files.close() }
        files.checkpointBytes = 0
        t0 = nowNanos(.monotonic)
        for i in 0..<count {
            try files.saveBatch([("a", String(i)), ("b", String(i))])
            files.checkpointIfDue()
        }
        let batchFiles = Double(count) / (Double(nowNanos(.monotonic) - t0) / 1e9)
        return Result(writeFsync: raw, save: save, batch2: batch, batch2Files: batchFiles)
    }
}

/// `kioskd-bench control-burst`: a real kioskd (headless, a 1 Hz clock on screen, a counter
/// scene beside it) and `clients` control-socket clients each sending `per-client` increments
/// on kept-alive connections: acknowledged changes per second, the longest frame gap during the
/// burst (from the status's heartbeat when kioskd has one, else from polling its frame count),
/// and whether every change was kept across a restart.
struct ControlBurstBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "control-burst", abstract: "Acknowledged counter changes per second through the control socket, and the frame gap meanwhile.")

    @Option(help: "The kioskd to run (default: next to kioskd-bench).") var kioskd: String?
    @Option(help: "Concurrent clients.") var clients: Int = 20
    @Option(help: "Increments per client.") var perClient: Int = 250

    func run() throws {
        guard let k = kioskd ?? Daemon.locate() else { throw ValidationError("no kioskd next to kioskd-bench; pass --kioskd") }
        let d = "/var/tmp/kioskd-burst-\(getpid())"
        mkdir(d, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: d) }
        let config = """
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
        let path = "\(d)/kioskd.toml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let sock = "\(d)/c.sock"
        var pid = try Self.spawn(k, path, log: "\(d)/kioskd.log")
        try Self.waitForSocket(sock, pid: pid, log: "\(d)/kioskd.log")
        sleep(3)
        // Frame gaps by polling the frame count (works on a kioskd without the heartbeat too).
        let poller = FramePoller(socket: sock)
        poller.start()
        let n = clients
        let burst = ControlBurst.run(socket: sock, clients: n, perClient: perClient) { c in
            [c % 2 == 0 ? "/counter/HOME/inc" : "/counter/AWAY/inc"]
        }
        usleep(300_000)
        let polledGap = poller.stop()
        let status = try UnixHTTPConnection(path: sock).request("GET", "/status").body
        let obj = (try? JSONSerialization.jsonObject(with: Data(status.utf8))) as? [String: Any] ?? [:]
        let heartbeat = (obj["frame_gap_ms"] as? [String: Any])?["last_minute"] as? Double
        let home = try Self.value(sock, "HOME"), away = try Self.value(sock, "AWAY")
        kill(pid, SIGTERM)
        var st: Int32 = 0
        waitpid(pid, &st, 0)
        pid = try Self.spawn(k, path, log: "\(d)/kioskd2.log")
        try Self.waitForSocket(sock, pid: pid, log: "\(d)/kioskd2.log")
        let kept = try Self.value(sock, "HOME") == home && Self.value(sock, "AWAY") == away
        kill(pid, SIGTERM)
        waitpid(pid, &st, 0)
        print("control-burst: \(k)")
        print("  \(n) clients × \(perClient) increments: \(burst.acknowledged) acknowledged in \(String(format: "%.2f", burst.seconds)) s = \(Int(burst.perSecond)) /s; failures \(burst.failures.count) \(burst.failures.prefix(2))")
        print("  values HOME \(home) AWAY \(away) (expected \(n / 2 * perClient) each); identical after restart: \(kept)")
        print("  longest frame gap during the burst: \(Int(polledGap)) ms (polled every 20 ms)" + (heartbeat.map { "; heartbeat, last minute: \(Int($0)) ms" } ?? "; no heartbeat in this kioskd's status"))
        if let c = obj["commits"] { print("  commits: \(c)") }
    }

    static func value(_ sock: String, _ counter: String) throws -> Int {
        let body = try UnixHTTPConnection(path: sock).request("GET", "/counter/\(counter)").body
        return ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?["value"] as? Int ?? -1
    }

    static func spawn(_ kioskd: String, _ config: String, log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = [kioskd, "--config", config, "--log-level", "warning"]
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, kioskd, &actions, nil, &cArgs, environ)
        guard rc == 0 else { throw KioskError(.system, "cannot start \(kioskd)", errno: rc) }
        return pid
    }

    static func waitForSocket(_ sock: String, pid: pid_t, log: String) throws {
        for _ in 0..<1200 {
            if (try? UnixHTTPConnection(path: sock).request("GET", "/status")) != nil { return }
            var st: Int32 = 0
            if waitpid(pid, &st, WNOHANG) == pid { break }
            usleep(25_000)
        }
        throw KioskError(.system, "kioskd did not answer on \(sock); its log: \((try? String(contentsOfFile: log, encoding: .utf8))?.suffix(400) ?? "")")
    }
}

/// Polls `frames` of the status every 20 ms on its own connection and keeps the longest time
/// between two polls that saw the count move (an upper bound of the frame gap, ±20 ms).
final class FramePoller: @unchecked Sendable {
    private let socket: String
    private let lock = NSLock()
    private var running = true
    private var longestMs = 0.0
    private let done = DispatchSemaphore(value: 0)
    init(socket: String) { self.socket = socket }

    func start() {
        Thread { [self] in
            defer { done.signal() }
            var conn = try? UnixHTTPConnection(path: socket)
            var lastFrames = -1
            var lastChange = nowNanos(.monotonic)
            while lock.withLock({ running }) {
                // A status refused (503 while the render loop is busy) or a connection closed is
                // asked again: the gap runs on until a status shows the frames moving.
                guard let c = conn ?? (try? UnixHTTPConnection(path: socket)) else { usleep(20_000); continue }
                conn = c
                guard let r = try? c.request("GET", "/status") else { conn = nil; usleep(20_000); continue }
                guard let o = (try? JSONSerialization.jsonObject(with: Data(r.body.utf8))) as? [String: Any],
                      let f = o["frames"] as? Int else { usleep(20_000); continue }
                let now = nowNanos(.monotonic)
                if f != lastFrames {
                    if lastFrames >= 0 { lock.withLock { longestMs = max(longestMs, Double(now - lastChange) / 1e6) } }
                    lastFrames = f
                    lastChange = now
                }
                usleep(20_000)
            }
        }.start()
    }

    /// Stops polling; the longest gap seen.
    func stop() -> Double {
        lock.withLock { running = false }
        done.wait()
        return lock.withLock { longestMs }
    }
}
