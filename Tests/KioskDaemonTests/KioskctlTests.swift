import Foundation
import KioskControl
import KioskDaemon
import KioskTestTraits
import Testing
import KioskTesting

/// A stand-in for kioskd on a Unix socket: accepts connections one after the other on a thread,
/// reads each request (head and Content-Length body, or up to EOF), records it and lets `answer`
/// write whatever the test wants (or nothing), then closes the connection.
final class FakeControlServer: @unchecked Sendable {
    let path: String
    private let listenFD: Int32
    private let lock = NSLock()
    private var requests: [[UInt8]] = []
    private let finished = DispatchSemaphore(value: 0)

    /// `answer(fd, request)` runs on the server thread for each connection.
    init(path: String, answer: @escaping @Sendable (Int32, [UInt8]) -> Void) throws {
        self.path = path
        listenFD = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        precondition(bytes.count < MemoryLayout.size(ofValue: addr.sun_path), "socket path too long: \(path)")
        withUnsafeMutableBytes(of: &addr.sun_path) { p in for (i, b) in bytes.enumerated() { p[i] = b } }
        let r = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listenFD, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard r == 0, listen(listenFD, 8) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let fd = listenFD
        Thread.detachNewThread { [self] in
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { break }
                let request = Self.readRequest(c)
                lock.lock(); requests.append(request); lock.unlock()
                answer(c, request)
                close(c)
            }
            finished.signal()
        }
    }

    /// Every request received so far, as text.
    var received: [String] {
        lock.lock(); defer { lock.unlock() }
        return requests.map { String(decoding: $0, as: UTF8.self) }
    }

    func stop() {
        shutdown(listenFD, Int32(SHUT_RDWR))
        close(listenFD)
        _ = finished.wait(timeout: .now() + 5)
        unlink(path)
    }

    static func readRequest(_ fd: Int32) -> [UInt8] {
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = headerEnd(data) {
                let head = String(decoding: data[..<end], as: UTF8.self).lowercased()
                let length = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                if data.count >= end + 4 + length { return data }
            }
            let n = read(fd, &buf, buf.count)
            if n <= 0 { return data }
            data += buf[0..<n]
        }
    }

    static func headerEnd(_ d: [UInt8]) -> Int? {
        guard d.count >= 4 else { return nil }
        for i in 0...(d.count - 4) where d[i] == 13 && d[i + 1] == 10 && d[i + 2] == 13 && d[i + 3] == 10 { return i }
        return nil
    }

    /// Writes all of `text`; false when the peer went away.
    @discardableResult
    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }

    static func send(_ fd: Int32, _ text: String) { send(fd, Array(text.utf8)) }

    /// Blocks until the client closes its end.
    static func waitForClose(_ fd: Int32) {
        var b = [UInt8](repeating: 0, count: 256)
        while read(fd, &b, b.count) > 0 {}
    }
}

/// Runs the built `kioskctl` against a fake kioskd: usage errors, answers that are not what a
/// kioskd sends, and negative counter values.
@Suite(.ownThreads, .serialized)
struct KioskctlTests {
    init() {
        signal(SIGPIPE, SIG_IGN)
    }

