import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
@testable import KioskWeb
import Testing

@Suite struct WebUnitTests {
    @Test func sha256MatchesTheStandardsVectors() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func webConfigErrorsNameFileLineAndKey() throws {
        let dir = shortDir()
        func load(_ web: String) -> String? {
            let text = """
            [display]
            backend = "headless"
            [scene.clock]
            kind = "clock"
            [web]
            \(web)
            """
            let p = "\(dir)/k.toml"
            try! text.write(toFile: p, atomically: false, encoding: .utf8)
            do { _ = try DaemonConfig.load(path: p, environment: [:]); return nil } catch let e as KioskError { return e.message } catch { return "\(error)" }
        }
        #expect(load(#"listen = "0.0.0.0""#)?.contains("k.toml:6: key 'web.listen': expected ADDRESS:PORT") == true)
        #expect(load(#"listen = "0.0.0.0:99999""#)?.contains("key 'web.listen'") == true)
        #expect(load("pair_minutes = 5")?.contains("key 'web.listen': missing") == true)
        #expect(load("listen = \"0.0.0.0:8080\"\npair_minutes = 0")?.contains("k.toml:7: key 'web.pair_minutes': 0 is out of range, expected 1…60") == true)
        #expect(load("listen = \"0.0.0.0:8080\"\nurl = \"ftp://x/\"")?.contains("k.toml:7: key 'web.url': expected an http:// or https:// address") == true)
        #expect(load("listen = \"0.0.0.0:8080\"\nhosts = [\"a.example:80\"]")?.contains("key 'web.hosts': entry 0") == true)
        #expect(load("listen = \"0.0.0.0:8080\"\npair_key = \"KEY_NOPE\"")?.contains("k.toml:7: key 'web.pair_key': unknown key name \"KEY_NOPE\"") == true)
        #expect(load("listen = \"0.0.0.0:8080\"\nlisten_port = 1")?.contains("key 'web.listen_port': unknown key") == true)
        let c = try DaemonConfig.load(path: { let p = "\(dir)/ok.toml"; try! "[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n[web]\nlisten = \"[::]:8081\"\npair_minutes = 2\n".write(toFile: p, atomically: false, encoding: .utf8); return p }(), environment: [:])
        #expect(c.web?.host == "::")
        #expect(c.web?.port == 8081)
        #expect(c.web?.pairSeconds == 120)
    }

    @Test func hostAndOriginChecks() {
        var s = WebSettings(host: "0.0.0.0", port: 8080)
        s.url = "http://kiosk.lan:8080/"
        s.hosts = ["kiosk.example.org"]
        let a = WebAccess(settings: s, machineName: "pi")
        #expect(a.check(host: "192.168.1.20:8080", origin: nil) == nil)
        #expect(a.check(host: "[fe80::1]:8080", origin: nil) == nil)
        #expect(a.check(host: "kiosk.lan:8080", origin: "http://kiosk.lan:8080") == nil)
        #expect(a.check(host: "pi.local:8080", origin: nil) == nil)
        #expect(a.check(host: "kiosk.example.org", origin: "https://kiosk.example.org") == nil)
        #expect(a.check(host: "evil.example:8080", origin: nil)?.status == 403)
        #expect(a.check(host: "evil.example:8080", origin: nil)?.errorMessage?.contains("host 'evil.example:8080' is not this kiosk's address") == true)
        #expect(a.check(host: nil, origin: nil)?.status == 403)
        #expect(a.check(host: "192.168.1.20:8080", origin: "http://evil.example")?.errorMessage?.contains("origin 'http://evil.example' is not this kiosk's page") == true)
        #expect(a.check(host: "192.168.1.20:8080", origin: "http://192.168.1.20:9999")?.status == 403)
        #expect(a.check(host: "192.168.1.20:8080", origin: "null")?.status == 403)
    }

