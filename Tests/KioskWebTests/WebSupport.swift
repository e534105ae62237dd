import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskDaemonTesting
@testable import KioskDaemon
import KioskPosix
import KioskWeb
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

let quietLogger: Logger = {
    var l = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    l.logLevel = .critical
    return l
}()

/// A short fresh directory (the control socket inside must stay under 100 bytes).
func shortDir() -> String {
    var t = Array("/tmp/k-web-XXXXXX".utf8CString)
    let p = t.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }!
    return String(cString: p)
}

/// A daemon (headless, counter + clock + paint scenes) as kioskd runs it — on its own loop
/// thread, with its command pipeline — its control socket and its web server on a free
/// loopback port.
final class WebKiosk: @unchecked Sendable {
    // @unchecked: the fields are set once in `start` before the kiosk is shared, then only read.
    let dir: String
    var daemon: LoopBound<Daemon>!
    var server: WebServer!
    var control: ControlServer!
    var port = 0
    private var group: ServiceGroup!
    private var runTask: Task<Void, Error>?
    private let finished = DispatchSemaphore(value: 0)

    init(dir: String = shortDir()) { self.dir = dir }

    /// `setup`: whether the screen offers the first-boot owner code (`[web] setup`; off unless a test is about it).
    static func config(_ dir: String, extra: String = "", setup: Bool = false) -> String {
        """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scenes]
        order = ["score", "clock", "paint"]
        [scene.score]
        kind = "counter"
        digits = 2
        [[scene.score.counter]]
        name = "HOME"
        [[scene.score.counter]]
        name = "AWAY"
        [scene.clock]
        kind = "clock"
        [scene.paint]
        kind = "paint"
        [control]
        socket = "\(dir)/c.sock"
        [web]
        listen = "127.0.0.1:8080"
        url = "http://kiosk.test:8080/"
        setup = \(setup)
        \(extra)
        """
    }

    func start(limits: WebLimits = WebLimits(), extra: String = "", setup: Bool = false) async throws {
        let loop = try EventLoop()
        // Made as kioskd makes it (the rig), started on its loop's thread with the pipeline's.
        let d = try DaemonRig.make(WebKiosk.config(dir, extra: extra, setup: setup), in: dir, loop: loop, logger: quietLogger)
        let config = d.config
        var web = config.web!
        web.port = 0
        server = try WebService.make(settings: web, limits: limits, daemon: d, logger: quietLogger)
        control = DaemonRunner.makeControlServer(settings: config.control, daemon: d, logger: quietLogger)
        let bound = LoopBound(d, loop: loop)
        daemon = bound
        let finished = self.finished
        // Posted before the thread runs: the daemon starts before anything a test posts.
        loop.post { bound.value.startAsKioskd(committedByTest: false) }
        Thread {
            try? loop.run()
            finished.signal()
        }.start()
        try await control.start()
        group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [server], logger: quietLogger))
        let g = group!
        runTask = Task { try await g.run() }
        port = try await server.port()
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await runTask?.value
        await control.stop()
        let d = daemon!
        d.post { $0.shutdown(); $0.eventLoop?.stop() }
        _ = finished.wait(timeout: .now() + 10)
    }

    func onLoop<T: Sendable>(_ body: @escaping @Sendable (Daemon) -> T) -> T {
        let sem = DispatchSemaphore(value: 0)
        let out = NIOLockedValueBox<T?>(nil)
        daemon.post { d in
            out.withLockedValue { $0 = body(d) }
            sem.signal()
        }
        sem.wait()
        return out.withLockedValue { $0 }!
    }

    /// A command through the control socket, as kioskctl sends it.
    func ctl(_ command: ControlCommand) async throws -> ControlResponse {
        let path = "\(dir)/c.sock"
        return try await offPool { try ControlClient(socketPath: path, timeout: 5).send(command) }
    }

    /// Opens a pairing code and redeems it; returns the cookie header value.
    func pairedCookie(role: String = "operator", name: String = "phone") async throws -> String {
        let code = try await ctl(.pair(role: role, show: true)).decode(PairAnswer.self).code
        let r = try await http(port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "\#(name)"}"#)
        guard r.status == 200, let set = r.headers["set-cookie"] else { throw KioskError.control("pairing failed: \(r.status) \(r.text)") }
        return String(set.split(separator: ";")[0])
    }

    var frameCount: UInt64 { onLoop { $0.manager.frameCount } }
}

struct HTTPReply: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
    var error: String? { (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["error"] as? String }
}

