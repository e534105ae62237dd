import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskHTTP
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskState
import KioskTesting
import KioskTestTraits
import Synchronization
import Testing
import KioskPosix

@Suite(.ownThreads) struct ControlRouterTests {
    func refuse(_ method: String, _ uri: String, _ body: String = "") -> ControlRequestError? {
        do { _ = try ControlRouter.parse(method: method, uri: uri, body: Array(body.utf8)); return nil } catch {
            return error as? ControlRequestError
        }
    }

    @Test func goodRequests() throws {
        #expect(try ControlRouter.parse(method: "GET", uri: "/status", body: []) == .status)
        #expect(try ControlRouter.parse(method: "POST", uri: "/scene", body: Array(#"{"name":"clock"}"#.utf8)) == .scene(name: "clock"))
        #expect(try ControlRouter.parse(method: "POST", uri: "/counter/HOME/set", body: Array(#"{"value":12}"#.utf8)) == .counter(name: "HOME", op: .set, value: 12))
        #expect(try ControlRouter.parse(method: "POST", uri: "/counter/HOME/inc", body: []) == .counter(name: "HOME", op: .inc, value: nil))
        #expect(try ControlRouter.parse(method: "POST", uri: "/paint/save", body: Array(#"{"name":"a.png"}"#.utf8)) == .paint(op: .save, name: "a.png"))
        #expect(try ControlRouter.parse(method: "POST", uri: "/blank", body: Array(#"{"on":false}"#.utf8)) == .blank(on: false))
        #expect(try ControlRouter.parse(method: "POST", uri: "/screenshot", body: []) == .screenshot())
    }

    @Test func badRequestsNameTheField() {
        #expect(refuse("POST", "/scene", "{bad")?.status == 400)
        #expect(refuse("POST", "/scene", "{bad")?.message.hasPrefix("request body is not valid JSON") == true)
        #expect(refuse("POST", "/scene", "[1,2]")?.message == "request body must be a JSON object, got an array")
        #expect(refuse("POST", "/scene", "{}") == ControlRequestError(400, "missing field 'name' (a string)", field: "name"))
        #expect(refuse("POST", "/scene", "") == ControlRequestError(400, "missing request body: expected a JSON object"))
        #expect(refuse("POST", "/theme", #"{"name":3}"#) == ControlRequestError(400, "field 'name' must be a string, got a number (3)", field: "name"))
        #expect(refuse("POST", "/counter/HOME/set", #"{"value":"7"}"#) == ControlRequestError(400, "field 'value' must be an integer, got a string (\"7\")", field: "value"))
        #expect(refuse("POST", "/counter/HOME/set", #"{"value":1.5}"#) == ControlRequestError(400, "field 'value' must be an integer, got 1.5", field: "value"))
        #expect(refuse("POST", "/counter/HOME/set", #"{"value":true}"#)?.field == "value")
        #expect(refuse("POST", "/counter/HOME/set", "{}") == ControlRequestError(400, "missing field 'value' (an integer)", field: "value"))
        #expect(refuse("POST", "/counter/HOME/explode")?.status == 404)
        #expect(refuse("POST", "/blank", #"{"on":"yes"}"#) == ControlRequestError(400, "field 'on' must be true or false, got a string (\"yes\")", field: "on"))
        #expect(refuse("POST", "/paint/save", #"{"name":"../rel.png"}"#)?.field == "name")
        #expect(refuse("POST", "/screenshot", #"{"path":"/tmp/x.jpg"}"#)?.field == "path")
        #expect(refuse("GET", "/nowhere")?.status == 404)
        #expect(refuse("DELETE", "/status") == ControlRequestError(405, "method DELETE not allowed on /status; use GET"))
        #expect(refuse("GET", "/scene")?.status == 405)
    }
}

/// A daemon for the config file at `path` on a headless display of `size`, with its own loop,
/// driven on the calling thread (not started).
func headlessDaemon(_ path: String, size: Size = Size(width: 64, height: 48), state: StateStore = MemoryStateStore(),
                    time: TimeSource = SystemTimeSource()) throws -> (Daemon, HeadlessDisplay) {
    try headlessDaemon(path, size: size, state: state, loop: try EventLoop(), time: time)
}

