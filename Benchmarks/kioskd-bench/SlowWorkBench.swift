#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskCore
import KioskTesting
import Synchronization

/// `kioskd-bench slow-work`: a real kioskd (headless, the 1 Hz clock on screen, a paint scene
/// beside it) on a slow disk — every fsync made to wait `--fsync-ms` by `libKioskSlowSync.so`
/// (LD_PRELOAD) — while `--screenshots` screenshots, `--saves` painting saves and `--reloads`
/// reloads are asked for at once on the control socket: the clock's longest frame gap meanwhile
/// (polled from `frames` in the status every 20 ms, and the status's own heartbeat), and what
/// the requests were answered. Several `--kioskd` are run one after the other in the same run
/// (an older build beside this one).
struct SlowWorkBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-work",
        abstract: "The clock's longest frame gap while screenshots, painting saves and reloads are asked for at once on a slow disk.")

    @OptionGroup var disk: SlowDiskOptions
    @Option(help: "How long every fsync waits (ms).") var fsyncMs: Int = 2000
    @Option(help: "Screenshots asked for.") var screenshots: Int = 20
    @Option(help: "Painting saves asked for.") var saves: Int = 20
    @Option(help: "Reloads asked for (by 20 clients, one after the other on each).") var reloads: Int = 50
    @Option(help: "Frame size of the headless display.") var size: String = "1280x720"
    @Option(help: "Seconds to keep measuring after the last answer.") var tailSeconds: Double = 2

    func run() throws {
        let (binaries, lib) = try disk.resolve()
        print("slow-work: every fsync waits \(fsyncMs) ms (\(lib)); \(screenshots) screenshots, \(saves) painting saves, \(reloads) reloads at once; clock at \(size)")
        for k in binaries {
            let r = try Self.measure(kioskd: k, lib: lib, fsyncMs: fsyncMs, screenshots: screenshots, saves: saves, reloads: reloads,
                                     size: size, tailSeconds: tailSeconds)
            print("  \(k)")
            print("    longest frame gap: \(Int(r.polledGapMs)) ms polled" + (r.heartbeatMs.map { ", \(Int($0)) ms heartbeat (last minute)" } ?? ""))
            for (kind, tally) in r.answers.sorted(by: { $0.key < $1.key }) {
                let statuses = tally.statuses.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key)" }.joined(separator: ", ")
                print("    \(kind): \(statuses); last answer after \(String(format: "%.1f", tally.lastSeconds)) s" + (tally.sample.map { "; e.g. \($0)" } ?? ""))
            }
            print("    paintings on disk: \(r.paintingsOnDisk)")
        }
    }

    struct Tally {
        var statuses: [Int: Int] = [:]
        var lastSeconds = 0.0
        var sample: String?
    }

    struct Outcome {
        var polledGapMs: Double
        var heartbeatMs: Double?
        var answers: [String: Tally]
        var paintingsOnDisk: Int
    }

    static func measure(kioskd: String, lib: String, fsyncMs: Int, screenshots: Int, saves: Int, reloads: Int, size: String,
                        tailSeconds: Double) throws -> Outcome {
        let d = "/var/tmp/kioskd-slow-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        mkdir(d, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: d) }
        let config = """
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "\(size)"
            [scenes]
            order = ["clock", "paint"]
            [scene.clock]
            kind = "clock"
            [scene.paint]
            kind = "paint"
            [control]
            socket = "\(d)/c.sock"

            """
        let path = "\(d)/kioskd.toml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let sock = "\(d)/c.sock", log = "\(d)/kioskd.log"
        let pid = try spawn(kioskd, path, log: log, env: ["LD_PRELOAD": lib, "KIOSK_BENCH_FSYNC_MS": "\(fsyncMs)"])
        defer {
            kill(pid, SIGTERM)
            var st: Int32 = 0
            waitpid(pid, &st, 0)
        }
        try ControlBurstBench.waitForSocket(sock, pid: pid, log: log)
        sleep(3)
        let poller = FramePoller(socket: sock)
        poller.start()
        usleep(1_200_000) // a second of ordinary ticks before the burst

        // Every client connects first, then all send at once.
        var jobs: [(kind: String, requests: [(String, String)])] = []
        for _ in 0..<screenshots { jobs.append(("screenshot", [("POST", "/screenshot")])) }
        for _ in 0..<saves { jobs.append(("paint save", [("POST", "/paint/save")])) }
        let reloadClients = min(reloads, 20)
        for c in 0..<reloadClients {
            let n = reloads / reloadClients + (c < reloads % reloadClients ? 1 : 0)
            jobs.append(("reload", Array(repeating: ("POST", "/reload"), count: n)))
        }
        let answers = Mutex<[String: Tally]>([:])
        let go = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        let t0 = Mutex<Int64>(0)
        for job in jobs {
            Thread {
                defer { done.signal() }
                guard let conn = try? UnixHTTPConnection(path: sock, timeout: 120) else {
                    answers.withLock { $0[job.kind, default: Tally()].statuses[-1, default: 0] += 1 }
                    return
                }
                go.wait()
                for (method, target) in job.requests {
                    let r = try? conn.request(method, target)
                    let at = Double(nowNanos(.monotonic) - t0.withLock { $0 }) / 1e9
                    answers.withLock { answers in
                        var t = answers[job.kind, default: Tally()]
                        t.statuses[r?.status ?? -1, default: 0] += 1
                        t.lastSeconds = max(t.lastSeconds, at)
                        if let r, r.status != 200, t.sample == nil { t.sample = "\(r.status) \(r.body.prefix(160))" }
                        answers[job.kind] = t
                    }
                }
            }.start()
        }
        usleep(300_000)
        t0.withLock { $0 = nowNanos(.monotonic) }
        for _ in jobs { go.signal() }
        for _ in jobs { done.wait() }
        usleep(UInt32(tailSeconds * 1e6))
        let polled = poller.stop()
        let status = try UnixHTTPConnection(path: sock).request("GET", "/status").body
        let obj = (try? JSONSerialization.jsonObject(with: Data(status.utf8))) as? [String: Any] ?? [:]
        let heartbeat = (obj["frame_gap_ms"] as? [String: Any])?["last_minute"] as? Double
        let paintings = ((try? FileManager.default.contentsOfDirectory(atPath: "\(d)/state/paintings")) ?? []).filter { $0.hasSuffix(".png") }.count
        return Outcome(polledGapMs: polled, heartbeatMs: heartbeat, answers: answers.withLock { $0 }, paintingsOnDisk: paintings)
    }

    /// Starts `kioskd --config CONFIG` with `env` added to this process's environment.
    static func spawn(_ kioskd: String, _ config: String, log: String, env: [String: String]) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = [kioskd, "--config", config, "--log-level", "warning"]
        var environment = ProcessInfo.processInfo.environment
        for (k, v) in env { environment[k] = v }
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cArgs + cEnv { free(p) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, kioskd, &actions, nil, &cArgs, &cEnv)
        guard rc == 0 else { throw KioskError(.system, "cannot start \(kioskd)", errno: rc) }
        return pid
    }
}

/// The kioskd builds to run and the slow disk (`libKioskSlowSync.so`, loaded with LD_PRELOAD) of
/// the rows that run kioskd on a slow disk (`slow-work`, `slow-start`).
struct SlowDiskOptions: ParsableArguments {
    @Option(help: "A kioskd to run (repeat to compare builds; default: next to kioskd-bench).") var kioskd: [String] = []
    @Option(help: "libKioskSlowSync.so (default: next to kioskd-bench).") var slowSync: String?

    /// The kioskd binaries and the slow-disk library, each checked to be there.
    func resolve() throws -> (binaries: [String], lib: String) {
        let binaries = kioskd.isEmpty ? [Daemon.locate()].compactMap { $0 } : kioskd
        guard !binaries.isEmpty else { throw ValidationError("no kioskd next to kioskd-bench; pass --kioskd") }
        let lib = slowSync ?? ((Spawn.selfPath() as NSString).deletingLastPathComponent + "/libKioskSlowSync.so")
        guard access(lib, R_OK) == 0 else {
            throw ValidationError("no \(lib): build it with `swift build -c release --scratch-path .build-bench --product KioskSlowSync` or pass --slow-sync")
        }
        return (binaries, lib)
    }
}