    /// An Origin is accepted only when scheme, host and port (the scheme's default when absent)
    /// equal one the page is served under; user information, paths and the like are refused.
    @Test func originsMustMatchSchemeHostAndPort() {
        var s = WebSettings(host: "0.0.0.0", port: 8080)
        s.hosts = ["kiosk.example.org"]
        let a = WebAccess(settings: s, machineName: "pi")
        let host = "127.0.0.1:8080"
        let refused = [
            "http://127.0.0.1",              // port 80: another site on the same host
            "http://127.0.0.1:80",
            "https://127.0.0.1",
            "https://127.0.0.1:8080",        // same port, other scheme
            "http://127.0.0.1:8081",
            "http://user@127.0.0.1:8080",
            "http://user:pw@127.0.0.1:8080",
            "http://127.0.0.1:8080/",
            "http://127.0.0.1:8080/page",
            "http://127.0.0.1:8080?x=1",
            "http://127.0.0.1:8080#f",
            "ws://127.0.0.1:8080",
            "http://localhost:8080",         // another host name is another origin
            "null",
            "",
        ]
        for o in refused {
            #expect(a.check(host: host, origin: o)?.status == 403, "\(o) was accepted under \(host)")
        }
        #expect(a.check(host: host, origin: "http://127.0.0.1:8080") == nil)
        #expect(a.check(host: host, origin: "HTTP://127.0.0.1:8080") == nil)
        // An authority without a port means port 80; the origin's default port matches it.
        #expect(a.check(host: "pi.local", origin: "http://pi.local") == nil)
        #expect(a.check(host: "pi.local", origin: "http://pi.local:80") == nil)
        #expect(a.check(host: "pi.local", origin: "https://pi.local")?.status == 403)
        #expect(a.check(host: "[::1]:8080", origin: "http://[::1]:8080") == nil)
        #expect(a.check(host: "[::1]:8080", origin: "http://[::1]")?.status == 403)
        // A reverse proxy's name (web.hosts): http or https on the scheme's default port.
        #expect(a.check(host: "kiosk.example.org", origin: "https://kiosk.example.org") == nil)
        #expect(a.check(host: "kiosk.example.org", origin: "https://kiosk.example.org:8443")?.status == 403)
        // web.url's origin, under whichever address the request reached.
        var su = WebSettings(host: "0.0.0.0", port: 8080)
        su.url = "https://scores.example.net/"
        let b = WebAccess(settings: su, machineName: "pi")
        #expect(b.check(host: "scores.example.net", origin: "https://scores.example.net") == nil)
        #expect(b.check(host: "scores.example.net", origin: "https://scores.example.net:443") == nil)
        #expect(b.check(host: "127.0.0.1:8080", origin: "https://scores.example.net") == nil)
        #expect(b.check(host: "127.0.0.1:8080", origin: "http://scores.example.net")?.status == 403)
        #expect(b.check(host: "scores.example.net", origin: "https://scores.example.net:8443")?.status == 403)
        #expect(b.check(host: host, origin: "http://127.0.0.1:8080/x")?.errorMessage?.contains("scheme://host[:port], nothing more") == true)
    }

    @Test func pairRouteChecksRoleAndShow() throws {
        #expect(try ControlRouter.parse(method: "POST", uri: "/pair", body: []) == .pair(role: "operator", show: true))
        #expect(try ControlRouter.parse(method: "POST", uri: "/pair", body: Array(#"{"role":"viewer","show":false}"#.utf8)) == .pair(role: "viewer", show: false))
        #expect(try ControlRouter.parse(method: "POST", uri: "/pair", body: Array(#"{"role":"owner"}"#.utf8)) == .pair(role: "owner", show: true))
        #expect(try ControlRouter.parse(method: "GET", uri: "/errors", body: []) == .recentErrors)
        #expect(throws: ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a string ("admin")"#, field: "role")) {
            try ControlRouter.parse(method: "POST", uri: "/pair", body: Array(#"{"role":"admin"}"#.utf8))
        }
        #expect(try ControlRouter.parse(method: "POST", uri: "/devices/Anna%27s%20phone/revoke", body: []) == .revokeDevice(name: "Anna's phone"))
        #expect(try ControlRouter.parse(method: "GET", uri: "/paintings/a.png", body: []) == .painting(name: "a.png"))
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "GET", uri: "/paintings/..%2F..%2Fetc%2Fpasswd", body: []) }
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "GET", uri: "/paintings/.hidden.png", body: []) }
        for c: ControlCommand in [.pair(role: "viewer", show: false), .devices, .revokeDevice(name: "Anna's phone"), .themes, .palette, .paintings, .painting(name: "x.png"), .screenshot()] {
            let r = c.request
            #expect(try ControlRouter.parse(method: r.method, uri: r.path, body: r.body) == c)
        }
    }
}
