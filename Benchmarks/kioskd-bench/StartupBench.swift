#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskCore
import KioskPosix

/// `kioskd-bench startup`: exec → READY=1 of one or more kioskd binaries (the headless clock,
/// READY=1 on a notify socket, as the daemon rows of `run`) and exec → first frame of the pygame
/// peer's clock, taken in turn in one run so that load on the machine falls on all of them alike.
/// Wall time, and the CPU time it took to get there: each process is killed with SIGKILL at that
/// moment and its rusage read (all threads, those that ended before too). With the C floor built
/// (`Benchmarks/build-floor.sh`), also the least the same first frame costs with the same
/// libraries (`Benchmarks/floor/startup-floor.c`), layer by layer: what no kioskd can beat.
struct StartupBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "startup",
        abstract: "exec → READY=1 of kioskd binaries beside the pygame peer's first frame, in turn, in one run.")

    @Option(help: "A kioskd binary (repeat to compare builds; default: kioskd beside this executable).") var kioskd: [String] = []
    @Option(help: "Rounds (each starts every binary and the peer once).") var runs: Int = 11
    @Option(help: "Frame size WIDTHxHEIGHT.") var size: String = "1920x1080"
    @Option(help: "Python of the pygame peer's venv.") var peerPython: String = "Benchmarks/.venv/bin/python"
    @Option(help: "Folder of the peer scripts.") var peerDir: String = "Benchmarks/peer"
    @Option(help: "The C floor (Benchmarks/build-floor.sh builds it).") var floor: String = "Benchmarks/.floor/startup-floor"

    /// The floor's layers, each timed on its own: the loader and libraries, then fontconfig's
    /// configuration, then the filled frame, then the two texts (the whole first frame).
    static let floorLayers = ["exec", "fontconfig", "frame", "text"]

    func validate() throws {
        if runs < 1 { throw ValidationError("--runs must be at least 1 (got \(runs))") }
        _ = try parseSizes(size)
    }

    func run() throws {
        let main = try parseSizes(size)[0]
        let binaries = kioskd.isEmpty ? [Daemon.locate()].compactMap { $0 } : kioskd
        guard !binaries.isEmpty else { throw ValidationError("no kioskd beside this executable: give --kioskd PATH") }
        let (peer, status) = Peer.locate(python: peerPython, dir: peerDir)
        let hasFloor = access(floor, X_OK) == 0
        print("startup: clock at \(main), \(runs) rounds; \(status)\(hasFloor ? "" : "; C floor unavailable: \(floor) not found (run Benchmarks/build-floor.sh)")")
        let dir = "/tmp/kioskd-bench-startup-\(getpid())"
        mkdir(dir, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: dir) }
        let config = try Daemon.writeConfig(kind: "clock", size: main, dir: dir)
        var wall = [[Double]](repeating: [], count: binaries.count), cpu = wall
        var peerWall: [Double] = [], peerCPU: [Double] = []
        var floorWall = [[Double]](repeating: [], count: Self.floorLayers.count), floorCPU = floorWall
        for _ in 0..<runs {
            for (i, k) in binaries.enumerated() {
                let (pid, readyMs) = try Daemon.startNotified(kioskd: k, config: config, dir: dir)
                wall[i].append(readyMs); cpu[i].append(Self.killAndCPU(pid))
            }
            if let peer {
                let r = try Self.peerFirstFrame(peer, size: main)
                peerWall.append(r.wallMs); peerCPU.append(r.cpuMs)
            }
            if hasFloor {
                for (i, layer) in Self.floorLayers.enumerated() {
                    let r = try Self.firstFrame([floor, "--size", "\(main)", "--upto", layer], env: ProcessInfo.processInfo.environment)
                    floorWall[i].append(r.wallMs); floorCPU[i].append(r.cpuMs)
                }
            }
        }
        var load = [Double](repeating: 0, count: 3)
        getloadavg(&load, 3)
        func med(_ a: [Double]) -> Double { Samples(a).median }
        for (i, k) in binaries.enumerated() {
            let w = med(wall[i]), c = med(cpu[i])
            var line = "  \(k): exec → READY=1 median \(fmt(w, 1)) ms (min \(fmt(Samples(wall[i]).min, 1))), CPU \(fmt(c, 1)) ms"
            if !peerWall.isEmpty {
                line += "; peer/kioskd wall \(fmt(med(peerWall) / w, 2))×, CPU \(fmt(med(peerCPU) / c, 2))×"
            }
            print(line)
        }
        if !peerWall.isEmpty {
            print("  pygame peer: exec → first frame median \(fmt(med(peerWall), 1)) ms (min \(fmt(Samples(peerWall).min, 1))), CPU \(fmt(med(peerCPU), 1)) ms")
        }
        if hasFloor {
            let layers = Self.floorLayers.indices.map { i in
                "\(i == 0 ? "" : "+ ")\(Self.floorLayers[i]) \(fmt(med(floorWall[i]), 1))"
            }.joined(separator: ", ")
            let whole = Self.floorLayers.count - 1
            var line = "  C floor (the same first frame with pango, cairo and fontconfig, nothing else): exec → first frame median \(fmt(med(floorWall[whole]), 1)) ms, CPU \(fmt(med(floorCPU[whole]), 1)) ms; by layer: \(layers) ms"
            if !peerWall.isEmpty {
                line += "; peer/floor wall \(fmt(med(peerWall) / med(floorWall[whole]), 2))×, CPU \(fmt(med(peerCPU) / med(floorCPU[whole]), 2))×"
            }
            print(line)
            for (i, k) in binaries.enumerated() {
                print("  \(k) / floor: wall \(fmt(med(wall[i]) / med(floorWall[whole]), 2))×, CPU \(fmt(med(cpu[i]) / med(floorCPU[whole]), 2))×")
            }
        }
        print("  load average at the end: \(fmt(load[0], 1))")
    }

    /// The peer's `clock.py --first-frame`: wall time to its "first-frame" line and its CPU then.
    static func peerFirstFrame(_ peer: Peer, size: Size) throws -> (wallMs: Double, cpuMs: Double) {
        var env = ProcessInfo.processInfo.environment
        for (k, v) in Peer.env { env[k] = v }
        return try firstFrame([peer.python, "\(peer.dir)/clock.py", "--first-frame", "--size", "\(size)"], env: env)
    }

    /// Starts `argv` and returns the wall time to its "first-frame" line on stdout and its CPU then.
    static func firstFrame(_ argv: [String], env: [String: String]) throws -> (wallMs: Double, cpuMs: Double) {
        var fds: [Int32] = [0, 0]
        try Posix.call("pipe") { pipe(&fds) }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        defer { close(fds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addclose(&actions, fds[1])
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        var cEnv: [UnsafeMutablePointer<CChar>?] = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for p in cArgs { free(p) }; for p in cEnv { free(p) } }
        var pid: pid_t = 0
        let t0 = nowNanos(.monotonic)
        let rc = posix_spawn(&pid, argv[0], &actions, nil, &cArgs, &cEnv)
        close(fds[1])
        guard rc == 0 else { throw KioskError(.system, "cannot start \(argv[0]): \(String(cString: strerror(rc)))", errno: rc) }
        var out: [UInt8] = [], buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fds[0], &buf, buf.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                _ = killAndCPU(pid)
                throw KioskError(.system, "\(argv.prefix(2).joined(separator: " ")) ended without a first frame")
            }
            out.append(contentsOf: buf[0..<n])
            if String(decoding: out, as: UTF8.self).split(separator: "\n").contains("first-frame") { break }
        }
        let wallMs = Double(nowNanos(.monotonic) - t0) / 1e6
        return (wallMs, killAndCPU(pid))
    }

    /// Kills `pid` at once (SIGKILL: no shutdown work counted) and returns the CPU time of all its
    /// threads, those that ended before too (wait4's rusage), in ms: the CPU it took to get here,
    /// plus the moment between the signal leaving and arriving.
    static func killAndCPU(_ pid: pid_t) -> Double {
        kill(pid, SIGKILL)
        var st: Int32 = 0
        var ru = rusage()
        while wait4(pid, &st, 0, &ru) < 0 && errno == EINTR {}
        return (Double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + Double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3)
    }
}