/// A daemon on the headless display and on virtual time: `loop` is both its loop and its clock,
/// so the test moves time with `loop.advance(by:)` and the daemon's own timers fire on the way.
func headlessDaemon(_ path: String, size: Size = Size(width: 64, height: 48), state: StateStore = MemoryStateStore(),
                    on loop: ManualEventLoop) throws -> (Daemon, HeadlessDisplay) {
    try headlessDaemon(path, size: size, state: state, loop: loop, time: loop)
}

private func headlessDaemon(_ path: String, size: Size, state: StateStore, loop: any KioskLoop,
                            time: TimeSource) throws -> (Daemon, HeadlessDisplay) {
    let config = try DaemonConfig.load(path: path, environment: [:])
    let display = try HeadlessDisplay(size: size)
    let d = try Daemon(config: config, display: display, input: nil, state: state, loop: loop, time: time, logger: quietLogger)
    return (d, display)
}

extension ManualEventLoop {
    /// A virtual-time loop whose wall clock stands at `epochSeconds`.
    convenience init(epochSeconds: Int64) {
        self.init(realtime: epochSeconds * 1_000_000_000)
    }

    /// `advance(by:)` in seconds.
    @discardableResult
    func advance(seconds: Int64) -> Int { advance(by: seconds * 1_000_000_000) }
}

/// A daemon on the headless display with a scoreboard and a clock, driven on the calling thread.
func makeDaemon(_ dir: String, extra: String = "", digits: Int = 2) throws -> Daemon {
    let text = """
    state_dir = "\(dir)/state"
    [display]
    backend = "headless"
    headless_size = "320x200"
    [scenes]
    order = ["score", "clock"]
    [scene.score]
    kind = "counter"
    digits = \(digits)
    [[scene.score.counter]]
    name = "HOME"
    [[scene.score.counter]]
    name = "AWAY"
    [scene.clock]
    kind = "clock"
    [control]
    socket = "\(dir)/c.sock"
    \(extra)
    """
    return try DaemonRig.make(text, in: dir, logger: quietLogger)
}

