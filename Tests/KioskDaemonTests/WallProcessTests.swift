import Foundation
import KioskControl
import KioskCore
import KioskTestTraits
import Testing
import KioskTesting

/// The real kioskd and kioskctl with a sysfs-shaped tree (KIOSK_SYSFS_ROOT) and a zone file
/// named by TZ (glibc's ":/path" form) in a test folder. Enabled by KIOSK_SLOW_TESTS=1.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct WallProcessTests {
    func config(_ dir: String, display: String = "", scenes: String = "[scene.clock]\nkind = \"clock\"") -> String {
        """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        \(display)
        \(scenes)
        [control]
        socket = "\(dir)/c.sock"
        """
    }

    /// kioskd with extra environment variables (through env(1), so the child's stderr setup stays Child's).
    func start(_ dir: String, _ env: [String], log: String = "log") throws -> Child {
        let path = "\(dir)/kioskd.toml"
        return try Child("/usr/bin/env", env + [Binaries.kioskd, "--config", path], log: "\(dir)/\(log)")
    }

    /// Waits (bounded) for the control socket and for start-up to have finished on the render loop
    /// ("kioskd started" is logged after the first brightness write): the socket may answer first.
    func waitForSocket(_ dir: String, _ child: Child) {
        for _ in 0..<1200 {
            if ControlClient.socketAnswers("\(dir)/c.sock") && child.log.contains("kioskd started") { return }
            if !child.process.isRunning { break }
            usleep(25_000)
        }
        Issue.record("kioskd did not open its control socket; its log:\n\(child.log)")
    }

    func status(_ dir: String) -> [String: Any] {
        (try? ControlClient(socketPath: "\(dir)/c.sock", timeout: 5).send(method: .GET, path: "/status").jsonObject) ?? [:]
    }

    func stop(_ child: Child) {
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 8))
    }

    @Test(arguments: [(1, "1"), (7, "3"), (255, "102"), (120000, "48000")])
    func kioskctlBrightnessWritesTheRawValueAndARestartKeepsIt(_ max: Int, _ raw: String) throws {
        let d = tempDir()
        let dev = "\(d)/sys/sys/class/backlight/panel"
        try FileManager.default.createDirectory(atPath: dev, withIntermediateDirectories: true)
        func put(_ name: String, _ v: String) { try! "\(v)\n".write(toFile: "\(dev)/\(name)", atomically: false, encoding: .utf8) }
        func brightness() -> String { ((try? String(contentsOfFile: "\(dev)/brightness", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
        put("type", "raw"); put("max_brightness", "\(max)"); put("brightness", "\(max)")
        write(config(d, display: "backlight = \"panel\""), d)
        let env = ["KIOSK_SYSFS_ROOT=\(d)/sys"]
        var child = try start(d, env)
        waitForSocket(d, child)
        let (code, out, err) = try kioskctl(["brightness", "40", "--socket", "\(d)/c.sock"])
        #expect(code == 0, "\(err)")
        #expect(out.contains("brightness: 40 % (panel via sysfs, raw \(raw))"), "\(out)")
        #expect(brightness() == raw)
        let (_, st, _) = try kioskctl(["status", "--socket", "\(d)/c.sock"])
        #expect(st.contains("backlight: panel"), "\(st)")
        #expect(st.contains("via sysfs"), "\(st)")
        #expect(child.log.contains("no logind session; writing \(dev)/brightness directly"), "\(child.log)")
        stop(child)

        // Acknowledged means saved: a restart sets 40 % again.
        put("brightness", "\(max)")
        child = try start(d, env, log: "log2")
        waitForSocket(d, child)
        #expect(brightness() == raw)
        let (_, shown, _) = try kioskctl(["brightness", "--socket", "\(d)/c.sock"])
        #expect(shown.contains("brightness: 40 % (panel via sysfs, raw \(raw))"), "\(shown)")
        stop(child)
    }

    /// The zone file TZ names is replaced (as timedatectl does: a new symlink renamed over it):
    /// status and the clock's very next reading are in the new zone, without a restart.
    @Test func replacedZoneFileIsFollowedWithoutARestart() throws {
        let d = tempDir()
        let zone = "\(d)/localtime"
        #expect(symlink("/usr/share/zoneinfo/UTC", zone) == 0)
        write(config(d), d)
        let child = try start(d, ["TZ=:\(zone)"])
        waitForSocket(d, child)
        #expect((status(d)["time_zone"] as? String)?.hasSuffix("UTC (+00:00)") == true, "\(status(d))")

        func clockMinutes() -> Int? {
            guard let s = status(d)["scene_summary"] as? String else { return nil }
            let p = s.prefix(5).split(separator: ":")
            guard p.count == 2, let h = Int(p[0]), let m = Int(p[1]) else { return nil }
            return h * 60 + m
        }
        func utcMinutes(plus offset: Int) -> Int {
            let now = Int(Date().timeIntervalSince1970)
            return ((now / 60 + offset) % 1440 + 1440) % 1440
        }
        func close(_ a: Int?, _ b: Int) -> Bool { a.map { min(abs($0 - b), 1440 - abs($0 - b)) <= 1 } ?? false }
        #expect(close(clockMinutes(), utcMinutes(plus: 0)), "\(status(d))")

        #expect(symlink("/usr/share/zoneinfo/Asia/Kolkata", zone + ".new") == 0)
        #expect(rename(zone + ".new", zone) == 0)
        var followed = false
        for _ in 0..<200 where !followed {
            usleep(25_000)
            followed = (status(d)["time_zone"] as? String)?.hasPrefix("Asia/Kolkata (+05:30)") == true
        }
        #expect(followed, "\(status(d))\n\(child.log)")
        #expect(close(clockMinutes(), utcMinutes(plus: 330)), "the clock shows India's time: \(status(d))")
        #expect(child.log.contains("time zone changed"), "\(child.log)")
        stop(child)
    }

    /// An unsynchronised clock (no timesyncd flag, and the kernel says so when run unsynchronised)
    /// is said in status and kioskctl status; it never delays start-up.
    @Test func timeSyncIsInStatus() throws {
        let d = tempDir()
        write(config(d), d)
        let child = try start(d, [])
        waitForSocket(d, child)
        let sync = status(d)["time_sync"] as? [String: Any]
        #expect(sync?["synchronized"] is Bool, "\(status(d))")
        let (_, st, _) = try kioskctl(["status", "--socket", "\(d)/c.sock"])
        #expect(st.contains("time:    "), "\(st)")
        stop(child)
    }
}

