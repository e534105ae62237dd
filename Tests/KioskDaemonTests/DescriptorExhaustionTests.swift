import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskTestTraits
import Testing
import KioskTesting

/// The render loop keeps ticking when the process runs out of file descriptors (idle control
/// connections eating them all), and kioskd raises its soft descriptor limit at start.
/// Runs the real kioskd under `prlimit`; enabled by KIOSK_SLOW_TESTS=1 like `ProcessTests`.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct DescriptorExhaustionTests {
    func config(_ dir: String, rotateSeconds: Int = 0) -> String {
        """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "160x90"
        [scenes]
        order = ["score", "clock"]
        rotate_seconds = \(rotateSeconds)
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        [scene.clock]
        kind = "clock"
        [control]
        socket = "\(dir)/c.sock"
        """
    }

    func start(_ dir: String, nofile: String, rotateSeconds: Int = 0) throws -> Child {
        let path = write(config(dir, rotateSeconds: rotateSeconds), dir)
        let child = try Child("/usr/bin/prlimit", ["--nofile=\(nofile)", Binaries.kioskd, "--config", path, "--log-level", "debug"],
                              log: "\(dir)/log")
        for _ in 0..<1200 {
            if ControlClient.socketAnswers("\(dir)/c.sock") { break }
            if !child.process.isRunning { break }
            usleep(25_000)
        }
        #expect(child.process.isRunning, "kioskd exited; its log:\n\(child.log)")
        return child
    }

    func frames(_ dir: String) throws -> Int {
        let s = try ControlClient(socketPath: "\(dir)/c.sock", timeout: 5).send(method: .GET, path: "/status").jsonObject ?? [:]
        return (s["frames"] as? Int) ?? -1
    }

    func openDescriptors(_ pid: Int32) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    /// What kioskd's descriptors are, for failure messages: each target kind with its count, and
    /// the state of its Unix sockets (from /proc/net/unix: "03" connected, "01" unconnected).
    func describeDescriptors(_ pid: Int32) -> String {
        let targets = descriptorTargets(pid).map(\.target)
        var kinds: [String: Int] = [:]
        var inodes = Set<String>()
        for t in targets {
            if t.hasPrefix("socket:[") { inodes.insert(String(t.dropFirst(8).dropLast())); kinds["socket", default: 0] += 1 } else { kinds[t, default: 0] += 1 }
        }
        let table = (try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8)) ?? ""
        var states: [String: Int] = [:]
        for line in table.split(separator: "\n").dropFirst() {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 7, inodes.contains(String(f[6])) else { continue }
            states["flags \(f[3]) st \(f[5])\(f.count > 7 ? " " + f[7] : "")", default: 0] += 1
        }
        let list = { (d: [String: Int]) in d.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ") }
        return "descriptors: \(list(kinds)); unix sockets: \(list(states))"
    }

    /// A non-blocking connection to the socket (nil when the kernel refuses it).
    func connection(_ path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in path.utf8.enumerated() { p[i] = b }
        }
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        if r != 0 { close(fd); return nil }
        return fd
    }

    /// Whether kioskd has logged that the clock scene came on screen.
    func clockShown(_ child: Child) -> Bool {
        child.log.split(separator: "\n").contains { $0.contains("scene on screen") && $0.contains("scene=clock") }
    }

    @Test func clockKeepsTickingWhileDescriptorsAreExhaustedAndAfter() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        let d = tempDir()
        let limit = 64
        // The counter is on screen first; the rotation brings the clock (whose timer must then be
        // armed) while the descriptors are exhausted, and keeps it for 15 s. The moments are taken
        // from kioskd's log, not from a clock of the test's own, so a slow start on a busy machine
        // cannot move them.
        let child = try start(d, nofile: "\(limit):\(limit)", rotateSeconds: 15)
        defer { child.signal(SIGKILL) }
        let pid = child.process.pid
        let status0 = try ControlClient(socketPath: "\(d)/c.sock", timeout: 5).send(method: .GET, path: "/status").jsonObject ?? [:]
        #expect(status0["scene"] as? String == "score")
        let f0 = (status0["frames"] as? Int) ?? -1

        // Idle connections until kioskd holds every descriptor it may open.
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        var exhausted = false
        for _ in 0..<400 where !exhausted {
            if let fd = connection("\(d)/c.sock") { held.append(fd) }
            usleep(5_000)
            exhausted = openDescriptors(pid) >= limit
        }
        #expect(exhausted, "kioskd holds \(openDescriptors(pid)) of \(limit) descriptors after \(held.count) connections")
        #expect(!clockShown(child), "descriptors were exhausted only after the rotation; log:\n\(child.log.suffix(3000))")
        // Hold them until the rotation has brought the clock, and 3.5 s more.
        let waitStart = Date()
        while !clockShown(child) && Date().timeIntervalSince(waitStart) < 40 { usleep(50_000) }
        #expect(clockShown(child), "the clock never came on screen; log:\n\(child.log.suffix(3000))")
        let shown = Date()
        while Date().timeIntervalSince(shown) < 3.5 { usleep(100_000) }
        #expect(openDescriptors(pid) >= limit - 2, "kioskd freed descriptors while the connections were held")
        for fd in held { close(fd) }
        held.removeAll()
        // kioskd closes the connections it had accepted.
        for _ in 0..<400 where openDescriptors(pid) > limit / 2 { usleep(25_000) }
        #expect(openDescriptors(pid) <= limit / 2, "kioskd still holds \(openDescriptors(pid)) descriptors 10 s after the clients closed; \(describeDescriptors(pid)); log:\n\(child.log.suffix(3000))")
        let status1 = try ControlClient(socketPath: "\(d)/c.sock", timeout: 5).send(method: .GET, path: "/status").jsonObject ?? [:]
        #expect(status1["scene"] as? String == "clock")
        let f1 = (status1["frames"] as? Int) ?? -1
        // The clock's first frame, then a tick a second while the descriptors ran out ...
        #expect(f1 - f0 >= 3, "frames before \(f0), after \(f1); log:\n\(child.log.suffix(3000))")
        // ... and after, with no request to wake the loop.
        let t1 = Date()
        while Date().timeIntervalSince(t1) < 3.2 { usleep(100_000) }
        let f2 = try frames(d)
        #expect(f2 - f1 >= 2, "frames \(f1) then \(f2) 3.2 s later; log:\n\(child.log.suffix(3000))")
        #expect(!child.log.contains("cannot arm"), "\(child.log.suffix(3000))")
    }

    @Test func softDescriptorLimitIsRaisedToTheHardLimitAtStart() throws {
        let d = tempDir()
        let child = try start(d, nofile: "64:4096")
        defer { child.signal(SIGKILL) }
        let limits = (try? String(contentsOfFile: "/proc/\(child.process.pid)/limits", encoding: .utf8)) ?? ""
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }.map(String.init) ?? ""
        let numbers = line.split(separator: " ").compactMap { Int($0) }
        #expect(numbers == [4096, 4096], "\(line)")
        // Logged at debug with the limits (the log may lag the start a little).
        var logged = false
        for _ in 0..<100 where !logged { logged = child.log.contains("open file limit [hard=4096 soft=4096 soft_at_start=64]"); usleep(20_000) }
        #expect(logged, "\(child.log)")
    }
}
