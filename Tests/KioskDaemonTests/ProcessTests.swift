import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskTestTraits
import Testing
import KioskTesting

/// Runs the real `kioskd` and `kioskctl` binaries (built next to the test bundle, or in
/// $KIOSKD_BIN_DIR). Enabled by KIOSK_SLOW_TESTS=1; build first:
/// `swift build --product kioskd && swift build --product kioskctl`.
let slowTests = ProcessInfo.processInfo.environment["KIOSK_SLOW_TESTS"] == "1"

/// A child process with its stderr collected in a file.
final class Child {
    let process: SpawnedProcess
    let logPath: String
    init(_ path: String, _ args: [String], log: String) throws {
        logPath = log
        #expect(FileManager.default.createFile(atPath: log, contents: nil))
        // The shell redirects stderr to the log, then becomes the program (signals reach it directly).
        func quote(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        process = try SpawnedProcess("/bin/sh", ["-c", "echo \"spawned $$\" >>\(quote(log)); exec " + ([path] + args).map(quote).joined(separator: " ") + " 2>>\(quote(log)) >/dev/null"])
    }
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    func signal(_ s: Int32) { process.signal(s) }
    /// Waits at most `seconds` for the exit; true when it exited.
    func wait(seconds: Double) -> Bool { process.wait(seconds: seconds) }
}

/// Runs kioskctl; returns (exit status, stdout, stderr).
func kioskctl(_ args: [String]) throws -> (Int32, String, String) {
    try SpawnedProcess.run(Binaries.kioskctl, args)
}

@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct ProcessTests {
    func config(_ dir: String, scenes: String) -> String {
        """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        \(scenes)
        [control]
        socket = "\(dir)/c.sock"
        """
    }

    let twoScenes = """
    [scenes]
    order = ["score", "clock"]
    [scene.score]
    kind = "counter"
    [[scene.score.counter]]
    name = "HOME"
    [scene.clock]
    kind = "clock"
    """

    /// Starts kioskd with its stderr in `log`.
    func startKioskd(_ path: String, log: String) throws -> Child {
        try Child(Binaries.kioskd, ["--config", path], log: log)
    }

    /// Waits (at most 30 s: process starts are slow on a loaded machine) for the control socket.
    func waitForSocket(_ dir: String, _ child: Child) throws {
        for _ in 0..<1200 {
            if ControlClient.socketAnswers("\(dir)/c.sock") { return }
            if !child.process.isRunning { break }
            usleep(25_000)
        }
        let how = child.process.isRunning ? "still running" : "exited: status \(child.process.exitStatus) (128 + n: signal n)"
        Issue.record("kioskd did not open its control socket (\(how)); its log:\n\(child.log)")
    }

    func status(_ dir: String) throws -> [String: Any] {
        try ControlClient(socketPath: "\(dir)/c.sock", timeout: 5).send(method: .GET, path: "/status").jsonObject ?? [:]
    }

    @Test func sighupWithBrokenConfigKeepsSceneAndGoodConfigSwitches() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        let d = tempDir()
        let path = write(config(d, scenes: twoScenes), d)
        let child = try startKioskd(path, log: "\(d)/log")
        try waitForSocket(d, child)
        #expect(try status(d)["scene"] as? String == "score")

        // Broken: a misspelt key on line 13, in [scene.clock].
        try config(d, scenes: twoScenes.replacingOccurrences(of: "kind = \"clock\"", with: "kind = \"clock\"\ncolour_mode = \"literal\""))
            .write(toFile: path, atomically: true, encoding: .utf8)
        child.signal(SIGHUP)
        var logged = false
        for _ in 0..<100 where !logged { usleep(30_000); logged = child.log.contains("config reload failed") }
        #expect(logged, "\(child.log)")
        #expect(child.log.contains("\(path):13: key 'scene.clock.colour_mode': unknown key"), "\(child.log)")
        #expect(try status(d)["scene"] as? String == "score")
        #expect(try status(d)["scenes"] as? [String] == ["score", "clock"])

        // Good: only the clock.
        try config(d, scenes: "[scene.clock]\nkind = \"clock\"\n").write(toFile: path, atomically: true, encoding: .utf8)
        child.signal(SIGHUP)
        var switched = false
        for _ in 0..<100 where !switched { usleep(30_000); switched = (try? status(d)["scene"] as? String) == "clock" }
        #expect(switched)
        #expect(try status(d)["scenes"] as? [String] == ["clock"])

        // SIGTERM: a clean stop within the bound, socket removed.
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 6))
        #expect(child.process.exitStatus == 0)
        #expect(!FileManager.default.fileExists(atPath: "\(d)/c.sock"))
        #expect(child.log.contains("kioskd stopped"))
    }

    @Test func kioskctlAgainstStoppedDaemonSaysSo() throws {
        let d = tempDir()
        let (code, _, err) = try kioskctl(["status", "--socket", "\(d)/c.sock"])
        #expect(code == 2)
        #expect(err == "kioskctl: kioskd is not running (no socket at \(d)/c.sock)\n")
        // After a SIGKILL the socket file stays behind: still reported plainly.
        let path = write(config(d, scenes: twoScenes), d)
        let child = try startKioskd(path, log: "\(d)/log")
        try waitForSocket(d, child)
        child.signal(SIGKILL)
        #expect(child.wait(seconds: 5))
        let (code2, _, err2) = try kioskctl(["counter", "HOME", "inc", "--socket", "\(d)/c.sock"])
        #expect(code2 == 2)
        #expect(err2.hasPrefix("kioskctl: kioskd is not running"), "\(err2)")
        // A restart finds the stale socket and replaces it.
        let again = try startKioskd(path, log: "\(d)/log2")
        try waitForSocket(d, again)
        let (code3, out3, _) = try kioskctl(["counter", "HOME", "inc", "--socket", "\(d)/c.sock"])
        #expect(code3 == 0)
        #expect(out3 == "HOME = 1\n")
        again.signal(SIGTERM)
        #expect(again.wait(seconds: 6))
    }

    @Test func busyDaemonTimesOutClearly() throws {
        let d = tempDir()
        let path = write(config(d, scenes: twoScenes), d)
        let child = try startKioskd(path, log: "\(d)/log")
        try waitForSocket(d, child)
        // A stopped (SIGSTOP) daemon accepts connections in the kernel but never answers.
        child.signal(SIGSTOP)
        let t0 = Date()
        let (code, _, err) = try kioskctl(["status", "--socket", "\(d)/c.sock", "--timeout", "0.5"])
        #expect(code == 3)
        #expect(err.contains("did not answer within 0.5 s"), "\(err)")
        #expect(Date().timeIntervalSince(t0) < 5)
        child.signal(SIGCONT)
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 6))
    }

    @Test func badConfigExits78WithFileLineKey() throws {
        let d = tempDir()
        let path = write("[display]\nrotation = 45\n[scene.clock]\nkind = \"clock\"\n", d)
        for args in [["--check-config"], []] {
            let (status, text) = try runKioskd(["--config", path] + args)
            #expect(status == 78, "\(args): \(text)")
            #expect(text == "kioskd: \(path):2: key 'display.rotation': expected 0, 90, 180 or 270, got 45\n")
        }
        let (status, text) = try runKioskd(["--config", "\(d)/missing.toml", "--check-config"], environment: ProcessInfo.processInfo.environment)
        #expect(status == 78)
        #expect(text.hasPrefix("kioskd: \(d)/missing.toml: cannot read the config file"), "\(text)")
    }

    /// A mode no display has passed the check and then failed the start without naming where it
    /// was written: both now exit 78 with file:line:key.
    @Test func impossibleModeExits78BeforeTheStart() throws {
        let d = tempDir()
        let path = write("state_dir = \"\(d)/state\"\n[display]\ndevice = \"\(d)/card9\"\nmode = \"100000x100000\"\n[scene.clock]\nkind = \"clock\"\n", d)
        for args in [["--check-config"], []] {
            let (status, text) = try runKioskd(["--config", path] + args)
            #expect(status == 78, "\(args): \(text)")
            #expect(text.hasPrefix("kioskd: \(path):4: key 'display.mode': expected a mode like"), "\(args): \(text)")
        }
    }

    /// An output's mode is a framebuffer size when `--backend headless` is chosen on the command
    /// line: the check and the start refuse one no framebuffer in memory can have.
    @Test func headlessBackendChosenOnTheCommandLineChecksOutputSizes() throws {
        let d = tempDir()
        let path = write("""
        state_dir = "\(d)/state"
        [[output]]
        connector = "HDMI-A-1"
        [[output]]
        connector = "DSI-1"
        mode = "16000x16000"
        [scene.clock]
        kind = "clock"
        [control]
        socket = "\(d)/c.sock"
        """, d)
        let (ok, okText) = try runKioskd(["--config", path, "--check-config"])
        #expect(ok == 0, "a DRM mode of 16000x16000 is possible: \(okText)")
        for args in [["--check-config"], []] {
            let (status, text) = try runKioskd(["--config", path, "--backend", "headless"] + args)
            #expect(status == 78, "\(args): \(text)")
            #expect(text == "kioskd: \(path):4: key 'output[1].mode': with the headless backend the mode is the size of the output's "
                    + "frame in memory: each side 16…8192, got \"16000x16000\"\n", "\(args): \(text)")
        }
    }

    /// Runs kioskd to its exit; returns (status, stderr).
    func runKioskd(_ args: [String], environment: [String: String]? = nil, executable: String = Binaries.kioskd) throws -> (Int32, String) {
        // Without JOURNAL_STREAM (as from a terminal) unless the test sets it.
        let p = try SpawnedProcess(executable, args, environment: environment ?? ProcessInfo.processInfo.environment.filter { $0.key != "JOURNAL_STREAM" },
                                   stderr: .pipe)
        let text = p.errors()
        p.wait()
        return (p.exitStatus, text)
    }

    @Test func deeplyNestedConfigExits78WithTheLine() throws {
        let d = tempDir()
        let key = Array(repeating: "a", count: 20000).joined(separator: ".")
        let path = write("\(key) = 1\n[scene.clock]\nkind = \"clock\"\n", d)
        let (code, text) = try runKioskd(["--config", path, "--check-config"])
        #expect(code == 78, "\(text)")
        #expect(text == "kioskd: \(path):1: key 'a.a.a.a.a.a.a.a…': nested more than 64 levels (tables, dotted keys, arrays and inline tables count together)\n")
    }

    @Test func configErrorReachesTheJournalAtErrorPriority() throws {
        let d = tempDir()
        let path = write("[display]\nrotation = 45\n[scene.clock]\nkind = \"clock\"\n", d)
        var env = ProcessInfo.processInfo.environment
        env["JOURNAL_STREAM"] = "8:12345"
        for args in [["--check-config"], []] {
            let (code, text) = try runKioskd(["--config", path] + args, environment: env)
            #expect(code == 78, "\(args): \(text)")
            #expect(text == "<3>kioskd: \(path):2: key 'display.rotation': expected 0, 90, 180 or 270, got 45\n", "\(args)")
        }
    }

    @Test func startProblemsTheCheckFindsExit78() throws {
        let d = tempDir()
        try FileManager.default.createDirectory(atPath: "\(d)/sockdir", withIntermediateDirectories: true)
        write("x", d, "plain")
        let base = config(d, scenes: "[scene.clock]\nkind = \"clock\"\n")
        let cases: [(String, String)] = [
            (base + "\ngroup = \"no-such-group-kt\"\n", ":10: key 'control.group': no group named \"no-such-group-kt\" on this system"),
            (base.replacingOccurrences(of: "\(d)/c.sock", with: "\(d)/sockdir"), ":9: key 'control.socket': \(d)/sockdir is a directory"),
            (base.replacingOccurrences(of: "\(d)/state", with: "\(d)/plain/state"), ":1: key 'state_dir': cannot create \(d)/plain/state: \(d)/plain is not a directory"),
        ]
        for (text, expected) in cases {
            let path = write(text, d)
            for args in [["--check-config"], []] {
                let (code, err) = try runKioskd(["--config", path] + args)
                #expect(code == 78, "\(args): \(err)")
                #expect(err.hasPrefix("kioskd: \(path)\(expected)"), "\(args): \(err)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: "\(d)/state"))
    }

    /// As an unprivileged user (setpriv, when the tests run as root): a socket folder the user
    /// cannot write and a group the user is not in are found by --check-config.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func checkConfigAsServiceUserFindsPermissionProblems() throws {
        let d = tempDir()
        let open = "\(d)/open"
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(d, 0o755)
        chmod(open, 0o777)
        func run(_ text: String) throws -> (Int32, String) {
            let path = write(text, d)
            chmod(path, 0o644)
            return try runKioskd(["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.kioskd, "--config", path, "--check-config"],
                                 executable: "/usr/bin/setpriv")
        }
        let ok = "state_dir = \"\(open)/state\"\n[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n[control]\nsocket = \"\(open)/c.sock\"\n"
        let (c0, e0) = try run(ok)
        #expect(c0 == 0, "\(e0)")
        let (c1, e1) = try run(ok + "group = \"root\"\n")
        #expect(c1 == 78)
        #expect(e1 == "kioskd: \(d)/kioskd.toml:8: key 'control.group': kioskd (uid 65534) is not a member of group \"root\", so it cannot give the control socket to it\n")
        let (c2, e2) = try run(ok.replacingOccurrences(of: "\(open)/c.sock", with: "\(d)/run/c.sock"))
        #expect(c2 == 78)
        #expect(e2 == "kioskd: \(d)/kioskd.toml:7: key 'control.socket': cannot create \(d)/run/c.sock: \(d) is not writable by uid 65534: access \(d) failed: Permission denied (errno 13)\n")
    }

    /// A state directory the service user cannot write (a read-only root) is a warning, not a
    /// config error: kioskd starts and says state is not saved. `state = "volatile"` never looks.
    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func unwritableStateDirIsAWarningForCheckConfig() throws {
        let d = tempDir()
        let open = "\(d)/open"
        try FileManager.default.createDirectory(atPath: "\(d)/ro/state", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        chmod(d, 0o755)
        chmod("\(d)/ro", 0o755)
        chmod("\(d)/ro/state", 0o755)
        chmod(open, 0o777)
        func run(_ text: String) throws -> (Int32, String) {
            let path = write(text, d)
            chmod(path, 0o644)
            return try runKioskd(["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.kioskd, "--config", path, "--check-config"],
                                 executable: "/usr/bin/setpriv")
        }
        let base = "[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n[control]\nsocket = \"\(open)/c.sock\"\n"
        let (c1, e1) = try run("state_dir = \"\(d)/ro/state\"\n" + base)
        #expect(c1 == 0, "\(e1)")
        #expect(e1.hasPrefix("kioskd: warning: \(d)/kioskd.toml:1: key 'state_dir': \(d)/ro/state is not writable by uid 65534: access \(d)/ro/state failed: Permission denied (errno 13); kioskd will start, but will not save"), "\(e1)")
        // The daemon's state store, opening the same directory, judges it the same way, in the same words.
        let judged = "\(d)/ro/state is not writable by uid 65534: access \(d)/ro/state failed: Permission denied (errno 13)"
        let daemon = try Child("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.kioskd, "--config", "\(d)/kioskd.toml"],
                               log: "\(d)/daemon.log")
        var logged = false
        for _ in 0..<500 where !logged && daemon.process.isRunning { usleep(20_000); logged = daemon.log.contains("state is not being saved") }
        daemon.signal(SIGTERM)
        #expect(daemon.wait(seconds: 10))
        #expect(daemon.log.contains("state is not being saved: the state directory \(judged); counter changes are refused"), "\(daemon.log)")
        let (c2, e2) = try run("state_dir = \"\(d)/ro/state/sub\"\n" + base)
        #expect(c2 == 0, "\(e2)")
        #expect(e2.contains("warning: \(d)/kioskd.toml:1: key 'state_dir': cannot create \(d)/ro/state/sub: \(d)/ro/state is not writable by uid 65534"), "\(e2)")
        // A path that can never be a directory stays an error; volatile state ignores the directory.
        #expect(FileManager.default.createFile(atPath: "\(d)/plain", contents: Data()))
        let (c3, _) = try run("state_dir = \"\(d)/plain/state\"\n" + base)
        #expect(c3 == 78)
        let (c4, e4) = try run("state_dir = \"\(d)/plain/state\"\nstate = \"volatile\"\n" + base)
        #expect(c4 == 0, "\(e4)")
        #expect(!e4.contains("warning"), "\(e4)")
    }

    @Test func killTestScript() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
        let kills = ProcessInfo.processInfo.environment["KIOSK_KILLS"] ?? "60"
        let p = try SpawnedProcess("/bin/bash", ["\(root)/scripts/kill-test.sh", kills, "120"],
                                   environment: ProcessInfo.processInfo.environment.merging(["KIOSKD_BIN_DIR": Binaries.dir]) { _, b in b },
                                   stdout: .pipe, stderr: .stdout)
        let text = p.output()
        p.wait()
        #expect(p.exitStatus == 0, "\(text)")
        #expect(text.contains("kill-test: OK"), "\(text)")
    }
}