/// Runs blocking work (sockets, the control client) on a thread of its own, never on Swift's
/// cooperative pool: the web server's handlers run there, and a test blocking its few threads
/// would starve them.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        Thread { c.resume(with: Result { try body() }) }.start()
    }
}

/// A blocking TCP connection to 127.0.0.1:port with a receive timeout.
final class TCP: @unchecked Sendable {
    // @unchecked: each connection is used by one test, one call at a time.
    let fd: Int32
    /// `from`: the loopback address to connect from (any 127.x.y.z), nil for the system's choice.
    init(_ port: Int, timeoutSeconds: Int = 5, from: String? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Posix.error("socket", path: "127.0.0.1:\(port)", errno: errno) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        if let from {
            var src = sockaddr_in()
            src.sin_family = sa_family_t(AF_INET)
            src.sin_addr.s_addr = inet_addr(from)
            let b = withUnsafePointer(to: &src) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            if b != 0 { let e = errno; throw Posix.error("bind", path: from, errno: e) }
        }
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        // Not closed here: an initialiser that throws after every property is set still runs
        // deinit, which closes it; closing twice could close another thread's new descriptor.
        if r != 0 { let e = errno; throw Posix.error("connect", path: "127.0.0.1:\(port)", errno: e) }
    }
    deinit { Foundation.close(fd) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }
    @discardableResult
    func send(_ s: String) -> Bool { send(Array(s.utf8)) }

    /// Reads what arrives until `done` says enough, EOF or the timeout.
    func read(until done: ([UInt8]) -> Bool = { _ in false }) -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while !done(out) {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return out
    }

    /// `read(until:)` off the cooperative pool.
    func readAsync(until done: @escaping @Sendable ([UInt8]) -> Bool = { _ in false }) async -> [UInt8] {
        (try? await offPool { self.read(until: done) }) ?? []
    }

    /// Reads one HTTP answer with a Content-Length.
    func readReply() -> HTTPReply? {
        let raw = read { b in
            guard let end = TCP.headerEnd(b) else { return false }
            let head = String(decoding: b[..<end], as: UTF8.self).lowercased()
            guard let l = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                  let n = Int(l.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else { return false }
            return b.count >= end + 4 + n
        }
        return TCP.parse(raw)
    }

    static func headerEnd(_ b: [UInt8]) -> Int? {
        guard b.count >= 4 else { return nil }
        for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 { return i }
        return nil
    }

    static func parse(_ raw: [UInt8]) -> HTTPReply? {
        guard let end = headerEnd(raw) else { return nil }
        let lines = String(decoding: raw[..<end], as: UTF8.self).split(separator: "\r\n")
        guard let first = lines.first, first.hasPrefix("HTTP/1."), let status = Int(first.split(separator: " ")[1]) else { return nil }
        var headers: [String: String] = [:]
        for l in lines.dropFirst() {
            guard let c = l.firstIndex(of: ":") else { continue }
            headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPReply(status: status, headers: headers, body: Array(raw[(end + 4)...]))
    }
}

/// One request on a new connection (Connection: close), the kiosk's host unless told otherwise.
func http(_ port: Int, _ method: String, _ path: String, body: String? = nil, cookie: String? = nil,
          host: String? = nil, origin: String? = nil, extraHeaders: [String] = [], from: String? = nil) async throws -> HTTPReply {
    try await offPool { try httpBlocking(port, method, path, body: body, cookie: cookie, host: host, origin: origin, extraHeaders: extraHeaders, from: from) }
}

func httpBlocking(_ port: Int, _ method: String, _ path: String, body: String? = nil, cookie: String? = nil,
                  host: String? = nil, origin: String? = nil, extraHeaders: [String] = [], from: String? = nil) throws -> HTTPReply {
    let c = try TCP(port, from: from)
    var req = "\(method) \(path) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
    if let cookie { req += "Cookie: \(cookie)\r\n" }
    if let origin { req += "Origin: \(origin)\r\n" }
    for h in extraHeaders { req += h + "\r\n" }
    if let body { req += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
    req += "\r\n" + (body ?? "")
    c.send(req)
    guard let r = TCP.parse(c.read()) else { throw KioskError.control("no HTTP answer to \(method) \(path)") }
    return r
}

/// Polls `condition` every 10 ms for at most `seconds`.
func eventually(_ seconds: Double = 5, _ condition: () async -> Bool) async -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
    }
    return await condition()
}
