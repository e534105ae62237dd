#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskPosix

/// What a spawned process did: time to its marker line (exec → "first-frame"), total wall
/// time to exit, and its peak RSS (wait4's ru_maxrss), plus everything it printed.
struct SpawnResult {
    var markerMs: Double?
    /// exec → the child's main() ("main-reached-ms" printed by the child), if it said.
    var mainMs: Double?
    var exitMs: Double
    var peakRSSKiB: Int
    var cpuSeconds: Double
    var status: Int32
    var output: String
    var succeeded: Bool { status == 0 }
}

enum Spawn {
    /// Runs `argv` with extra `env`, reading its stdout; the first line equal to `marker` stops the
    /// marker clock. Stderr goes to /dev/null unless `keepStderr`. `stopAfterMs`: send SIGTERM then.
    static func run(_ argv: [String], env: [String: String] = [:], marker: String? = "first-frame",
                    stopAfterMs: Double? = nil, keepStderr: Bool = false) throws -> SpawnResult {
        var fds: [Int32] = [0, 0]
        try Posix.call("pipe") { pipe(&fds) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(fds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        if !keepStderr { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }

        var environment: [String: String] = [:]
        var e = environ
        while let p = e.pointee {
            let kv = String(cString: p)
            if let eq = kv.firstIndex(of: "=") { environment[String(kv[..<eq])] = String(kv[kv.index(after: eq)...]) }
            e += 1
        }
        for (k, v) in env { environment[k] = v }
        let t0 = nowNanos(.monotonic)
        environment["KIOSKD_BENCH_SPAWN_NS"] = "\(t0)"
        let envStrings = environment.map { "\($0.key)=\($0.value)" }

        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = envStrings.map { strdup($0) } + [nil]
        defer { for p in cArgs { free(p) }; for p in cEnv { free(p) } }

        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], &actions, nil, &cArgs, &cEnv)
        close(fds[1])
        guard rc == 0 else {
            throw KioskError(.system, "cannot start \(argv[0]): \(String(cString: strerror(rc)))", errno: rc)
        }

        var output: [UInt8] = []
        var markerMs: Double?
        var buf = [UInt8](repeating: 0, count: 4096)
        var lineStart = 0
        var pfd = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
        var terminated = false
        while true {
            var timeout: Int32 = -1
            if let stop = stopAfterMs, !terminated {
                let left = stop - Double(nowNanos(.monotonic) - t0) / 1e6
                if left <= 0 { kill(pid, SIGTERM); terminated = true; continue }
                timeout = Int32(left.rounded(.up))
            }
            let pr = poll(&pfd, 1, timeout)
            if pr < 0 { if errno == EINTR { continue }; break }
            if pr == 0 { continue }
            let n = read(fds[0], &buf, buf.count)
            if n < 0 { if errno == EINTR { continue }; break }
            if n == 0 { break }
            let now = nowNanos(.monotonic)
            output.append(contentsOf: buf[0..<n])
            if markerMs == nil, let marker {
                while let nl = output[lineStart...].firstIndex(of: 10) {
                    let line = String(decoding: output[lineStart..<nl], as: UTF8.self)
                    lineStart = nl + 1
                    if line == marker { markerMs = Double(now - t0) / 1e6; break }
                }
            }
        }
        var status: Int32 = 0
        var ru = rusage()
        while wait4(pid, &status, 0, &ru) < 0 && errno == EINTR {}
        let t1 = nowNanos(.monotonic)
        let exitCode: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let text = String(decoding: output, as: UTF8.self)
        // A child that reports its own VmHWM ("peak-rss-kib N") is believed over ru_maxrss, which
        // after posix_spawn (vfork) includes the parent's high-water mark.
        var peak = Int(ru.ru_maxrss)
        for line in text.split(separator: "\n") where line.hasPrefix("peak-rss-kib ") {
            peak = Int(line.dropFirst(13)) ?? peak
        }
        var mainMs: Double?
        for line in text.split(separator: "\n") where line.hasPrefix("main-reached-ms ") { mainMs = Double(line.dropFirst(16)) }
        return SpawnResult(markerMs: markerMs, mainMs: mainMs, exitMs: Double(t1 - t0) / 1e6, peakRSSKiB: peak,
                           cpuSeconds: cpuSeconds(ru), status: terminated && exitCode == 128 + SIGTERM ? 0 : exitCode,
                           output: text)
    }

    /// The absolute path of this executable (/proc/self/exe).
    static func selfPath() -> String {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buf, buf.count - 1)
        return n > 0 ? String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
    }
}
