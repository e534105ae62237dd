import FoundationEssentials
import KioskCore

/// `[web]`: the phone page's HTTP server (absent: no web server).
///
/// ```toml
/// [web]
/// listen = "0.0.0.0:8080"            # address and port
/// pair_minutes = 5                   # how long a pairing code is valid
/// url = "http://kiosk.local:8080/"   # the address phones use (shown as a QR code); default: http://<first LAN address>:<port>/
/// hosts = ["kiosk.example.org"]      # further host names the page may be reached under (a reverse proxy's)
/// pair_key = "KEY_F12"               # a key on the kiosk that shows an operator code
/// pair_gesture = "hold-top-right"    # a finger held on that corner shows an operator code
/// pair_gesture_seconds = 3           # for this long
/// setup = true                       # a kiosk never paired with an owner shows an owner code (default)
/// ```
public struct WebSettings: Sendable, Equatable {
    /// Address to bind ("0.0.0.0", "127.0.0.1", "::").
    public var host: String
    public var port: Int
    /// How long a pairing code stays valid, in seconds (`pair_minutes` × 60).
    public var pairSeconds: Int = 300
    /// The page's address as phones reach it (nil: made from the first LAN address and `port`).
    public var url: String?
    /// Host names besides the URL's host, IP addresses and this machine's name under which the
    /// page may be reached (the `Host` and `Origin` checks).
    public var hosts: [String] = []
    /// A key on the kiosk that opens an operator code on the screen (`pair_key = "KEY_F12"`); nil: none.
    public var pairKey: UInt16?
    /// A finger held on a screen corner opens an operator code (`pair_gesture = "hold-top-right"`); nil: none.
    public var pairGesture: PairGestureSettings?
    /// Until an owner is paired, the screen shows an owner code ("scan to set up"); false: never.
    public var setup = true

    public init(host: String, port: Int) { self.host = host; self.port = port }

    /// Reads `[web]` (nil when the table is absent). Errors name file:line:key.
    public static func parse(_ t: ConfigTable?) throws -> WebSettings? {
        guard let t else { return nil }
        guard let listen = try t.string("listen") else {
            throw t.error("listen", "missing: the address and port to serve the phone page on, e.g. \"0.0.0.0:8080\" (leave out [web] for no web server)")
        }
        guard let (host, port) = splitHostPort(listen) else {
            throw t.error("listen", "expected ADDRESS:PORT such as \"0.0.0.0:8080\" or \"[::]:8080\" (port 1…65535), got \"\(ConfigTable.printable(listen))\"")
        }
        var s = WebSettings(host: host, port: port)
        s.pairSeconds = try t.int("pair_minutes", default: 5, range: 1...60) * 60
        if let u = try t.string("url") {
            guard let c = URLComponents(string: u), c.scheme == "http" || c.scheme == "https", let h = c.host, !h.isEmpty else {
                throw t.error("url", "expected an http:// or https:// address such as \"http://kiosk.local:8080/\", got \"\(ConfigTable.printable(u))\"")
            }
            s.url = u.hasSuffix("/") ? u : u + "/"
        }
        if let hs = try t.stringArray("hosts") {
            for (i, h) in hs.enumerated() where h.isEmpty || h.contains(where: { $0 == "/" || $0 == ":" || $0 == " " || $0 == "@" }) {
                throw t.error("hosts", "entry \(i) \"\(ConfigTable.printable(h))\" is not a host name (no port, scheme or path)")
            }
            s.hosts = hs.map { $0.lowercased() }
        }
        if let k = try t.string("pair_key") {
            guard let code = KeyCode.code(named: k) else {
                throw t.error("pair_key", "unknown key name \"\(ConfigTable.printable(k))\"; expected an evdev name such as \"KEY_F12\"")
            }
            s.pairKey = code
        }
        let holdSeconds = try t.int("pair_gesture_seconds", default: 3, range: 1...30)
        if let g = try t.string("pair_gesture") {
            let names = ScreenCorner.allCases.map { "\"hold-\($0.rawValue)\"" }.joined(separator: ", ")
            guard g.hasPrefix("hold-"), let corner = ScreenCorner(rawValue: String(g.dropFirst(5))) else {
                throw t.error("pair_gesture", "unknown gesture \"\(ConfigTable.printable(g))\"; expected one of \(names)")
            }
            s.pairGesture = PairGestureSettings(corner: corner, holdUsec: UInt64(holdSeconds) * 1_000_000)
        } else if t.has("pair_gesture_seconds") {
            throw t.error("pair_gesture_seconds", "set without pair_gesture (e.g. pair_gesture = \"hold-top-right\")")
        }
        s.setup = try t.bool("setup", default: true)
        try t.finish()
        return s
    }

    /// "0.0.0.0:8080" → ("0.0.0.0", 8080); "[::]:8080" → ("::", 8080).
    static func splitHostPort(_ s: String) -> (String, Int)? {
        let host: Substring, portText: Substring
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]"), s[s.index(after: close)...].hasPrefix(":") else { return nil }
            host = s[s.index(after: s.startIndex)..<close]
            portText = s[s.index(close, offsetBy: 2)...]
        } else {
            guard let colon = s.lastIndex(of: ":"), !s[..<colon].contains(":") else { return nil }
            host = s[..<colon]
            portText = s[s.index(after: colon)...]
        }
        guard !host.isEmpty, let p = Int(portText), (1...65535).contains(p) else { return nil }
        return (String(host), p)
    }
}
