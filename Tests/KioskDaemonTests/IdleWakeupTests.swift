import Foundation
import KioskControl
import KioskTestTraits
import Testing
import KioskTesting

/// An idle kioskd showing a clock wakes once a second, on the render loop, and nowhere else.
/// Counts each thread's voluntary context switches (one per wake-up: the thread blocks again
/// after it) from /proc over a few seconds: counts, not times, so a loaded machine does not
/// change the verdict.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct IdleWakeupTests {
    /// Voluntary context switches per thread id, with the thread's name.
    static func switches(_ pid: Int32) -> [Int: (name: String, count: Int)] {
        var out: [Int: (name: String, count: Int)] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for t in tasks {
            guard let tid = Int(t), let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/status", encoding: .utf8) else { continue }
            var name = "?", count: Int?
            for line in status.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard parts.count == 2 else { continue }
                if parts[0] == "Name" { name = parts[1] }
                if parts[0] == "voluntary_ctxt_switches" { count = Int(parts[1]) }
            }
            if let count { out[tid] = (name, count) }
        }
        return out
    }

    @Test func idleClockWakesOnlyTheRenderLoopOncePerSecond() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        try idleClockWakesOnlyTheRenderLoop(Binaries.kioskd)
    }

    /// The release build links the Swift runtime statically; SwiftNIO's `dlsym` cannot find the
    /// runtime's executor hook there, so kioskd sets it itself (`runConcurrencyOnLoopThread`).
    @Test(.enabled(if: Binaries.releaseKioskd != nil, "build the release kioskd (swift build -c release --scratch-path .build-bench --product kioskd) or set KIOSKD_RELEASE_BIN"))
    func releaseBuildToo() throws {
        try idleClockWakesOnlyTheRenderLoop(try #require(Binaries.releaseKioskd))
    }

    /// Starts `kioskd` showing a small headless clock with its state and control socket in `d`.
    static func startClock(_ kioskd: String, in d: String) throws -> Child {
        let path = write("""
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "320x180"
            [scenes]
            order = ["clock"]
            [scene.clock]
            kind = "clock"
            [control]
            socket = "\(d)/c.sock"
            """, d)
        return try Child(kioskd, ["--config", path], log: "\(d)/log")
    }

    func idleClockWakesOnlyTheRenderLoop(_ kioskd: String) throws {
        let d = tempDir()
        let child = try Self.startClock(kioskd, in: d)
        defer { child.signal(SIGTERM); _ = child.wait(seconds: 10) }
        try ProcessTests().waitForSocket(d, child)
        let pid = child.process.pid
        // Start-up work (thread pools spinning down, the first frames) is over after a moment;
        // this is the start of the measured window, not a wait for an event.
        Thread.sleep(forTimeInterval: 2)
        let window = 6.0
        let before = Self.switches(pid)
        Thread.sleep(forTimeInterval: window)
        let after = Self.switches(pid)
        #expect(child.process.isRunning, "kioskd exited; its log:\n\(child.log)")

        var woke: [(tid: Int, name: String, wakes: Int)] = after.map { tid, a in (tid, a.name, a.count - (before[tid]?.count ?? 0)) }
        woke.sort { $0.wakes > $1.wakes }
        let table = woke.map { "\($0.tid) \($0.name): \($0.wakes)" }.joined(separator: ", ")
        // The render loop: one tick a second (its timer is re-armed for the next second boundary
        // each time, so a slow machine delays ticks but neither adds nor drops any).
        let render = try #require(woke.first { $0.name == "kioskd-render" }, "no thread named kioskd-render (threads: \(table))")
        #expect(render.wakes >= 3 && render.wakes <= 2 * Int(window), "render loop woke \(render.wakes) times in \(window) s (threads: \(table))")
        // Every other thread sleeps: a periodic timer anywhere else adds about one a second.
        let others = woke.filter { $0.tid != render.tid }.reduce(0) { $0 + $1.wakes }
        #expect(others <= 2, "threads other than the render loop woke \(others) times in \(window) s while idle (threads: \(table))")
    }
}
