import Foundation
import KioskControl
import KioskCore
import KioskState
import KioskHTTP
import KioskTesting
@testable import KioskDaemon
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle
import KioskTestTraits
import Testing

/// A raw client connection to a Unix socket (plain syscalls, so tests control every byte,
/// half-closes and what they read).
final class RawConn: Sendable {
    let fd: Int32
    init?(_ path: String, receiveTimeout: Double = 3) {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var addr = sockaddr_un(); addr.sun_family = sa_family_t(AF_UNIX)
        let p = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in p.enumerated() { $0[i] = b } }
        let ok = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        guard ok == 0 else { close(fd); return nil }
        setReceiveTimeout(receiveTimeout)
    }
    deinit { close(fd) }

    func setReceiveTimeout(_ s: Double) {
        var tv = timeval(tv_sec: Int(s), tv_usec: Int((s - Double(Int(s))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends everything; returns the errno of a failed send, or 0.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int32 {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 { if errno == EINTR { continue }; return errno }
            off += n
        }
        return 0
    }
    func send(_ s: String) { send(Array(s.utf8)) }
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// How reading ended: clean end of stream, the receive timeout, or an errno.
    enum End: Equatable { case eof, timeout, error(Int32) }

    /// Reads until end of stream, error or the receive timeout.
    func readAll() -> (String, End) {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buf, buf.count, 0)
            if n > 0 { out += buf[0..<n]; continue }
            if n < 0 && errno == EINTR { continue }
            let end: End = n == 0 ? .eof : ((errno == EAGAIN || errno == EWOULDBLOCK) ? .timeout : .error(errno))
            return (String(decoding: out, as: UTF8.self), end)
        }
    }

    /// Reads until `count` complete HTTP responses (Content-Length framed) have arrived, or end/timeout.
    func readResponses(_ count: Int) -> [(status: Int, headers: String, body: String)] {
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        var parsed: [(Int, String, String)] = []
        while parsed.count < count {
            let n = recv(fd, &buf, buf.count, 0)
            if n <= 0 { break }
            data += buf[0..<n]
            while let r = Self.takeResponse(&data) { parsed.append(r) }
        }
        return parsed
    }

    static func takeResponse(_ data: inout [UInt8]) -> (Int, String, String)? {
        let sep: [UInt8] = [13, 10, 13, 10]
        guard let i = (0...max(0, data.count - 4)).first(where: { data.count >= 4 && Array(data[$0..<$0 + 4]) == sep }) else { return nil }
        let head = String(decoding: data[0..<i], as: UTF8.self)
        let len = head.split(separator: "\r\n").first(where: { $0.lowercased().hasPrefix("content-length:") })
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        guard data.count >= i + 4 + len else { return nil }
        let body = String(decoding: data[(i + 4)..<(i + 4 + len)], as: UTF8.self)
        data.removeFirst(i + 4 + len)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head, body)
    }
}

/// The `"error"` text of a JSON body ("" when the body is not a JSON object with one).
func jsonError(_ body: String) -> String {
    ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?["error"] as? String ?? ""
}

/// The body part of a raw HTTP answer.
func bodyOf(_ raw: String) -> String {
    raw.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
}

/// Accepted (server-side) sockets of the control server whose socket lives in `dir`: entries of
/// /proc/net/unix bound under the server's private bind directory, minus the listener.
func serverSockets(_ dir: String) -> Int {
    let table = (try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8)) ?? ""
    let n = table.split(separator: "\n").filter { $0.hasSuffix("/s") && $0.contains(" \(dir)/.kioskd-") }.count
    return n - 1
}

/// Polls `cond` every 10 ms for at most `seconds`; returns its last value.
@discardableResult
func waitFor(_ seconds: Double, _ cond: () -> Bool) -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if cond() { return true }
        usleep(10_000)
    }
    return cond()
}

