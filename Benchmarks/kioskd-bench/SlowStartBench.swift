#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskCore
import KioskTesting
import Synchronization

/// `kioskd-bench slow-start`: the first frame after a kill on a slow disk. A headless kioskd with
/// `--scenes` counter scenes of `--counters-per-scene` counters runs on a disk whose every fsync
/// waits `--fsync-ms` (a range "50-300" draws each wait; `libKioskSlowSync.so` by LD_PRELOAD);
/// every counter is set once (acknowledged, so in the journal), kioskd is killed with SIGKILL right
/// after the last answer, and started again on the same slow disk: exec → READY=1 (sent after the
/// first frame), and whether every acknowledged value is what the restarted kioskd answers.
struct SlowStartBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slow-start",
        abstract: "exec → first frame after a kill with many journaled counters, on a slow disk.")

    @OptionGroup var disk: SlowDiskOptions
    @Option(help: "How long every fsync waits (ms, or a range LOW-HIGH).") var fsyncMs: String = "50-300"
    @Option(help: "Counter scenes.") var scenes: Int = 16
    @Option(help: "Counters in each scene.") var countersPerScene: Int = 10
    @Option(help: "Kill/restart rounds per kioskd.") var runs: Int = 3

    func run() throws {
        let (binaries, lib) = try disk.resolve()
        print("slow-start: \(scenes * countersPerScene) counters (\(scenes) scenes × \(countersPerScene)), every fsync waits \(fsyncMs) ms; each set once, SIGKILL, start again")
        for k in binaries {
            var ready: [Double] = [], wrong = 0
            for _ in 0..<runs {
                let r = try Self.round(kioskd: k, lib: lib, fsyncMs: fsyncMs, scenes: scenes, perScene: countersPerScene)
                ready.append(r.readyMs)
                wrong += r.wrongValues
                print("  round: first start \(Int(r.firstReadyMs)) ms, \(r.acknowledged) sets acknowledged in \(Int(r.setMs)) ms; journal at the kill \(r.journalBytes) bytes; after SIGKILL exec → READY=1 \(Int(r.readyMs)) ms; \(r.wrongValues) values differ")
            }
            let s = ready.sorted()
            print("  \(k)")
            print("    exec → READY=1 after a kill: min \(Int(s.first!)) ms, median \(Int(s[s.count / 2])) ms, max \(Int(s.last!)) ms; acknowledged values lost or changed: \(wrong)")
        }
    }

    struct Round {
        var firstReadyMs: Double
        var acknowledged: Int
        var setMs: Double
        /// The journal's size when the kill came (records not yet checkpointed into the state files).
        var journalBytes: Int
        var readyMs: Double
        var wrongValues: Int
    }

    static func round(kioskd: String, lib: String, fsyncMs: String, scenes: Int, perScene: Int) throws -> Round {
        let d = "/var/tmp/kioskd-slowstart-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        mkdir(d, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: d) }
        var config = """
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "1280x720"
            [scenes]
            order = [\((0..<scenes).map { "\"s\($0)\"" }.joined(separator: ", "))]
            [control]
            socket = "\(d)/c.sock"

            """
        var names: [String] = []
        for s in 0..<scenes {
            config += "[scene.s\(s)]\nkind = \"counter\"\ndigits = 4\n"
            for c in 0..<perScene {
                names.append("s\(s)c\(c)")
                config += "[[scene.s\(s).counter]]\nname = \"s\(s)c\(c)\"\n"
            }
        }
        let all = names
        let path = "\(d)/kioskd.toml"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        let sock = "\(d)/c.sock"
        let env = ["LD_PRELOAD": lib, "KIOSK_BENCH_FSYNC_MS": fsyncMs]

        let first = try Daemon.startNotified(kioskd: kioskd, config: path, dir: d, env: env, timeoutMs: 120_000)
        // Every counter set once, from 8 clients at once; the kill follows the last answer.
        let expected = Mutex<[String: Int]>([:])
        let clients = 8, done = DispatchSemaphore(value: 0)
        let t0 = nowNanos(.monotonic)
        for c in 0..<clients {
            Thread {
                defer { done.signal() }
                guard let conn = try? UnixHTTPConnection(path: sock, timeout: 120) else { return }
                for (i, name) in all.enumerated() where i % clients == c {
                    let value = 1000 + i
                    if let r = try? conn.request("POST", "/counter/\(name)/set", body: "{\"value\": \(value)}"), r.status == 200 {
                        expected.withLock { $0[name] = value }
                    }
                }
            }.start()
        }
        for _ in 0..<clients { done.wait() }
        let setMs = Double(nowNanos(.monotonic) - t0) / 1e6
        kill(first.pid, SIGKILL)
        var st: Int32 = 0
        waitpid(first.pid, &st, 0)
        var sb = stat()
        let journalBytes = stat("\(d)/state/journal.log", &sb) == 0 ? Int(sb.st_size) : -1

        let second = try Daemon.startNotified(kioskd: kioskd, config: path, dir: d, env: env, timeoutMs: 120_000)
        defer {
            kill(second.pid, SIGTERM)
            var st: Int32 = 0
            waitpid(second.pid, &st, 0)
        }
        let acknowledged = expected.withLock { $0 }
        var wrong = 0
        let conn = try UnixHTTPConnection(path: sock, timeout: 120)
        for (name, value) in acknowledged {
            let r = try conn.request("GET", "/counter/\(name)")
            let obj = (try? JSONSerialization.jsonObject(with: Data(r.body.utf8))) as? [String: Any]
            if (obj?["value"] as? Int) != value { wrong += 1 }
        }
        return Round(firstReadyMs: first.readyMs, acknowledged: acknowledged.count, setMs: setMs, journalBytes: journalBytes, readyMs: second.readyMs, wrongValues: wrong)
    }
}
