import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
@testable import KioskWeb
@testable import KioskWebComponent
import Testing

/// Every `/api/` route, with a body that makes it valid.
let apiRoutes: [(method: String, path: String, body: String?, change: Bool)] = [
    ("GET", "/api/status", nil, false),
    ("GET", "/api/outputs", nil, false),
    ("POST", "/api/scene", #"{"name":"clock"}"#, true),
    ("GET", "/api/theme", nil, false),
    ("POST", "/api/theme", #"{"name":"dark"}"#, true),
    ("GET", "/api/themes", nil, false),
    ("GET", "/api/counter/HOME", nil, false),
    ("POST", "/api/counter/HOME/set", #"{"value":5}"#, true),
    ("POST", "/api/counter/HOME/inc", nil, true),
    ("POST", "/api/counter/HOME/dec", nil, true),
    ("POST", "/api/counter/HOME/reset", nil, true),
    ("POST", "/api/paint/clear", nil, true),
    ("POST", "/api/paint/undo", nil, true),
    ("POST", "/api/paint/redo", nil, true),
    ("POST", "/api/paint/save", nil, true),
    ("GET", "/api/paintings", nil, false),
    ("GET", "/api/screenshot", nil, false),
    ("POST", "/api/screenshot", nil, false),
    ("POST", "/api/blank", #"{"on":false}"#, true),
    ("POST", "/api/reload", nil, true),
    ("GET", "/api/session", nil, false),
    ("GET", "/api/brightness", nil, false),
    ("GET", "/api/events", nil, false),
]

@Suite(.serialized) struct WebServerTests {
    @Test func everyRouteRefusesNoTokenRevokedTokenViewerChangesWrongOriginAndWrongHost() async throws {
        let k = WebKiosk()
        try await k.start()
        let op = try await k.pairedCookie(role: "operator", name: "op")
        let viewer = try await k.pairedCookie(role: "viewer", name: "view")
        let gone = try await k.pairedCookie(role: "operator", name: "gone")
        #expect(try await k.ctl(.revokeDevice(name: "gone")).status == 200)
        for r in apiRoutes {
            let what = "\(r.method) \(r.path)"
            let none = try await http(k.port, r.method, r.path, body: r.body)
            #expect(none.status == 401, "\(what) without a cookie")
            #expect(none.error?.contains("not paired") == true, "\(what): \(none.text)")
            let revoked = try await http(k.port, r.method, r.path, body: r.body, cookie: gone)
            #expect(revoked.status == 401, "\(what) with a revoked cookie")
            let host = try await http(k.port, r.method, r.path, body: r.body, cookie: op, host: "evil.example:\(k.port)")
            #expect(host.status == 403, "\(what) with a wrong Host")
            #expect(host.error?.contains("host 'evil.example:\(k.port)' is not this kiosk's address") == true)
            let origin = try await http(k.port, r.method, r.path, body: r.body, cookie: op, origin: "http://evil.example")
            #expect(origin.status == 403, "\(what) with a wrong Origin")
            if r.path == "/api/events" { continue }
            // The test kiosk has no backlight: reading it answers 409, to viewers and operators alike.
            let expected = r.path == "/api/brightness" ? 409 : 200
            let v = try await http(k.port, r.method, r.path, body: r.body, cookie: viewer)
            if r.change {
                #expect(v.status == 403, "\(what) as a viewer")
                #expect(v.error?.contains("device 'view' is a viewer") == true)
            } else {
                #expect(v.status == expected, "\(what) as a viewer: \(v.text)")
                #expect(v.error?.contains("is a viewer") != true, "\(what) as a viewer: \(v.text)")
            }
            let o = try await http(k.port, r.method, r.path, body: r.body, cookie: op, origin: "http://127.0.0.1:\(k.port)")
            #expect(o.status == expected, "\(what) as operator: \(o.text)")
        }
        // Same answers as the control socket: an unknown counter is 404 with the same JSON.
        let web = try await http(k.port, "POST", "/api/counter/NOPE/inc", cookie: op)
        let sock = try await k.ctl(.counter(name: "NOPE", op: .inc, value: nil))
        #expect(web.status == 404 && sock.status == 404)
        #expect(web.body == sock.body)
        // Pairing and devices are for the control socket only.
        #expect(try await http(k.port, "GET", "/api/devices", cookie: op).status == 403)
        #expect(try await http(k.port, "POST", "/api/devices/view/revoke", cookie: op).status == 403)
        #expect(try await http(k.port, "POST", "/api/pair", body: #"{"role":"operator"}"#, cookie: op).status == 400)
        // The change went through to the daemon.
        #expect(try await http(k.port, "POST", "/api/counter/AWAY/set", body: #"{"value":7}"#, cookie: op).status == 200)
        #expect(try await k.ctl(.counter(name: "AWAY", op: .get, value: nil)).decode(CounterAnswer.self).value == 7)
        await k.stop()
    }

    @Test func pairingSetsAnHttpOnlyStrictCookieOnceAndTheCodeIsShownUntilUsed() async throws {
        let k = WebKiosk()
        try await k.start()
        let a = try await k.ctl(.pair(role: "viewer", show: true)).decode(PairAnswer.self)
        #expect(a.code.count == 6)
        #expect(a.url == "http://kiosk.test:8080/#pair=\(a.code)")
        #expect(a.expiresInSeconds == 300)
        #expect(k.onLoop { $0.manager.pairingPrompt?.code } == a.code)
        let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(a.code.lowercased())", "name": "Anna's phone"}"#)
        #expect(r.status == 200)
        let cookie = try #require(r.headers["set-cookie"])
        #expect(cookie.hasPrefix("kioskd_session="))
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let token = String(cookie.split(separator: ";")[0].dropFirst("kioskd_session=".count))
        #expect(token.count >= 43, "at least 256 bits, base64url")
        #expect(!r.text.contains(token), "the token is only in the cookie")
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil, "the code leaves the screen once used")
        // Single use.
        let again = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(a.code)", "name": "Bob"}"#)
        #expect(again.status == 403)
        // Stored: only the hash, with name and role.
        let stored = try #require(k.onLoop { $0.state.load("web.devices") })
        #expect(!stored.contains(token))
        #expect(stored.contains(SHA256.hex(Array(token.utf8))))
        let devices = try await k.ctl(.devices).decode(DevicesAnswer.self)
        #expect(devices.devices.map(\.name) == ["Anna's phone"])
        #expect(devices.devices.map(\.role) == ["viewer"])
        let session = try await http(k.port, "GET", "/api/session", cookie: "kioskd_session=\(token)")
        #expect(session.text.contains(#""device":"Anna's phone""#) && session.text.contains(#""role":"viewer""#))
        // --print: not on the screen.
        _ = try await k.ctl(.pair(role: "operator", show: false))
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        await k.stop()
    }

    @Test func wrongCodesAreLimitedToFiveAMinutePerClient() async throws {
        let k = WebKiosk()
        try await k.start()
        let code = try await k.ctl(.pair(role: "operator", show: true)).decode(PairAnswer.self).code
        let wrong = code == "AAAAAA" ? "BBBBBB" : "AAAAAA"
        for i in 0..<5 {
            let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(wrong)", "name": "x"}"#)
            #expect(r.status == 403, "attempt \(i + 1)")
            #expect(r.error == PairingBook.refusal)
        }
        let blocked = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "x"}"#)
        #expect(blocked.status == 429, "even the right code, after five wrong ones")
        #expect(blocked.error?.contains("too many wrong pairing codes from 127.0.0.1: at most 5 a minute; try again in") == true)
        // A minute later the client may try again (the clock moved on, not slept).
        k.onLoop { d in
            let base = nowNanos(.monotonic)
            d.pairing!.monotonicNow = { base + 61_000_000_000 }
        }
        let later = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(wrong)", "name": "x"}"#)
        #expect(later.status == 403, "a minute later: a wrong code is only wrong again, not blocked: \(later.text)")
        let right = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "x"}"#)
        #expect(right.status == 200, "\(right.text)")
        await k.stop()
    }

    /// Guesses from many addresses (each under its own per-address limit) share one budget per
    /// code: the eighth wrong guess (8 / 31⁶ ≤ 10⁻⁸) replaces the code by a 12-character one on
    /// the screen; the old code is refused, the new one pairs; status and the next `kioskctl
    /// pair` report the guessing.
    @Test func wrongGuessesFromManyAddressesReplaceTheCodeAndAreReported() async throws {
        #expect(PairingBook.guessBudget(length: 6) == 8)
        #expect(Double(PairingBook.guessBudget(length: 6)) / pow(31, 6) <= 1e-8)
        #expect(Double(PairingBook.guessBudget(length: 12)) / pow(31, 12) <= 1e-8)
        #expect(PairingBook.guessBudget(length: 12) > 7_000_000_000)
        let k = WebKiosk()
        try await k.start()
        let code = try await k.ctl(.pair(role: "operator", show: true)).decode(PairAnswer.self).code
        let wrong = code == "AAAAAA" ? "BBBBBB" : "AAAAAA"
        for i in 0..<7 {
            let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(wrong)", "name": "x"}"#, from: "127.0.1.\(1 + i)")
            #expect(r.status == 403 && r.error == PairingBook.refusal, "\(r.text)")
        }
        #expect(k.onLoop { $0.manager.pairingPrompt?.code } == code, "seven wrong guesses leave the code")
        // The eighth, from an address that already guessed: the budget is per code, not per address.
        let eighth = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(wrong)", "name": "x"}"#, from: "127.0.1.1")
        #expect(eighth.status == 403 && eighth.error == PairingBook.refusal, "\(eighth.text)")
        let prompt = try #require(k.onLoop { $0.manager.pairingPrompt }, "the replacement is on the screen")
        #expect(prompt.notice == nil)
        #expect(prompt.code.count == 14 && prompt.code.split(separator: "-").map(\.count) == [4, 4, 4], "\(prompt.code)")
        let fresh = prompt.code.filter { $0 != "-" }
        #expect(fresh != code)
        #expect(prompt.url.hasSuffix("#pair=\(fresh)"))
        let old = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "x"}"#, from: "127.0.9.9")
        #expect(old.status == 403 && old.error == PairingBook.refusal, "the replaced code still paired: \(old.text)")
        let status = try await k.ctl(.status).decode(StatusAnswer.self)
        #expect(status.pairing == PairingReport(open: true, wrongGuesses: 9, addresses: 8, replaced: 1))
        #expect(status.pairing?.summary == "code replaced 1 time after 9 wrong guesses from 8 addresses")
        // The replacement pairs, typed as the screen shows it (with its dashes, in lower case).
        let ok = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(prompt.code.lowercased())", "name": "owner"}"#, from: "127.0.9.9")
        #expect(ok.status == 200, "\(ok.text)")
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        let after = try await k.ctl(.status).decode(StatusAnswer.self).pairing
        #expect(after == PairingReport(open: false, wrongGuesses: 9, addresses: 8, replaced: 1), "\(String(describing: after))")
        // The next kioskctl pair says what happened to the previous code, and starts a new count.
        let next = try await k.ctl(.pair(role: "operator", show: false)).decode(PairAnswer.self)
        #expect(next.previous?.summary == "code replaced 1 time after 9 wrong guesses from 8 addresses")
        #expect(next.code.count == 6)
        #expect(try await k.ctl(.status).decode(StatusAnswer.self).pairing == PairingReport(open: true, wrongGuesses: 0, addresses: 0, replaced: 0))
        #expect(try await k.ctl(.pair(role: "operator", show: false)).decode(PairAnswer.self).previous == nil, "no guess at the last code")
        await k.stop()
    }

    /// The per-address table of wrong codes stays bounded however many addresses guess.
    @Test func theWrongCodeTableIsBounded() async throws {
        let k = WebKiosk()
        try await k.start()
        let n = k.onLoop { d -> Int in
            for i in 0..<3000 { d.pairing!.redeem(code: "AAAAAA", name: "x", client: "10.\(i / 65536).\(i / 256 % 256).\(i % 256)") { _ in } }
            return d.pairing!.trackedClients
        }
        #expect(n <= 1024, "\(n) addresses remembered")
        #expect(n > 0)
        await k.stop()
    }

    @Test func anExpiredCodeIsRefusedAndLeavesTheScreen() async throws {
        let k = WebKiosk()
        try await k.start()
        let code = try await k.ctl(.pair(role: "operator", show: true)).decode(PairAnswer.self).code
        k.onLoop { d in
            let base = nowNanos(.monotonic)
            d.pairing!.monotonicNow = { base + 301_000_000_000 }
        }
        let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "late"}"#)
        #expect(r.status == 403)
        #expect(r.error == PairingBook.refusal, "an expired code is answered as any wrong one")
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        #expect(try await k.ctl(.devices).decode(DevicesAnswer.self).devices.isEmpty)
        await k.stop()
    }

    @Test func theCodeTimerTakesTheCodeOffTheScreen() async throws {
        let k = WebKiosk()
        try await k.start()
        k.onLoop { $0.pairing!.codeLifetimeNs = 200_000_000 }
        let code = try await k.ctl(.pair(role: "operator", show: true)).decode(PairAnswer.self).code
        #expect(k.onLoop { $0.manager.pairingPrompt?.code } == code)
        #expect(await eventually(3) { k.onLoop { $0.manager.pairingPrompt } == nil }, "the expiry timer takes the code off the screen")
        #expect(try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "late"}"#).status == 403)
        await k.stop()
    }

    @Test func thePairKeyOnTheKioskShowsAnOperatorCode() async throws {
        let k = WebKiosk()
        try await k.start(extra: "pair_key = \"KEY_F12\"")
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        k.onLoop { $0.manager.input(.key(code: KeyCode.code(named: "KEY_F12")!, state: .pressed, timeUsec: 1)) }
        let code = try #require(k.onLoop { $0.manager.pairingPrompt?.code })
        let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "at the kiosk"}"#)
        #expect(r.status == 200)
        #expect(r.text.contains(#""role":"operator""#))
        await k.stop()
    }

    @Test func tokensSurviveARestart() async throws {
        let dir = shortDir()
        let a = WebKiosk(dir: dir)
        try await a.start()
        let cookie = try await a.pairedCookie(role: "operator", name: "kept")
        await a.stop()
        let b = WebKiosk(dir: dir)
        try await b.start()
        let r = try await http(b.port, "GET", "/api/session", cookie: cookie)
        #expect(r.status == 200, "\(r.text)")
        #expect(r.text.contains(#""device":"kept""#))
        #expect(try await http(b.port, "GET", "/api/session", cookie: "kioskd_session=forged").status == 401)
        await b.stop()
    }

    @Test func aChangeOnTheControlSocketReachesAnOpenLiveStreamWithin200ms() async throws {
        let k = WebKiosk()
        try await k.start()
        let cookie = try await k.pairedCookie(role: "viewer")
        let c = try TCP(k.port)
        c.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(k.port)\r\nCookie: \(cookie)\r\n\r\n")
        var seen: [UInt8] = []
        seen = await c.readAsync { String(decoding: $0, as: UTF8.self).contains("event: theme\ndata:") && String(decoding: $0, as: UTF8.self).contains("\n\n") }
        let first = String(decoding: seen, as: UTF8.self)
        #expect(first.contains("text/event-stream"))
        #expect(first.contains("event: state\ndata: {"))
        #expect(first.contains(#""name":"HOME""#))
        #expect(first.contains(##""background":"#"##))
        var latencies: [Double] = []
        for v in 1...5 {
            let t0 = Date()
            #expect(try await k.ctl(.counter(name: "HOME", op: .set, value: v * 10)).status == 200)
            let got = await c.readAsync { String(decoding: $0, as: UTF8.self).contains(#""value":\#(v * 10)"#) }
            latencies.append(Date().timeIntervalSince(t0) * 1000)
            #expect(String(decoding: got, as: UTF8.self).contains("event: state"))
        }
        #expect(latencies.max()! < 200, "latencies \(latencies) ms")
        // Theme change: a theme event with the new colours.
        #expect(try await k.ctl(.theme(name: "dark")).status == 200)
        let themed = String(decoding: await c.readAsync { String(decoding: $0, as: UTF8.self).contains(#""theme":"dark""#) && String(decoding: $0, as: UTF8.self).contains("event: theme") }, as: UTF8.self)
        #expect(themed.contains("event: theme"))
        await k.stop()
    }

    @Test func revokingADeviceEndsItsOpenStreamAtOnce() async throws {
        let k = WebKiosk()
        try await k.start()
        let cookie = try await k.pairedCookie(role: "viewer", name: "tablet")
        let c = try TCP(k.port)
        c.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(k.port)\r\nCookie: \(cookie)\r\n\r\n")
        _ = await c.readAsync { String(decoding: $0, as: UTF8.self).contains("event: theme") }
        #expect(k.server.streamCount == 1)
        let t0 = Date()
        #expect(try await k.ctl(.revokeDevice(name: "tablet")).status == 200)
        _ = await c.readAsync()  // until EOF
        #expect(Date().timeIntervalSince(t0) < 1, "the stream ended when the device was revoked")
        #expect(await eventually { k.server.streamCount == 0 })
        #expect(try await http(k.port, "GET", "/api/status", cookie: cookie).status == 401)
        await k.stop()
    }

    @Test func staticPageIsServedWithoutACookie() async throws {
        let k = WebKiosk()
        try await k.start()
        let r = try await http(k.port, "GET", "/")
        #expect(r.status == 200)
        #expect(r.headers["content-type"]?.hasPrefix("text/html") == true)
        #expect(r.headers["x-frame-options"] == "DENY")
        #expect(try await http(k.port, "GET", "/nope.js").status == 404)
        #expect(try await http(k.port, "GET", "/", host: "evil.example").status == 403)
        await k.stop()
    }

    @Test func paintingsAreListedAndDownloadedByPlainNamesOnly() async throws {
        let k = WebKiosk()
        try await k.start()
        let cookie = try await k.pairedCookie()
        #expect(try await k.ctl(.paint(op: .save, name: "one.png")).status == 200)
        let list = try await http(k.port, "GET", "/api/paintings", cookie: cookie)
        #expect(list.text.contains(#""name":"one.png""#))
        let png = try await http(k.port, "GET", "/api/paintings/one.png", cookie: cookie)
        #expect(png.status == 200)
        #expect(png.headers["content-type"] == "image/png")
        #expect(Array(png.body.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        #expect(try await http(k.port, "GET", "/api/paintings/..%2Fstate%2Fweb.devices", cookie: cookie).status == 400)
        #expect(try await http(k.port, "GET", "/api/paintings/missing.png", cookie: cookie).status == 404)
        await k.stop()
    }
}

/// Device names are limited in characters and bytes and cannot reorder what is shown.
@Suite struct DeviceNameTests {
    @Test func namesAreLimitedInBytesAndRefuseControlAndFormatCharacters() {
        #expect(PairingBook.nameProblem("Anna's phone") == nil)
        #expect(PairingBook.nameProblem("Ünïcödé 📱 phone") == nil)
        #expect(PairingBook.nameProblem("👩‍💻 laptop") == nil, "an emoji sequence joined by U+200D")
        #expect(PairingBook.nameProblem(String(repeating: "x", count: 64)) == nil)
        #expect(PairingBook.nameProblem(String(repeating: "x", count: 65))?.contains("1 to 64 characters") == true)
        #expect(PairingBook.nameProblem("")?.contains("1 to 64 characters") == true)
        // One character holding 3 000 combining marks: 6 001 bytes.
        let heavy = "a" + String(repeating: "\u{301}", count: 3000)
        #expect(heavy.count == 1)
        #expect(PairingBook.nameProblem(heavy) == "must be at most 128 bytes in UTF-8 (it has 6001)")
        #expect(PairingBook.nameProblem("evil\u{202E}enohp") == "must not contain control or format characters (such as bidirectional overrides); found U+202E")
        #expect(PairingBook.nameProblem("a\u{2066}b")?.contains("U+2066") == true)
        #expect(PairingBook.nameProblem("a\u{200F}b")?.contains("U+200F") == true)
        #expect(PairingBook.nameProblem("a\u{7}b")?.contains("U+0007") == true)
    }

    @Test func aSpoofingNameIsRefusedWhenPairing() async throws {
        let k = WebKiosk()
        try await k.start()
        let code = try await k.ctl(.pair(role: "operator", show: true)).decode(PairAnswer.self).code
        let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "Anna\u202E's phone"}"#)
        #expect(r.status == 400, "\(r.text)")
        #expect(r.error?.contains("found U+202E") == true, "\(r.text)")
        #expect(try await k.ctl(.devices).decode(DevicesAnswer.self).devices.isEmpty)
        await k.stop()
    }
}