@Suite(.ownThreads, .serialized) struct ControlHardeningTests {
    /// The daemon's loop on a thread with a control server in front of it, with `limits`.
    final class Harness: Sendable {
        let loop: LoopThread
        let server: ControlServer
        let sock: String
        init(_ dir: String, limits: ControlLimits = ControlLimits()) throws {
            let daemon = try makeDaemon(dir)
            sock = "\(dir)/c.sock"
            server = DaemonRunner.makeControlServer(settings: daemon.config.control, limits: limits, daemon: daemon, logger: quietLogger)
            try server.start()
            loop = LoopThread(daemon)
        }
        func get(_ name: String) -> Int {
            loop.run { $0.handle(.counter(name: name, op: .get, value: nil)).jsonObject?["value"] as? Int ?? -1 }
        }
        func stop() {
            server.stop()
            loop.stop()
        }
    }

    static let incRequest = "POST /counter/HOME/inc HTTP/1.1\r\nHost: kioskd\r\nContent-Length: 0\r\n\r\n"

    /// The cap's test keeps its connections idle for as long as it needs: the idle timeout is
    /// far away, so a slow machine cannot close the admitted ones midway and admit others
    /// (that is `idleConnectionsAreClosedAfterTheIdleTimeout`'s subject).
    @Test func connectionCapRefusesExtrasAndTheRenderLoopKeepsGoing() throws {
        let d = tempDir()
        var limits = ControlLimits()
        limits.maxConnections = 16
        limits.idleTimeout = .seconds(600)
        let h = try Harness(d, limits: limits)
        defer { h.stop() }
        // The clock scene draws a frame every second: frames must keep coming meanwhile.
        #expect(try ControlClient(socketPath: h.sock, timeout: 5).send(method: .POST, path: "/scene", json: ["name": "clock"]).status == 200)
        let framesBefore = h.loop.run { $0.manager.frameCount }

        var held = (0..<(limits.maxConnections + 200)).compactMap { _ in RawConn(h.sock, receiveTimeout: 20) }
        #expect(held.count == limits.maxConnections + 200)
        // The daemon keeps at most twice the cap's worth of sockets for them (accepted sockets
        // carry the address the listener was bound to, in the private directory next to the socket).
        let bounded = waitFor(20) { serverSockets(d) <= 2 * limits.maxConnections }
        #expect(bounded, "the server holds \(serverSockets(d)) sockets for \(held.count) connections")
        #expect(waitFor(20) { h.server.connectionCount == limits.maxConnections }, "\(h.server.connectionCount) connections served")

        // Over the cap: as many again get a 503 naming the limit (after the wait for their
        // request), the rest are closed at once; all are closed.
        var refused = 0, dropped = 0
        for c in held[limits.maxConnections...] {
            let (text, end) = c.readAll()
            if text.hasPrefix("HTTP/1.1 503") {
                refused += 1
                #expect(jsonError(bodyOf(text)) == "too many control connections: at most 16 at once; try again later")
            } else if text.isEmpty {
                dropped += 1
            }
            #expect(end == .eof)
        }
        #expect(refused == limits.maxConnections)
        #expect(dropped == 200 - limits.maxConnections)

        // A new client while the cap is reached: a clear 503 after its request.
        let early = try ControlClient(socketPath: h.sock, timeout: 5).send(method: .GET, path: "/status")
        #expect(early.status == 503)
        #expect(early.jsonObject?["error"] as? String == "too many control connections: at most 16 at once; try again later")
        // The admitted connections are still open, and the render loop still presents frames.
        #expect(h.server.connectionCount == limits.maxConnections)
        let ticked = waitFor(10) { h.loop.run { $0.manager.frameCount } > framesBefore + 1 }
        #expect(ticked, "the render loop kept presenting frames (\(framesBefore) → \(h.loop.run { $0.manager.frameCount }))")

        // Once the clients close, the cap frees and a request is carried out.
        held.removeAll()
        #expect(waitFor(20) { h.server.connectionCount == 0 }, "\(h.server.connectionCount) connections still served after the clients closed")
        let r = try ControlClient(socketPath: h.sock, timeout: 5).send(method: .POST, path: "/counter/HOME/inc")
        #expect(r.status == 200)
        #expect(r.jsonObject?["value"] as? Int == 1)
    }