@Suite(.ownThreads) struct DaemonCommandTests {
    /// kioskd starts its control server before the render loop runs: a counter change taken
    /// then (from the server's thread, into the one entrance) waits for the pipeline and is kept.
    @Test func aCounterChangeTakenBeforeTheLoopRunsIsKept() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        let answer = Mutex<ControlResponse?>(nil)
        daemon.intake.submit("HOME", .increment, answerOn: .decided) { r in answer.withLock { $0 = r } }
        daemon.startAsKioskd()
        for _ in 0..<5 where answer.withLock({ $0 }) == nil { try daemon.step() }
        let r = try #require(answer.withLock { $0 })
        #expect(r.status == 200 && r.jsonObject?["value"] as? Int == 1, "\(String(decoding: r.body, as: UTF8.self))")
        #expect(try daemon.counterValue("HOME") == 1)
        daemon.shutdown()
    }

    @Test func countersScenesThemesAndErrors() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        daemon.startAsKioskd()
        try daemon.step()
        #expect(daemon.manager.frameCount == 1)
        #expect(try daemon.answer(.counter(name: "HOME", op: .inc, value: nil)).jsonObject?["value"] as? Int == 1)
        #expect(try daemon.answer(.counter(name: "HOME", op: .set, value: 99)).status == 200)
        let over = try daemon.answer(.counter(name: "HOME", op: .set, value: 100))
        #expect(over.status == 422)
        #expect(over.jsonObject?["field"] as? String == "value")
        #expect((over.jsonObject?["error"] as? String)?.contains("99") == true)
        let unknown = try daemon.answer(.counter(name: "GUESTS", op: .inc, value: nil))
        #expect(unknown.status == 404)
        #expect(unknown.jsonObject?["error"] as? String == "unknown counter 'GUESTS'; counters: HOME, AWAY")
        #expect(try daemon.answer(.scene(name: "nope")).status == 404)
        #expect(try daemon.answer(.scene(name: "clock")).status == 200)
        #expect(daemon.manager.current.name == "clock")
        #expect(try daemon.answer(.theme(name: "high-contrast")).status == 200)
        #expect(daemon.manager.theme == .highContrast)
        #expect(try daemon.answer(.theme(name: "nope")).status == 404)
        #expect(daemon.handle(.paint(op: .clear, name: nil)).status == 404)
        let blank = daemon.handle(.blank(on: true))
        #expect(blank.jsonObject?["blanked"] as? Bool == true)
        #expect(daemon.display.isBlanked)
        _ = daemon.handle(.blank(on: false))
        let shot = daemon.handle(.screenshot())
        #expect(shot.contentType == "image/png")
        #expect(Array(shot.body.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        let status = daemon.status()
        #expect(status.scene == "clock")
        #expect(status.theme == "high-contrast")
        #expect(status.mode == "320x200")
        daemon.shutdown()

        // A restart finds the counter, the scene and the theme again.
        let again = try makeDaemon(d)
        again.startAsKioskd()
        #expect(again.manager.current.name == "clock")
        #expect(again.themeName == "high-contrast")
        #expect(try again.answer(.counter(name: "HOME", op: .dec, value: nil)).jsonObject?["value"] as? Int == 98)
        again.shutdown()
    }

    @Test func reloadKeepsRunningConfigWhenBrokenAndSwitchesWhenGood() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        daemon.startAsKioskd()
        let path = daemon.config.file
        let good = try String(contentsOfFile: path, encoding: .utf8)

        // Broken: an unknown scene kind on line 15.
        try good.replacingOccurrences(of: "kind = \"clock\"", with: "kind = \"clocks\"").write(toFile: path, atomically: true, encoding: .utf8)
        let bad = daemon.handle(.reload)
        #expect(bad.status == 422)
        #expect((bad.jsonObject?["error"] as? String)?.hasPrefix("\(path):15: key 'scene.clock.kind': unknown scene kind \"clocks\"") == true, "\(String(decoding: bad.body, as: UTF8.self))")
        #expect(daemon.manager.scenes.map(\.name) == ["score", "clock"])
        #expect(daemon.manager.current.name == "score")

        // Good: only the clock now, in literal mode.
        let newText = good.replacingOccurrences(of: "order = [\"score\", \"clock\"]", with: "order = [\"clock\"]")
            .replacingOccurrences(of: "[scene.score]\nkind = \"counter\"\ndigits = 2\n[[scene.score.counter]]\nname = \"HOME\"\n[[scene.score.counter]]\nname = \"AWAY\"\n", with: "")
        try newText.write(toFile: path, atomically: true, encoding: .utf8)
        let ok = daemon.handle(.reload)
        #expect(ok.status == 200, "\(String(decoding: ok.body, as: UTF8.self))")
        #expect(daemon.manager.scenes.map(\.name) == ["clock"])
        #expect(daemon.manager.current.name == "clock")
        daemon.shutdown()
    }
}

@Suite(.ownThreads, .serialized) struct ControlServerTests {
    /// Runs `daemon`'s loop on a thread with a control server in front of it.
    final class Harness: Sendable {
        let loop: LoopThread
        let server: ControlServer
        init(_ daemon: Daemon, timeoutMs: Int64 = 2000, execute: ControlServer.Execute? = nil) throws {
            var limits = ControlLimits()
            limits.requestTimeout = .milliseconds(timeoutMs)
            server = execute.map { ControlServer(settings: daemon.config.control, limits: limits, logger: quietLogger, execute: $0) }
                ?? DaemonRunner.makeControlServer(settings: daemon.config.control, limits: limits, daemon: daemon, logger: quietLogger)
            try server.start()
            loop = LoopThread(daemon)
        }
        func stop() {
            server.stop()
            loop.stop()
        }
    }

