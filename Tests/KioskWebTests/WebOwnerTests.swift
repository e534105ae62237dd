import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskTesting
import KioskWeb
@testable import KioskWebComponent
import Logging
import Testing

/// The owner role (devices, recent errors, settings) and the first-boot setup code.
@Suite(.serialized) struct WebOwnerTests {
    /// Every role against every route the roles tell apart: 200 (or the route's own answer) or 403.
    @Test func eachRoleReachesItsRoutesAndIsRefusedTheOthers() async throws {
        let k = WebKiosk()
        try await k.start()
        let owner = try await k.pairedCookie(role: "owner", name: "owner")
        let op = try await k.pairedCookie(role: "operator", name: "op")
        let viewer = try await k.pairedCookie(role: "viewer", name: "viewer")
        struct Route { var method: String; var path: String; var body: String?; var owner: Int; var op: Int; var viewer: Int }
        let routes = [
            Route(method: "GET", path: "/api/status", owner: 200, op: 200, viewer: 200),
            Route(method: "POST", path: "/api/counter/HOME/inc", owner: 200, op: 200, viewer: 403),
            Route(method: "GET", path: "/api/devices", owner: 200, op: 403, viewer: 403),
            Route(method: "GET", path: "/api/errors", owner: 200, op: 403, viewer: 403),
            Route(method: "POST", path: "/api/devices/pair", body: #"{"role": "viewer", "show": false}"#, owner: 200, op: 403, viewer: 403),
            Route(method: "POST", path: "/api/devices/nobody/revoke", owner: 404, op: 403, viewer: 403),
        ]
        for r in routes {
            for (cookie, want, who) in [(owner, r.owner, "owner"), (op, r.op, "operator"), (viewer, r.viewer, "viewer")] {
                let got = try await http(k.port, r.method, r.path, body: r.body, cookie: cookie)
                #expect(got.status == want, "\(who) \(r.method) \(r.path): \(got.status) \(got.text)")
                if want == 403 && r.path.contains("devices") {
                    #expect(got.error?.contains("only an owner may pair and revoke devices") == true, "\(got.text)")
                }
            }
        }
        // The devices list names each device with its role; an owner's code from the page pairs.
        let list = try await http(k.port, "GET", "/api/devices", cookie: owner).text
        for (name, role) in [("owner", "owner"), ("op", "operator"), ("viewer", "viewer")] {
            #expect(list.contains(#""name":"\#(name)","role":"\#(role)""#), "\(list)")
        }
        let opened = try await http(k.port, "POST", "/api/devices/pair", body: #"{"role": "owner", "show": false}"#, cookie: owner)
        let code = try ControlJSON.decode(PairAnswer.self, from: opened.body).code
        let second = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "second owner"}"#)
        #expect(second.status == 200 && second.text.contains(#""role":"owner""#), "\(second.text)")
        // The one decision on settings.
        #expect(WebPermission.settingsRefusal(WebDevice(name: "o", role: .owner)) == nil)
        #expect(WebPermission.settingsRefusal(WebDevice(name: "p", role: .operator))?.status == 403)
        #expect(WebPermission.settingsRefusal(WebDevice(name: "v", role: .viewer))?.errorMessage?.contains("only an owner may change settings") == true)
        #expect(WebRole.allCases.filter(\.mayChangeSettings) == [.owner])
        await k.stop()
    }

    /// A fresh kiosk shows an owner code on its screen: the code status reads is the one drawn
    /// (zbarimg decodes the screenshot to its URL); other codes stand in for it and it comes back
    /// until an owner pairs with it; then it is gone for good.
    @Test func aFreshKioskShowsTheSetupCodeUntilAnOwnerPairs() async throws {
        let k = WebKiosk()
        try await k.start(setup: true)
        var setup = try #require(try await k.ctl(.status).decode(StatusAnswer.self).setup)
        #expect(setup.state == "waiting" && setup.shown)
        let code = try #require(setup.code)
        #expect(code.count == 6)
        #expect(setup.url == "http://kiosk.test:8080/#pair=\(code)")
        let prompt = try #require(k.onLoop { $0.manager.pairingPrompt })
        #expect(prompt.code == code && prompt.title == "Scan to set up this kiosk" && prompt.url == setup.url)
        if let zbar = ["/usr/bin/zbarimg", "/usr/local/bin/zbarimg"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) {
            let png = try await k.ctl(.screenshot())
            let path = "\(k.dir)/setup.png"
            try Data(png.body).write(to: URL(fileURLWithPath: path))
            let (_, out, _) = try SpawnedProcess.run(zbar, ["--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", path])
            #expect(out.split(separator: "\n").map(String.init) == [setup.url!], "the screen's QR code is the setup code's URL")
        }
        // An operator pairs with a code of kioskctl pair meanwhile; the page's status never carries the setup code.
        let op = try await k.pairedCookie(role: "operator", name: "op")
        #expect(await eventually { (try? await k.ctl(.status).decode(StatusAnswer.self).setup?.shown) == true }, "the setup code is back")
        setup = try #require(try await k.ctl(.status).decode(StatusAnswer.self).setup)
        let again = try #require(setup.code)
        #expect(again != code, "a new code: the first one went when the operator's code replaced it")
        let web = try await http(k.port, "GET", "/api/status", cookie: op)
        #expect(web.text.contains(#""setup":{"#) && web.text.contains(#""shown":true"#), "\(web.text)")
        #expect(!web.text.contains(again), "the page's status carries no setup code")
        // The owner pairs with the code on the screen.
        let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(again)", "name": "Anna"}"#)
        #expect(r.status == 200 && r.text.contains(#""role":"owner""#), "\(r.text)")
        setup = try #require(try await k.ctl(.status).decode(StatusAnswer.self).setup)
        #expect(setup.state == "done" && !setup.shown && setup.code == nil && setup.owner == "Anna")
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        // Another code closing does not bring it back.
        let viewerCode = try await k.ctl(.pair(role: "viewer", show: true)).decode(PairAnswer.self).code
        #expect(try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(viewerCode)", "name": "v"}"#).status == 200)
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        await k.stop()
    }

    @Test func anExpiredSetupCodeIsRenewedOnTheScreen() async throws {
        let k = WebKiosk()
        try await k.start(setup: true)
        let first = try #require(k.onLoop { $0.manager.pairingPrompt?.code })
        k.onLoop { $0.pairing!.codeLifetimeNs = 100_000_000 }
        // The first code keeps its lifetime; a code from kioskctl pair --print (not on the screen)
        // stands in for it, and its expiry brings a new setup code.
        #expect(try await k.ctl(.pair(role: "operator", show: false)).decode(PairAnswer.self).shown == false)
        #expect(await eventually(3) { k.onLoop { $0.manager.pairingPrompt?.code }.map { $0 != first } ?? false })
        let second = try #require(k.onLoop { $0.manager.pairingPrompt?.code })
        #expect(await eventually(3) { k.onLoop { $0.manager.pairingPrompt?.code }.map { $0 != second } ?? false }, "renewed when it expires")
        #expect(k.onLoop { $0.manager.pairingPrompt?.title } == "Scan to set up this kiosk")
        await k.stop()
    }

    @Test func withSetupOffNoCodeIsShown() async throws {
        let k = WebKiosk()
        try await k.start(setup: false)
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        let setup = try await k.ctl(.status).decode(StatusAnswer.self).setup
        #expect(setup == SetupStatus(state: "off", shown: false))
        await k.stop()
    }

    /// Waiting is kept across a restart (a new code is shown), and so is an owner's pairing
    /// (no code after it).
    @Test func theSetupStateIsKeptAcrossRestarts() async throws {
        let dir = shortDir()
        let a = WebKiosk(dir: dir)
        try await a.start(setup: true)
        let viewer = try await a.pairedCookie(role: "viewer", name: "v")
        #expect(await eventually { a.onLoop { $0.manager.pairingPrompt?.title } == "Scan to set up this kiosk" })
        await a.stop()
        let b = WebKiosk(dir: dir)
        try await b.start(setup: true)
        let code = try #require(try await b.ctl(.status).decode(StatusAnswer.self).setup?.code, "still waiting for an owner after a restart")
        #expect(try await http(b.port, "GET", "/api/session", cookie: viewer).text.contains(#""role":"viewer""#))
        #expect(try await http(b.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "Anna"}"#).status == 200)
        await b.stop()
        let c = WebKiosk(dir: dir)
        try await c.start(setup: true)
        #expect(c.onLoop { $0.manager.pairingPrompt } == nil)
        let setup = try await c.ctl(.status).decode(StatusAnswer.self).setup
        #expect(setup?.state == "done" && setup?.owner == "Anna")
        await c.stop()
    }

    /// A book written before owners existed: its devices keep their roles and the kiosk, already
    /// in use, shows no setup code.
    @Test func devicesPairedBeforeOwnersKeepTheirRolesAndNoSetupCodeIsShown() async throws {
        let dir = shortDir()
        let a = WebKiosk(dir: dir)
        try await a.start(setup: false)
        let old = #"[{"created":1764000000,"lastUse":1764000100,"name":"tablet","role":"operator","tokenHash":"\#(SHA256.hex(Array("tok-op".utf8)))"},"#
            + #"{"created":1764000000,"name":"wall","role":"viewer","tokenHash":"\#(SHA256.hex(Array("tok-view".utf8)))"}]"#
        a.onLoop { try! $0.state.save("web.devices", old) }
        await a.stop()
        let b = WebKiosk(dir: dir)
        try await b.start(setup: true)
        #expect(b.onLoop { $0.manager.pairingPrompt } == nil)
        #expect(try await b.ctl(.status).decode(StatusAnswer.self).setup?.state == "done")
        #expect(try await http(b.port, "GET", "/api/session", cookie: "kioskd_session=tok-op").text.contains(#""role":"operator""#))
        #expect(try await http(b.port, "POST", "/api/counter/HOME/inc", cookie: "kioskd_session=tok-op").status == 200)
        #expect(try await http(b.port, "POST", "/api/counter/HOME/inc", cookie: "kioskd_session=tok-view").status == 403)
        #expect(try await http(b.port, "GET", "/api/devices", cookie: "kioskd_session=tok-op").status == 403)
        await b.stop()
    }

    /// An owner's revocation from the page: the device's open stream ends at once and its next
    /// request is refused.
    @Test func anOwnersRevocationTakesEffectAtOnce() async throws {
        let k = WebKiosk()
        try await k.start()
        let owner = try await k.pairedCookie(role: "owner", name: "owner")
        let op = try await k.pairedCookie(role: "operator", name: "tablet")
        let c = try TCP(k.port)
        c.send("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(k.port)\r\nCookie: \(op)\r\n\r\n")
        _ = await c.readAsync { String(decoding: $0, as: UTF8.self).contains("event: theme") }
        #expect(k.server.streamCount == 1)
        let t0 = Date()
        let r = try await http(k.port, "POST", "/api/devices/tablet/revoke", cookie: owner)
        #expect(r.status == 200 && r.text.contains(#""revoked":"tablet""#), "\(r.text)")
        _ = await c.readAsync()  // until EOF
        #expect(Date().timeIntervalSince(t0) < 1, "the stream ended when the device was revoked")
        #expect(try await http(k.port, "GET", "/api/status", cookie: op).status == 401)
        #expect(!(try await http(k.port, "GET", "/api/devices", cookie: owner).text.contains("tablet")))
        #expect(k.onLoop { $0.state.load("web.devices") }?.contains("tablet") == false, "the revocation is kept")
        await k.stop()
    }

    /// Requests note the last use in memory; saving it costs at most one commit a minute.
    @Test func lastUsesDoNotWriteOnEveryRequest() async throws {
        let k = WebKiosk()
        try await k.start()
        let owner = try await k.pairedCookie(role: "owner", name: "owner")
        let op = try await k.pairedCookie(role: "operator", name: "tablet")
        // The first use after the pairings' saves arms the minute's save; let it settle.
        _ = try await http(k.port, "GET", "/api/session", cookie: op)
        let before = k.onLoop { $0.pipeline.stats.commits }
        for _ in 0..<40 { #expect(try await http(k.port, "GET", "/api/session", cookie: op).status == 200) }
        let after = k.onLoop { $0.pipeline.stats.commits }
        #expect(after - before <= 1, "\(after - before) commits for 40 requests")
        #expect(k.onLoop { $0.pairing!.lastUseTimer != nil }, "their save waits for the minute")
        let devices = try ControlJSON.decode(DevicesAnswer.self, from: try await http(k.port, "GET", "/api/devices", cookie: owner).body)
        let tablet = try #require(devices.devices.first { $0.name == "tablet" })
        #expect(tablet.lastUse != nil, "the list shows the last use at once")
        await k.stop()
    }

    @Test func anOwnerReadsTheRecentErrors() async throws {
        let k = WebKiosk()
        try await k.start()
        let owner = try await k.pairedCookie(role: "owner", name: "owner")
        let marker = "disk full on /var/lib/kioskd \(UInt32.random(in: 0...UInt32.max))"
        var logger = Logger(label: "test") { JournalLogHandler(label: $0, level: .info, prefixed: true, recent: .shared) }
        logger.logLevel = .info
        logger.error("\(marker)", metadata: ["state.key": "counter.score.HOME"])
        let r = try await http(k.port, "GET", "/api/errors", cookie: owner)
        let answer = try ControlJSON.decode(RecentErrorsAnswer.self, from: r.body)
        #expect(answer.errors.contains { $0.level == "error" && $0.message == "\(marker) [state.key=counter.score.HOME]" }, "\(r.text)")
        await k.stop()
    }
}

@Suite struct RecentLogTests {
    @Test func theRingKeepsTheLastWarningsAndErrorsOnly() {
        let ring = RecentLog(capacity: 3)
        ring.record(level: .info, message: "not kept")
        for i in 1...5 { ring.record(level: i % 2 == 0 ? .warning : .error, message: "m\(i)") }
        ring.record(level: .critical, message: String(repeating: "x", count: 5000))
        let a = ring.answer
        #expect(a.errors.map(\.message.count) == [2, 2, RecentLog.maxMessageBytes + 1])
        #expect(a.errors.prefix(2).map(\.message) == ["m4", "m5"])
        #expect(a.errors.map(\.level) == ["warning", "error", "critical"])
        #expect(a.dropped == 3 && a.capacity == 3)
    }

    /// An owner is kept as an operator with `"owner": true` (an older kioskd reads an operator);
    /// a role this version does not know is read as a viewer.
    @Test func anOwnerIsKeptSoThatOlderVersionsReadAnOperator() throws {
        let r = PairingBook.Record(name: "Anna", role: .owner, tokenHash: "h", created: 1, lastUse: nil)
        let text = String(decoding: try JSONEncoder().encode(r), as: UTF8.self)
        #expect(text.contains(#""role":"operator""#) && text.contains(#""owner":true"#))
        #expect(try JSONDecoder().decode(PairingBook.Record.self, from: Data(text.utf8)).role == .owner)
        let future = #"{"name":"x","role":"auditor","tokenHash":"h","created":1}"#
        #expect(try JSONDecoder().decode(PairingBook.Record.self, from: Data(future.utf8)).role == .viewer)
    }
}