    /// A connection that sends nothing is closed by the server once the idle timeout has passed
    /// since it was accepted (never before), without an answer, and its place is free again.
    @Test func idleConnectionsAreClosedAfterTheIdleTimeout() throws {
        let d = tempDir()
        var limits = ControlLimits()
        limits.maxConnections = 16
        limits.idleTimeout = .seconds(2)
        let h = try Harness(d, limits: limits)
        defer { h.stop() }
        #expect(try ControlClient(socketPath: h.sock, timeout: 5).send(method: .POST, path: "/scene", json: ["name": "clock"]).status == 200)
        let framesBefore = h.loop.run { $0.manager.frameCount }

        let opened = Date()
        let held = (0..<limits.maxConnections).compactMap { _ in RawConn(h.sock, receiveTimeout: 30) }
        #expect(held.count == limits.maxConnections)
        #expect(waitFor(20) { h.server.connectionCount == limits.maxConnections }, "\(h.server.connectionCount) connections served")
        for (i, c) in held.enumerated() {
            let (text, end) = c.readAll()
            let after = Date().timeIntervalSince(opened)
            #expect(end == .eof, "connection \(i): \(end) after \(after) s")
            #expect(text.isEmpty, "connection \(i) was answered: \(text)")
            // Accepted after `opened`, so its idle time ends at least 2 s after it.
            #expect(after >= 1.95, "connection \(i) closed \(after) s after the connections were opened")
        }
        #expect(waitFor(10) { h.server.connectionCount == 0 }, "\(h.server.connectionCount) connections still served")
        let framesAfter = h.loop.run { $0.manager.frameCount }
        #expect(framesAfter > framesBefore, "the render loop kept presenting frames (\(framesBefore) → \(framesAfter))")
        let r = try ControlClient(socketPath: h.sock, timeout: 5).send(method: .POST, path: "/counter/HOME/inc")
        #expect(r.status == 200)
        #expect(r.jsonObject?["value"] as? Int == 1)
    }

    @Test func partialHeadersAndBodiesAreAnswered408() throws {
        let d = tempDir()
        var limits = ControlLimits()
        limits.headerTimeout = .milliseconds(300)
        limits.bodyTimeout = .milliseconds(300)
        let h = try Harness(d, limits: limits)
        defer { h.stop() }

        let body = RawConn(h.sock, receiveTimeout: 3)!
        body.send("POST /counter/HOME/set HTTP/1.1\r\nContent-Length: 20\r\n\r\n{\"value\"")
        let t0 = Date()
        let (text, end) = body.readAll()
        #expect(text.hasPrefix("HTTP/1.1 408"), "\(text)")
        #expect(jsonError(bodyOf(text)) == "request body not complete within 0.3 s (8 of 20 bytes received); not carried out")
        #expect(end == .eof)
        #expect(Date().timeIntervalSince(t0) < 2)

        let head = RawConn(h.sock, receiveTimeout: 3)!
        head.send("GET /status HTTP/1.1\r\nHost: kio")
        let (text2, _) = head.readAll()
        #expect(text2.hasPrefix("HTTP/1.1 408"), "\(text2)")
        #expect(jsonError(bodyOf(text2)) == "request headers not complete within 0.3 s")
        #expect(h.get("HOME") == 0)
    }

