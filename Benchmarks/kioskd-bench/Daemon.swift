#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore
import KioskPosix

/// The real `kioskd` process on the headless backend: exec → READY=1 (sd_notify, sent after the
/// first frame) on a notify socket the benchmark owns, then idle CPU and wake-ups from /proc over
/// a hold period, and the peak RSS (VmHWM) before SIGTERM.
struct DaemonRun {
    var readyMs: Double
    var peakRSSKiB: Int
    /// CPU seconds per hour of wall time after READY=1 (all threads, /proc/PID/task/*/schedstat).
    var idleCPUPerHour: Double
    /// Voluntary context switches per second after READY=1 (all threads).
    var wakeupsPerSecond: Double
    var threads: Int
    var stoppedCleanly: Bool
}

enum Daemon {
    /// `kioskd` next to this executable (same build), if there.
    static func locate() -> String? {
        let me = Spawn.selfPath()
        let dir = (me as NSString).deletingLastPathComponent
        let k = dir + "/kioskd"
        return access(k, X_OK) == 0 ? k : nil
    }

    /// A config showing one scene of `kind` at `size` (on each of `outputs` headless outputs),
    /// with state and control socket under `dir`.
    static func writeConfig(kind: String, size: Size, dir: String, outputs: Int = 1) throws -> String {
        let extra = Rig.config(kind: kind).map { k, v -> String in
            if case .int(let i) = v { return "\(k) = \(i)" }
            return ""
        }.joined(separator: "\n")
        let text = """
            theme = "dark"
            state_dir = "\(dir)/state"

            [display]
            backend = "headless"
            headless_size = "\(size)"

            [control]
            socket = "\(dir)/control.sock"
            \((0..<(outputs > 1 ? outputs : 0)).map { "[[output]]\nconnector = \"OUT-\($0 + 1)\"\nmode = \"\(size)\"\n" }.joined())
            [scenes]
            order = ["bench"]

            [scene.bench]
            kind = "\(kind)"
            \(extra)

            """
        let path = "\(dir)/kioskd-\(kind)-\(outputs).toml"
        mkdir("\(dir)/state", 0o700)
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw KioskError(.system, "cannot write \(path)")
        }
        return path
    }

    /// Starts `kioskd --config CONFIG` with `env` added to this process's environment and a notify
    /// socket of its own, and waits up to `timeoutMs` for READY=1: (pid, ms from posix_spawn to READY=1).
    /// stderr goes to DIR/kioskd.log (at `logLevel`).
    static func startNotified(kioskd: String, config: String, dir: String, env extra: [String: String] = [:],
                              timeoutMs: Double = 15_000, logLevel: String = "warning") throws -> (pid: pid_t, readyMs: Double) {
        let sockPath = "\(dir)/notify.sock"
        unlink(sockPath)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw KioskError(.system, "socket(AF_UNIX) failed", errno: errno) }
        defer { close(fd); unlink(sockPath) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in sockPath.utf8.prefix(p.count - 1).enumerated() { p[i] = b }
        }
        let len = socklen_t(MemoryLayout<sockaddr_un>.size)
        try Posix.call("bind(\(sockPath))") { withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } } }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "\(dir)/kioskd.log", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = sockPath
        env.removeValue(forKey: "WATCHDOG_USEC")
        for (k, v) in extra { env[k] = v }
        let argv: [String] = [kioskd, "--config", config, "--log-level", logLevel]
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cArgs { free(p) }; for p in cEnv { free(p) } }
        var pid: pid_t = 0
        let t0 = nowNanos(.monotonic)
        let rc = posix_spawn(&pid, kioskd, &actions, nil, &cArgs, &cEnv)
        guard rc == 0 else { throw KioskError(.system, "cannot start \(kioskd): \(String(cString: strerror(rc)))", errno: rc) }

        var readyMs: Double?
        var buf = [UInt8](repeating: 0, count: 4096)
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while readyMs == nil {
            let left = timeoutMs - Double(nowNanos(.monotonic) - t0) / 1e6
            if left <= 0 { break }
            let pr = poll(&pfd, 1, Int32(left))
            if pr <= 0 { if pr < 0 && errno == EINTR { continue }; break }
            let n = recv(fd, &buf, buf.count, 0)
            guard n > 0 else { continue }
            let msg = String(decoding: buf[0..<n], as: UTF8.self)
            if msg.split(separator: "\n").contains("READY=1") { readyMs = Double(nowNanos(.monotonic) - t0) / 1e6 }
        }
        guard let readyMs else {
            kill(pid, SIGKILL)
            var st: Int32 = 0
            waitpid(pid, &st, 0)
            let log = (try? String(contentsOfFile: "\(dir)/kioskd.log", encoding: .utf8)) ?? ""
            throw KioskError(.system, "kioskd sent no READY=1 within \(Int(timeoutMs / 1000)) s; its log: \(log.suffix(400))")
        }
        return (pid, readyMs)
    }

    /// Starts `kioskd --config CONFIG`, waits for READY=1, waits `settleSeconds`, measures a hold of
    /// `holdSeconds`, stops it with SIGTERM.
    static func run(kioskd: String, config: String, dir: String, holdSeconds: Double, settleSeconds: Double = 1) throws -> DaemonRun {
        let (pid, readyMs) = try startNotified(kioskd: kioskd, config: config, dir: dir)
        // Let start-up work settle (the first frames render each digit once), then measure the idle hold.
        usleep(UInt32(settleSeconds * 1e6))
        let c0 = taskCounters(pid)
        let h0 = nowNanos(.monotonic)
        usleep(UInt32(holdSeconds * 1e6))
        let c1 = taskCounters(pid)
        let wall = Double(nowNanos(.monotonic) - h0) / 1e9
        let d = delta(c0, c1)
        let threads = c1.count
        let hwm = vmHWM(pid)
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let clean = (status & 0x7f) == 0 && ((status >> 8) & 0xff) == 0
        return DaemonRun(readyMs: readyMs, peakRSSKiB: hwm, idleCPUPerHour: d.cpu / wall * 3600,
                         wakeupsPerSecond: Double(d.switches) / wall, threads: threads, stoppedCleanly: clean)
    }

    /// Per-thread CPU seconds (schedstat, ns) and voluntary context switches of a live process.
    static func taskCounters(_ pid: pid_t) -> [String: (cpu: Double, switches: Int)] {
        let dir = "/proc/\(pid)/task"
        var out: [String: (cpu: Double, switches: Int)] = [:]
        for t in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
            var ns = 0.0, sw = 0
            if let s = try? String(contentsOfFile: "\(dir)/\(t)/schedstat", encoding: .utf8),
               let first = s.split(separator: " ").first, let v = Double(first) { ns = v }
            sw = statusField("\(dir)/\(t)/status", "voluntary_ctxt_switches:") ?? 0
            out[t] = (ns / 1e9, sw)
        }
        return out
    }

    /// What the threads did between two samples: threads present in both count their
    /// difference, threads that appeared count in full; threads that ended in between are
    /// left out (their totals are gone), which can only under-count.
    static func delta(_ a: [String: (cpu: Double, switches: Int)], _ b: [String: (cpu: Double, switches: Int)]) -> (cpu: Double, switches: Int) {
        var cpu = 0.0, sw = 0
        for (t, v1) in b {
            let v0 = a[t] ?? (0, 0)
            cpu += max(0, v1.cpu - v0.cpu)
            sw += max(0, v1.switches - v0.switches)
        }
        return (cpu, sw)
    }

    /// VmHWM (peak resident set) of a live process, in KiB.
    static func vmHWM(_ pid: pid_t) -> Int {
        statusField("/proc/\(pid)/status", "VmHWM:") ?? 0
    }
}

/// A "Name:   1234 kB" field of a /proc status file, in KiB.
func statusField(_ path: String, _ name: String) -> Int? {
    guard let s = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    for line in s.split(separator: "\n") where line.hasPrefix(name) {
        return Int(line.dropFirst(name.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
    }
    return nil
}