    func requireBinary() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Binaries.kioskctl), "build kioskctl first (\(Binaries.kioskctl))")
    }

    func server(_ dir: String, _ answer: @escaping @Sendable (Int32, [UInt8]) -> Void) throws -> FakeControlServer {
        try FakeControlServer(path: "\(dir)/c.sock", answer: answer)
    }

    static func okJSON(_ fd: Int32, _ body: String) {
        FakeControlServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
    }

    @Test func badTimeoutIsAUsageErrorNotACrash() throws {
        try requireBinary()
        let d = tempDir()
        // A server that answers: the unchecked conversion used to trap only once connected.
        let s = try server(d) { fd, _ in Self.okJSON(fd, #"{"scene": "clock"}"#) }
        defer { s.stop() }
        for bad in ["nan", "inf", "-inf", "1e16", "3601", "0", "-1"] {
            let (code, out, err) = try kioskctl(["status", "--socket", s.path, "--timeout=\(bad)"])
            #expect(code == 64, "--timeout \(bad): exit \(code), stderr: \(err)")
            #expect(err.contains("--timeout must be a number of seconds above 0 and at most 3600"), "--timeout \(bad): \(err)")
            #expect(out.isEmpty)
        }
        // A sane one reaches the server.
        let (code, out, _) = try kioskctl(["scene", "clock", "--socket", s.path, "--timeout", "3600"])
        #expect(code == 0)
        #expect(out == "scene: clock\n")
    }

    @Test func helpDocumentsExitStatus64() throws {
        try requireBinary()
        let (code, out, _) = try kioskctl(["--help"])
        #expect(code == 0)
        #expect(out.contains("64 usage error"), "\(out)")
    }

    @Test func negativeSetValueReachesTheDaemon() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in Self.okJSON(fd, #"{"ok": true, "counter": "HOME", "value": -5}"#) }
        defer { s.stop() }
        let (code, out, err) = try kioskctl(["counter", "HOME", "set", "-5", "--socket", s.path])
        #expect(code == 0, "\(err)")
        #expect(out == "HOME = -5\n")
        let req = try #require(s.received.first)
        #expect(req.hasPrefix("POST /counter/HOME/set HTTP/1.1\r\n"), "\(req)")
        #expect(req.hasSuffix("\r\n\r\n{\"value\":-5}"), "\(req)")

        // After "--" too; options may follow the value.
        let (code2, _, err2) = try kioskctl(["counter", "HOME", "set", "--socket", s.path, "--", "-12"])
        #expect(code2 == 0, "\(err2)")
        #expect(s.received.last?.hasSuffix("{\"value\":-12}") == true, "\(s.received)")

        // Still refused: no value, two values, not an integer, a value for inc.
        for (args, message) in [(["set"], "'set' needs a value"), (["set", "-5", "3"], "'set' takes one value; got -5 3"),
                                (["set", "-x"], "'set' needs an integer value; got '-x'"), (["inc", "-5"], "'inc' takes no value; got -5")] {
            let (c, _, e) = try kioskctl(["counter", "HOME"] + args + ["--socket", s.path])
            #expect(c == 64, "\(args): \(e)")
            #expect(e.contains(message), "\(args): \(e)")
        }
        #expect(s.received.count == 2)
    }

    /// Brightness takes decimal percentages only; anything else, negative numbers included, gets
    /// the range error and never reaches the daemon.
    @Test func brightnessTakesDecimalPercentagesOnly() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in Self.okJSON(fd, #"{"percent": 40, "device": "bl", "method": "sysfs"}"#) }
        defer { s.stop() }
        for bad in ["0x20", "-1", "1e-9", "1e2", "101", "100.01", "12.345", "+5", " 5", "5 ", "nan", "inf", ".5", "5.", "abc", "0x1p4", "1_0"] {
            let (code, out, err) = try kioskctl(["brightness", bad, "--socket", s.path])
            #expect(code == 64, "brightness \(bad): exit \(code), stderr: \(err)")
            #expect(err.contains("expected a percentage 0…100 with at most two decimals (like 40 or 12.5), got '\(bad)'"), "brightness \(bad): \(err)")
            #expect(out.isEmpty)
        }
        #expect(s.received.isEmpty, "\(s.received)")
        for (good, json) in [("40", "40"), ("12.5%", "12.5"), ("0", "0"), ("100", "100"), ("7.25", "7.25")] {
            let (code, out, err) = try kioskctl(["brightness", good, "--socket", s.path])
            #expect(code == 0, "brightness \(good): \(err)")
            #expect(out.hasPrefix("brightness: 40 %"), "\(out)")
            #expect(s.received.last?.hasSuffix("{\"percent\":\(json)}") == true, "\(good): \(s.received.last ?? "")")
        }
        let (code, _, err) = try kioskctl(["brightness", "--socket", s.path, "--", "-1"])
        #expect(code == 64 && err.contains("got '-1'"), "\(err)")
    }

    /// A JSON answer without the fields of the command's answer type is not understood (exit 2,
    /// naming the missing key); with --json it is printed as it came.
    @Test func jsonOfTheWrongShapeIsNotUnderstood() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in Self.okJSON(fd, #"{"ok": true}"#) }
        defer { s.stop() }
        let (code, out, err) = try kioskctl(["status", "--socket", s.path])
        #expect(code == 2)
        #expect(out.isEmpty)
        #expect(err == "kioskctl: kioskd answered HTTP 200 with JSON that is not a GET /status answer (missing key 'scene'): {\"ok\": true}\n")
        let (jcode, jout, _) = try kioskctl(["status", "--json", "--socket", s.path])
        #expect(jcode == 0)
        #expect(jout == "{\"ok\": true}\n")
    }

    @Test func nonJSONSuccessIsShownAndFails() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in
            FakeControlServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\nhello, world")
        }
        defer { s.stop() }
        let (code, out, err) = try kioskctl(["status", "--socket", s.path])
        #expect(code == 2)
        #expect(out.isEmpty)
        #expect(err == "kioskctl: kioskd answered HTTP 200 with non-JSON (text/plain): hello, world\n")
    }

    @Test func errorStatusWithoutJSONSaysWhat() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, request in
            if String(decoding: request, as: UTF8.self).hasPrefix("GET /status") {
                FakeControlServer.send(fd, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            } else {
                FakeControlServer.send(fd, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nboom")
            }
        }
        defer { s.stop() }
        let (code, _, err) = try kioskctl(["status", "--socket", s.path])
        #expect(code == 1)
        #expect(err == "kioskctl: kioskd refused the request with HTTP 400 and no explanation\n")
        let (code2, _, err2) = try kioskctl(["reload", "--socket", s.path])
        #expect(code2 == 1)
        #expect(err2 == "kioskctl: kioskd refused the request with HTTP 500 (text/plain): boom\n")
    }

    @Test func closedWithoutAnswer() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { _, _ in }
        defer { s.stop() }
        let (code, out, err) = try kioskctl(["counter", "HOME", "inc", "--socket", s.path])
        #expect(code == 2)
        #expect(out.isEmpty)
        #expect(err == "kioskctl: kioskd closed the connection on \(s.path) without an answer (did it stop?)\n")
        #expect(s.received.first?.hasPrefix("POST /counter/HOME/inc ") == true)
    }

    @Test func partialAnswer() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in
            FakeControlServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ok\": tr")
        }
        defer { s.stop() }
        let (code, out, err) = try kioskctl(["status", "--socket", s.path])
        #expect(code == 2)
        #expect(out.isEmpty)
        #expect(err.hasPrefix("kioskctl: kioskd"), "\(err)")
        #expect(err.contains("on \(s.path)") && err.contains("(HTTP 200, 9 bytes of the body received)"), "\(err)")
    }

    @Test func notHTTP() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in FakeControlServer.send(fd, "SSH-2.0-OpenSSH_9.2\r\n") }
        defer { s.stop() }
        let (code, _, err) = try kioskctl(["status", "--socket", s.path])
        #expect(code == 2)
        #expect(err.hasPrefix("kioskctl: the answer on \(s.path) is not HTTP (is something other than kioskd listening there?)"), "\(err)")
    }

    @Test func hugeAnswerIsRefused() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in
            let size = 80 << 20
            FakeControlServer.send(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(size)\r\n\r\n")
            let chunk = [UInt8](repeating: 0x20, count: 1 << 20)
            for _ in 0..<80 where FakeControlServer.send(fd, chunk) {}
        }
        defer { s.stop() }
        let (code, _, err) = try kioskctl(["status", "--socket", s.path])
        #expect(code == 2)
        #expect(err == "kioskctl: kioskd's answer on \(s.path) is larger than 64 MiB; not read\n")
    }

    @Test func slowAnswerTimesOut() throws {
        try requireBinary()
        let d = tempDir()
        let s = try server(d) { fd, _ in FakeControlServer.waitForClose(fd) }
        defer { s.stop() }
        let start = Date()
        let (code, _, err) = try kioskctl(["counter", "HOME", "get", "--socket", s.path, "--timeout", "0.5"])
        #expect(code == 3)
        #expect(err == "kioskctl: kioskd did not answer within 0.5 s (it is busy or hung; socket \(s.path)); try --timeout\n")
        #expect(Date().timeIntervalSince(start) < 10)
    }
}