    @Test func pipelinedRequestsAreEachAnsweredInOrder() throws {
        let d = tempDir()
        let h = try Harness(d)
        defer { h.stop() }
        let c = RawConn(h.sock, receiveTimeout: 3)!
        c.send(Self.incRequest + Self.incRequest + Self.incRequest)
        let answers = c.readResponses(3)
        #expect(answers.map(\.status) == [200, 200, 200])
        #expect(answers.map { ((try? JSONSerialization.jsonObject(with: Data($0.body.utf8))) as? [String: Any])?["value"] as? Int } == [1, 2, 3])
        #expect(h.get("HOME") == 3)

        // "Connection: close" on the second: it is the last one served; the third is not carried out.
        let c2 = RawConn(h.sock, receiveTimeout: 3)!
        c2.send(Self.incRequest + Self.incRequest.replacingOccurrences(of: "Host: kioskd\r\n", with: "Host: kioskd\r\nConnection: close\r\n") + Self.incRequest)
        let answers2 = c2.readResponses(3)
        #expect(answers2.map(\.status) == [200, 200])
        #expect(answers2.last?.headers.lowercased().contains("connection: close") == true)
        #expect(c2.readAll().1 == .eof)
        #expect(h.get("HOME") == 5)
    }

    @Test func halfClosedClientGetsItsAnswer() throws {
        let d = tempDir()
        let h = try Harness(d)
        defer { h.stop() }
        let c = RawConn(h.sock, receiveTimeout: 3)!
        c.send(Self.incRequest)
        c.shutdownWrite()
        let (text, end) = c.readAll()
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text)")
        #expect(text.contains("\"value\":1"))
        #expect(end == .eof)
        #expect(h.get("HOME") == 1)
    }

    /// A request carried out on the render loop (a scene choice) that the loop did not start
    /// before its deadline is dropped. A counter change does not wait for the loop at all: it
    /// enters the one entrance from the server's thread and is committed and answered there.
    @Test func requestNotStartedBeforeItsDeadlineIsNotCarriedOut() throws {
        let d = tempDir()
        var limits = ControlLimits()
        limits.requestTimeout = .milliseconds(200)
        let h = try Harness(d, limits: limits)
        defer { h.stop() }
        #expect(h.loop.run { $0.manager.current.name } == "score")
        // The render loop is blocked for longer than the timeout.
        let release = DispatchSemaphore(value: 0)
        h.loop.daemon.loop.post { _ = release.wait(timeout: .now() + 10) }
        let client = ControlClient(socketPath: h.sock, timeout: 5)
        let r = try client.send(method: .POST, path: "/scene", body: Array(#"{"name":"clock"}"#.utf8))
        #expect(r.status == 503)
        #expect(r.jsonObject?["error"] as? String == "kioskd is busy: the render loop did not start the request within 200 ms; not carried out")
        let inc = try client.send(method: .POST, path: "/counter/HOME/inc")
        #expect(inc.status == 200 && inc.jsonObject?["value"] as? Int == 1, "a counter change is answered while the loop is blocked")
        release.signal()
        // The loop is free again: the dropped choice was not applied; the increment is shown.
        #expect(h.loop.run { $0.manager.current.name } == "score")
        #expect(h.get("HOME") == 1)
        #expect(try client.send(method: .POST, path: "/scene", body: Array(#"{"name":"clock"}"#.utf8)).status == 200)
    }

    @Test func startedRequestIsAnsweredWithItsRealResult() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        var limits = ControlLimits()
        limits.requestTimeout = .milliseconds(100)
        limits.resultTimeout = .milliseconds(600)
        // Starts at once and takes longer than the request timeout; `slow` takes longer than both.
        let server = ControlServer(settings: daemon.config.control, limits: limits, logger: quietLogger) { job in
            Thread {
                job.run { cmd in
                    if case .scene(let name, _) = cmd {
                        usleep(name == "slow" ? 1_500_000 : 300_000)
                        return .json(200, ChoiceAnswer(scene: name))
                    }
                    return .error(404, "no")
                }
            }.start()
        }
        try server.start()
        defer { server.stop() }
        let c = ControlClient(socketPath: "\(d)/c.sock", timeout: 5)
        let r = try c.send(method: .POST, path: "/scene", json: ["name": "clock"])
        #expect(r.status == 200)
        #expect(r.jsonObject?["scene"] as? String == "clock")
        let slow = try c.send(method: .POST, path: "/scene", json: ["name": "slow"])
        #expect(slow.status == 504)
        #expect(slow.jsonObject?["error"] as? String == "kioskd started the request but it did not finish within 0.6 s; it may or may not have been carried out")
    }

    @Test func socketIsNeverConnectableByOthers() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        let sock = "\(d)/c.sock"
        let old = umask(0)
        defer { umask(old) }
        for _ in 0..<20 {
            // Watches the final path as tightly as it can; records the mode it first sees.
            let firstMode = Watched()
            let watcher = Thread {
                var st = stat()
                while !firstMode.stopped {
                    if lstat(sock, &st) == 0 { firstMode.set(st.st_mode & 0o7777); return }
                }
            }
            watcher.start()
            let server = DaemonRunner.makeControlServer(settings: daemon.config.control, limits: ControlLimits(), daemon: daemon, logger: quietLogger)
            try server.start()
            waitFor(2) { firstMode.value != 0 }
            firstMode.stop()
            #expect(firstMode.value == 0o660, "the socket appeared with mode \(String(firstMode.value, radix: 8))")
            server.stop()
            #expect(!FileManager.default.fileExists(atPath: sock))
        }
        // Nothing is left behind next to the socket.
        #expect(try FileManager.default.contentsOfDirectory(atPath: d).sorted() == ["kioskd.toml", "state"])
    }

    @Test func protocolErrorsAreAnsweredWithJSON() throws {
        let d = tempDir()
        let h = try Harness(d)
        defer { h.stop() }
        let garbage = RawConn(h.sock)!
        garbage.send("NOT HTTP AT ALL\r\n\r\n")
        let (text, end) = garbage.readAll()
        #expect(text.hasPrefix("HTTP/1.1 400"), "\(text)")
        #expect(text.lowercased().contains("content-type: application/json"))
        #expect(jsonError(bodyOf(text)) == "malformed HTTP request: invalid method")
        #expect(end == .eof)

        let huge = RawConn(h.sock)!
        huge.send("GET /status HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 100_000) + "\r\n\r\n")
        let (text2, _) = huge.readAll()
        #expect(text2.hasPrefix("HTTP/1.1 431"), "\(text2.prefix(200))")
        #expect(jsonError(bodyOf(text2)) == "malformed HTTP request: request headers too large (at most 80 KiB)")
    }

    @Test func oversizedBodyGets413AndACleanClose() throws {
        let d = tempDir()
        let h = try Harness(d)
        defer { h.stop() }
        let c = RawConn(h.sock, receiveTimeout: 5)!
        let body = [UInt8](repeating: 0x20, count: 1 << 20)
        let sendErrno = NIOLockedValueBox<Int32>(-1)
        let sent = DispatchSemaphore(value: 0)
        let writer = Thread {
            let e = c.send(Array("POST /scene HTTP/1.1\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
            sendErrno.withLockedValue { $0 = e }
            sent.signal()
        }
        writer.start()
        let (text, end) = c.readAll()
        #expect(text.hasPrefix("HTTP/1.1 413"), "\(text.prefix(200))")
        #expect(jsonError(bodyOf(text)) == "request body too large: at most 65536 bytes")
        #expect(end == .eof)
        // Joins the writer.
        #expect(sent.wait(timeout: .now() + 5) == .success, "the client's send did not return within 5 s")
        let errnum = sendErrno.withLockedValue { $0 }
        #expect(errnum == 0, "the client could send its whole body (errno \(errnum))")
        // The NIO client (kioskctl) gets the answer too.
        let r = try ControlClient(socketPath: h.sock, timeout: 5).send(method: .POST, path: "/scene", body: body)
        #expect(r.status == 413)
    }
}

/// Collects every log message (thread-safe).
@Suite(.ownThreads, .serialized) struct ControlShutdownTests {
    /// Clients keep sending `inc` while the service group stops: every acknowledged increment is
    /// on disk, and every increment on disk was acknowledged.
    @Test func stopUnderLoadAnswersEverythingItCarriesOut() async throws {
        let d = tempDir()
        // Enough digits that no increment of the run is refused at the counter's top.
        let daemon = try makeDaemon(d, digits: 9)
        let logs = CapturedLog(level: .debug)
        let server = DaemonRunner.makeControlServer(settings: daemon.config.control, limits: ControlLimits(), daemon: daemon, logger: logs.logger)
        var config = ServiceGroupConfiguration(services: [
            .init(service: RenderLoopService(daemon: daemon, notifier: SystemdNotifier(logger: quietLogger), logger: logs.logger)),
            .init(service: ControlServerService(server: server)),
        ], logger: logs.logger)
        config.maximumGracefulShutdownDuration = .seconds(5)
        let group = ServiceGroup(configuration: config)
        async let run: Void = group.run()
        let sock = "\(d)/c.sock"
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: sock) { try await Task.sleep(nanoseconds: 10_000_000) }

        let answered = ManagedCounter()
        let clients = 12
        let done = DispatchGroup()
        for _ in 0..<clients {
            done.enter()
            Thread {
                defer { done.leave() }
                while true {
                    guard let c = RawConn(sock, receiveTimeout: 5) else { return }
                    c.send(ControlHardeningTests.incRequest)
                    let r = c.readResponses(1)
                    if r.first?.status == 200 { answered.add() } else if r.isEmpty, c.readAll().1 != .eof { return }
                }
            }.start()
        }
        // Stop while the clients are busy.
        for _ in 0..<1000 where answered.value < 20 { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(answered.value >= 20)
        // NIO reports scheduling on a stopped event loop on stderr: capture stderr while stopping
        // (and pass on what was captured).
        let errPath = "\(d)/stderr"
        let errFD = open(errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let savedErr = dup(2)
        fflush(nil)
        dup2(errFD, 2)
        await group.triggerGracefulShutdown()
        try await run
        // The group has returned: the server's threads are shut down, so nothing more is reported.
        #expect(done.wait(timeout: .now() + 10) == .success, "the clients did not finish within 10 s of the stop")
        fflush(nil)
        dup2(savedErr, 2)
        close(savedErr)
        close(errFD)
        let err = (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? ""
        FileHandle.standardError.write(Data(err.utf8))

        // The render loop finished its shutdown (which closes the state store) within the group's time.
        #expect(!logs.all.contains { $0.contains("did not stop in time") }, "\(logs.all.suffix(20))")
        // Read without the lock: other suites in this process start child processes, which share
        // the lock's open file description between their fork and exec.
        let store = try FileStateStore(directory: "\(d)/state", logger: quietLogger, access: .readOnly)
        let onDisk = Int(store.load("counter.score.HOME") ?? "0") ?? -1
        #expect(onDisk == answered.value, "\(onDisk) increments on disk, \(answered.value) acknowledged")
        #expect(!err.contains("already shut down"), "\(err)")
        #expect(!logs.all.contains { $0.contains("already shut down") })
        #expect(!FileManager.default.fileExists(atPath: sock))
    }
}

/// A mode seen by a watching thread.
final class Watched: @unchecked Sendable {
    private let lock = NSLock()
    private var mode: mode_t = 0
    private var halt = false
    func set(_ m: mode_t) { lock.lock(); mode = m; lock.unlock() }
    var value: mode_t { lock.lock(); defer { lock.unlock() }; return mode }
    func stop() { lock.lock(); halt = true; lock.unlock() }
    var stopped: Bool { lock.lock(); defer { lock.unlock() }; return halt }
}

final class ManagedCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var n = 0
    func add() { lock.lock(); n += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return n }
}
