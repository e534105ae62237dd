import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
@testable import KioskWeb
import KioskTestTraits
import Testing

/// Nothing the web server receives stops the render loop: after each attack the daemon still
/// answers `status` on the control socket and frames keep coming.
@Suite(.ownThreads, .serialized) struct WebHostileTests {
    func expectAlive(_ k: WebKiosk, _ what: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) async throws {
        let status = try await k.ctl(.status)
        #expect(status.status == 200, "\(what): status", sourceLocation: sourceLocation)
        // The clock scene redraws every second: frames keep coming.
        _ = try await k.ctl(.scene(name: "clock"))
        let before = k.frameCount
        #expect(await eventually(3) { k.frameCount > before }, "\(what): frames keep coming", sourceLocation: sourceLocation)
    }

    @Test func malformedHTTPIsAnsweredAsJSONAndClosed() async throws {
        let k = WebKiosk()
        try await k.start()
        for garbage in ["GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET /api/status HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
                        "\u{0}\u{1}\u{2}\u{3}\r\n\r\n", "GET /api/status HTTP/1.1\r\nBad Header\r\n\r\n"] {
            let c = try TCP(k.port)
            c.send(garbage)
            let raw = await c.readAsync()
            let r = try #require(TCP.parse(raw), "an answer to \(garbage.debugDescription)")
            #expect(r.status == 400, "\(garbage.debugDescription)")
            #expect(r.error?.hasPrefix("malformed HTTP request") == true, "\(garbage.debugDescription): \(r.text)")
            #expect(r.headers["connection"] == "close")
        }
        try await expectAlive(k, "after malformed HTTP")
        await k.stop()
    }

    @Test func aHundredMegabyteBodyIsRefusedBeforeItIsRead() async throws {
        let k = WebKiosk()
        try await k.start()
        let cookie = try await k.pairedCookie()
        let c = try TCP(k.port)
        c.send("POST /api/counter/HOME/set HTTP/1.1\r\nHost: 127.0.0.1:\(k.port)\r\nCookie: \(cookie)\r\nContent-Type: application/json\r\nContent-Length: 104857600\r\n\r\n")
        // The answer comes before a byte of the body was sent.
        let r = try #require(try await offPool { c.readReply() })
        #expect(r.status == 413)
        #expect(r.error == "request body too large: at most 65536 bytes")
        // Sending on: the server reads at most its discard allowance, then closes.
        let chunk = [UInt8](repeating: 0x20, count: 1 << 20)
        let sent = try await offPool { () -> Int in
            var sent = 0
            while sent < 100, c.send(chunk) { sent += 1 }
            return sent
        }
        #expect(sent < 100, "the connection was closed after at most a few MB (sent \(sent) MB)")
        #expect(try await k.ctl(.counter(name: "HOME", op: .get, value: nil)).decode(CounterAnswer.self).value == 0, "not carried out")
        try await expectAlive(k, "after a 100 MB body")
        await k.stop()
    }

    @Test func tenThousandConnectionsHeldOpenDoNotStopTheKiosk() async throws {
        // The test process holds both ends: raise the soft descriptor limit to the hard one.
        var lim = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim)
        let want: rlim_t = 10_000 + 2_000
        guard lim.rlim_max >= want else {
            Issue.record("the hard descriptor limit \(lim.rlim_max) is below \(want); cannot hold 10 000 connections in one process")
            return
        }
        if lim.rlim_cur < want { lim.rlim_cur = lim.rlim_max; setrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim) }
        let k = WebKiosk()
        var limits = WebLimits()
        limits.control.backlog = 4096
        try await k.start(limits: limits)
        let cookie = try await k.pairedCookie()
        let port = k.port
        var held: [TCP] = try await offPool {
            var held: [TCP] = []
            for _ in 0..<10_000 {
                guard let c = try? TCP(port, timeoutSeconds: 2) else { break }
                c.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")  // headers never finished
                held.append(c)
            }
            return held
        }
        #expect(held.count == 10_000, "opened \(held.count) connections")
        #expect(k.server.connectionCount <= limits.maxConnections)
        try await expectAlive(k, "with 10 000 connections held")
        // Over the cap: refused with the limit named, or closed at once.
        let extra = try TCP(k.port)
        extra.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: \(cookie)\r\n\r\n")
        let raw = await extra.readAsync()
        if let r = TCP.parse(raw) {
            #expect(r.status == 503)
            #expect(r.error == "too many web connections: at most 256 at once; try again later")
        }
        held.removeAll()
        // Let go: the server serves again (the held ones time out or are closed by now).
        #expect(await eventually(10) { (try? await http(k.port, "GET", "/api/status", cookie: cookie).status) == 200 })
        try await expectAlive(k, "after 10 000 connections")
        await k.stop()
    }

    @Test func oversizedHeadersGet431() async throws {
        let k = WebKiosk()
        try await k.start()
        let r = try await http(k.port, "GET", "/api/status", extraHeaders: ["X-Big: " + String(repeating: "a", count: 100 * 1024)])
        #expect(r.status == 431)
        #expect(r.error?.hasPrefix("malformed HTTP request") == true)
        try await expectAlive(k, "after oversized headers")
        await k.stop()
    }

    @Test func aRequestTheBusyLoopDoesNotStartInTimeIs503AndNeverCarriedOut() async throws {
        let k = WebKiosk()
        var limits = WebLimits()
        limits.control.requestTimeout = .milliseconds(300)
        try await k.start(limits: limits)
        let cookie = try await k.pairedCookie()
        k.daemon.post { _ in usleep(1_500_000) }  // the render loop is busy for 1.5 s
        let t0 = Date()
        let r = try await http(k.port, "POST", "/api/counter/HOME/inc", cookie: cookie)
        #expect(r.status == 503)
        #expect(r.error == "kioskd is busy: the render loop did not start the request within 300 ms; not carried out")
        #expect(Date().timeIntervalSince(t0) < 1.4, "answered at the deadline, not when the loop is free")
        #expect(try await k.ctl(.counter(name: "HOME", op: .get, value: nil)).decode(CounterAnswer.self).value == 0, "never carried out")
        await k.stop()
    }

    @Test func slowHeadersGet408AndAnIdleConnectionIsClosed() async throws {
        let k = WebKiosk()
        var limits = WebLimits()
        limits.control.headerTimeout = .milliseconds(300)
        limits.control.idleTimeout = .milliseconds(300)
        try await k.start(limits: limits)
        let c = try TCP(k.port)
        c.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        let r = try #require(TCP.parse(await c.readAsync()))
        #expect(r.status == 408)
        #expect(r.error == "request headers not complete within 0.3 s")
        let idle = try TCP(k.port)
        let t0 = Date()
        #expect(await idle.readAsync().isEmpty)
        #expect(Date().timeIntervalSince(t0) < 3)
        try await expectAlive(k, "after timeouts")
        await k.stop()
    }
}