    @Test func requestsOverTheSocket() throws {
        let d = tempDir()
        let h = try Harness(try makeDaemon(d))
        defer { h.stop() }
        let c = ControlClient(socketPath: "\(d)/c.sock", timeout: 5)
        var st = stat()
        stat("\(d)/c.sock", &st)
        #expect(st.st_mode & 0o777 == 0o660)
        let s = try c.send(method: .GET, path: "/status")
        #expect(s.status == 200)
        #expect(s.jsonObject?["scene"] as? String == "score")
        let inc = try c.send(method: .POST, path: "/counter/AWAY/inc")
        #expect(inc.jsonObject?["value"] as? Int == 1)
        let bad = try c.send(method: .POST, path: "/counter/AWAY/set", body: Array(#"{"value": "x"}"#.utf8))
        #expect(bad.status == 400)
        #expect(bad.jsonObject?["field"] as? String == "value")
        let big = try c.send(method: .POST, path: "/scene", body: [UInt8](repeating: 0x20, count: ControlRouter.maxBodyBytes + 10))
        #expect(big.status == 413)
        let missing = try c.send(method: .GET, path: "/counter")
        #expect(missing.status == 404)
        // Still serving after all that.
        #expect(try c.send(method: .GET, path: "/status").status == 200)
    }

    /// Sends raw bytes on a fresh connection and returns what came back (until close or 2 s).
    func raw(_ path: String, _ bytes: [UInt8]) -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_un(); addr.sun_family = sa_family_t(AF_UNIX)
        let p = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in p.enumerated() { $0[i] = b } }
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard ok == 0 else { return "connect failed" }
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func malformedHTTPNeverStopsTheServer() throws {
        let d = tempDir()
        let h = try Harness(try makeDaemon(d))
        defer { h.stop() }
        let sock = "\(d)/c.sock"
        #expect(raw(sock, Array("NOT HTTP AT ALL\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 400"))
        // A truncated body: never carried out.
        let cut = raw(sock, Array("POST /scene HTTP/1.1\r\nContent-Length: 20\r\n\r\n{\"name\":\"clock\"".utf8))
        #expect(!cut.hasPrefix("HTTP/1.1 200"), "\(cut)")
        let lying = raw(sock, Array("POST /scene HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n{}".utf8))
        #expect(lying.hasPrefix("HTTP/1.1 413"), "\(lying)")
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            _ = raw(sock, (0..<Int.random(in: 1...600, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        }
        let r = try ControlClient(socketPath: sock, timeout: 5).send(method: .GET, path: "/status")
        #expect(r.status == 200)
        #expect(r.jsonObject?["scene"] as? String == "score")
    }

    @Test func busyLoopAnswers503AndClientTimesOut() throws {
        let d = tempDir()
        // An executor that never answers: the server gives up after 200 ms.
        let h = try Harness(try makeDaemon(d), timeoutMs: 200, execute: { _ in })
        defer { h.stop() }
        let r = try ControlClient(socketPath: "\(d)/c.sock", timeout: 5).send(method: .GET, path: "/status")
        #expect(r.status == 503)
        #expect((r.jsonObject?["error"] as? String)?.hasPrefix("kioskd is busy") == true)
        // A client with a shorter patience than the server reports a timeout.
        do {
            _ = try ControlClient(socketPath: "\(d)/c.sock", timeout: 0.05).send(method: .GET, path: "/status")
            Issue.record("expected a timeout")
        } catch let e as ControlClientError {
            #expect(e.kind == .timeout)
            #expect(e.description.contains("did not answer within 0.05 s"))
        }
    }

    @Test func stoppedDaemonIsReportedPlainly() throws {
        let d = tempDir()
        do {
            _ = try ControlClient(socketPath: "\(d)/none.sock").send(method: .GET, path: "/status")
            Issue.record("expected an error")
        } catch let e as ControlClientError {
            #expect(e == ControlClientError(kind: .notRunning, description: "kioskd is not running (no socket at \(d)/none.sock)"))
        }
        // A stale socket file left by a killed daemon.
        let h = try Harness(try makeDaemon(d))
        h.stop()
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un(); addr.sun_family = sa_family_t(AF_UNIX)
        let p = Array("\(d)/c.sock".utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in p.enumerated() { $0[i] = b } }
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(fd)
        do {
            _ = try ControlClient(socketPath: "\(d)/c.sock").send(method: .GET, path: "/status")
            Issue.record("expected an error")
        } catch let e as ControlClientError {
            #expect(e.kind == .notRunning)
            #expect(e.description.hasPrefix("kioskd is not running"))
        }
    }
}

@Suite(.ownThreads) struct PaintCommandTests {
    @Test func paintUndoRedoClearSave() throws {
        let d = tempDir()
        let path = write("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "400x300"
        [scene.paint]
        kind = "paint"
        """, d)
        let config = try DaemonConfig.load(path: path, environment: [:])
        let daemon = try DaemonRunner.makeDaemon(config: config, state: MemoryStateStore(), loop: try EventLoop(), logger: quietLogger)
        daemon.startAsKioskd()
        for e in TouchScript.strokes([ScriptedInput.line(from: Point(x: 0.2, y: 0.2), to: Point(x: 0.6, y: 0.4))]) {
            daemon.manager.input(e)
        }
        #expect(daemon.handle(.paint(op: .undo, name: nil)).jsonObject?["strokes"] as? Int == 0)
        let redo = daemon.handle(.paint(op: .redo, name: nil)).jsonObject
        #expect(redo?["strokes"] as? Int == 1)
        #expect(redo?["changed"] as? Bool == true)
        let file = "\(d)/state/paintings/saved.png"
        let saved = daemon.handle(.paint(op: .save, name: "saved.png"))
        #expect(saved.status == 200, "\(String(decoding: saved.body, as: UTF8.self))")
        let png = FileManager.default.contents(atPath: file).map { [UInt8]($0.prefix(4)) }
        #expect(png == [0x89, 0x50, 0x4E, 0x47])
        #expect(daemon.handle(.paint(op: .clear, name: nil)).jsonObject?["strokes"] as? Int == 0)
        let nothing = daemon.handle(.paint(op: .undo, name: nil)).jsonObject
        #expect(nothing?["changed"] as? Bool != nil)
        // Counters are not there: a clear 404 naming what exists.
        let c = try daemon.answer(.counter(name: "HOME", op: .inc, value: nil))
        #expect(c.status == 404)
        #expect(c.jsonObject?["error"] as? String == "unknown counter 'HOME'; no scene has counters")
        daemon.shutdown()
    }
}

@Suite(.ownThreads) struct ReloadThemeTests {
    @Test func reloadRereadsThemeFilesAndKeepsRuntimeChoice() throws {
        let d = tempDir()
        try FileManager.default.createDirectory(atPath: "\(d)/themes", withIntermediateDirectories: true)
        write("base = \"dark\"\n[palette]\ntext = \"#111111\"\n", "\(d)/themes", "mine.toml")
        let daemon = try makeDaemon(d, extra: "")
        // makeDaemon's config has no theme key: add one and reload.
        let path = daemon.config.file
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try ("theme = \"mine\"\n" + text).write(toFile: path, atomically: true, encoding: .utf8)
        daemon.startAsKioskd()
        #expect(daemon.handle(.reload).status == 200)
        #expect(daemon.themeName == "mine")
        #expect(daemon.manager.theme.palette.text == Color(hex: "#111111"))
        // An edit to the theme file applies on reload.
        write("base = \"dark\"\n[palette]\ntext = \"#222222\"\n", "\(d)/themes", "mine.toml")
        #expect(daemon.handle(.reload).status == 200)
        #expect(daemon.manager.theme.palette.text == Color(hex: "#222222"))
        // A theme chosen at run time survives a reload of an unchanged config.
        #expect(try daemon.answer(.theme(name: "light")).status == 200)
        #expect(daemon.handle(.reload).status == 200)
        #expect(daemon.themeName == "light")
        #expect(daemon.manager.theme == .light)
        daemon.shutdown()
    }
}
