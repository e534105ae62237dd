import FoundationEssentials
import Glibc
import KioskControl

/// Who may reach the page under which name: the `Host` a request names must be the kiosk's
/// (an IP address, `localhost`, this machine's name, the configured URL's host or a name in
/// `hosts`), so a page on another site cannot reach the kiosk through DNS rebinding; an
/// `Origin`, when sent, must be one the page is served under, scheme, host and port alike (no
/// cross-site requests, no CORS; a page on another port of the kiosk's host is another site).
public struct WebAccess: Sendable {
    public let names: Set<String>
    /// The session cookie's name.
    public static let cookieName = "kioskd_session"

    /// The page's own origin when it is reached through `web.url` (scheme, host, port), and
    /// the names of `web.hosts` (a reverse proxy's, on the scheme's default port).
    let urlOrigin: Origin?
    let proxyHosts: Set<String>

    /// An origin's parts, the port made explicit.
    struct Origin: Equatable, Hashable {
        var scheme: String
        var host: String
        var port: Int

        static func defaultPort(_ scheme: String) -> Int { scheme == "https" ? 443 : 80 }
    }

    public init(settings: WebSettings, machineName: String = WebAccess.machineName()) {
        var n: Set<String> = ["localhost"]
        n.formUnion(settings.hosts)
        var u: Origin?
        if let url = settings.url, let c = URLComponents(string: url), let h = c.host, let scheme = c.scheme?.lowercased() {
            n.insert(h.lowercased())
            u = Origin(scheme: scheme, host: h.lowercased(), port: c.port ?? Origin.defaultPort(scheme))
        }
        if !machineName.isEmpty {
            n.insert(machineName.lowercased())
            n.insert(machineName.lowercased() + ".local")
        }
        names = n
        urlOrigin = u
        proxyHosts = Set(settings.hosts)
    }

    public static func machineName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count - 1) == 0 else { return "" }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The host part of a `Host` header or an origin's authority ("[::1]:8080" → "::1").
    static func hostPart(_ authority: String) -> String {
        if authority.hasPrefix("[") {
            if let close = authority.firstIndex(of: "]") { return String(authority[authority.index(after: authority.startIndex)..<close]).lowercased() }
            return authority.lowercased()
        }
        if let colon = authority.lastIndex(of: ":"), authority.firstIndex(of: ":") == colon {
            return String(authority[..<colon]).lowercased()
        }
        return authority.lowercased()
    }

    static func isIPAddress(_ h: String) -> Bool {
        var a4 = in_addr(), a6 = in6_addr()
        return inet_pton(AF_INET, h, &a4) == 1 || inet_pton(AF_INET6, h, &a6) == 1
    }

    public func allowsHost(_ authority: String) -> Bool {
        let h = WebAccess.hostPart(authority)
        return !h.isEmpty && (WebAccess.isIPAddress(h) || names.contains(h))
    }

    /// The refusal for a request's `Host` and `Origin`, nil when both are the kiosk's.
    public func check(host: String?, origin: String?) -> ControlResponse? {
        guard let host, !host.isEmpty else {
            return .error(403, "request without a Host header; the page is served only under the kiosk's own address")
        }
        guard allowsHost(host) else {
            return .error(403, "host '\(host)' is not this kiosk's address (allowed: IP addresses, \(names.sorted().joined(separator: ", ")); add a name to web.hosts in the config)")
        }
        if let origin {
            guard let o = WebAccess.parseOrigin(origin) else {
                return .error(403, "origin '\(origin)' is not this kiosk's page (an origin is scheme://host[:port], nothing more); cross-site requests are refused")
            }
            guard allowedOrigins(host: host).contains(o) else {
                return .error(403, "origin '\(origin)' is not this kiosk's page (\(host)); cross-site requests are refused")
            }
        }
        return nil
    }

    /// The origins a page reached under the `Host` authority `host` may send: the same host and
    /// port over http (the port 80 when the authority names none), `web.url`'s, and a name of
    /// `web.hosts` over http or https on the scheme's default port. Scheme, host and port must
    /// all match: a page on another port or scheme of the same host is another site.
    func allowedOrigins(host: String) -> Set<Origin> {
        let h = WebAccess.hostPart(host)
        var allowed: Set<Origin> = [Origin(scheme: "http", host: h, port: WebAccess.port(host).flatMap { Int($0) } ?? 80)]
        if let urlOrigin { allowed.insert(urlOrigin) }
        if proxyHosts.contains(h) {
            allowed.insert(Origin(scheme: "http", host: h, port: 80))
            allowed.insert(Origin(scheme: "https", host: h, port: 443))
        }
        return allowed
    }

    /// An `Origin` header's scheme, host and port; nil unless it is exactly http(s)://host[:port]
    /// (no user information, path, query or fragment; "null" is nil).
    static func parseOrigin(_ origin: String) -> Origin? {
        guard let c = URLComponents(string: origin), let scheme = c.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let h = c.host, !h.isEmpty, c.user == nil, c.password == nil, c.path.isEmpty, c.query == nil, c.fragment == nil
        else { return nil }
        let host = h.lowercased().trimming { $0 == "[" || $0 == "]" }
        return Origin(scheme: scheme, host: host, port: c.port ?? Origin.defaultPort(scheme))
    }

    static func port(_ authority: String) -> String? {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            let rest = authority[authority.index(after: close)...]
            return rest.hasPrefix(":") ? String(rest.dropFirst()) : nil
        }
        guard let colon = authority.lastIndex(of: ":"), authority.firstIndex(of: ":") == colon else { return nil }
        return String(authority[authority.index(after: colon)...])
    }

    /// The session token from a `Cookie` header.
    public static func token(cookie: String?) -> String? {
        guard let cookie else { return nil }
        for part in cookie.split(separator: ";") {
            let kv = part.trimmingSpaces()
            if kv.hasPrefix(cookieName + "=") {
                let v = String(kv.dropFirst(cookieName.count + 1))
                return v.isEmpty ? nil : v
            }
        }
        return nil
    }

    /// The `Set-Cookie` value that gives a paired device its token.
    public static func setCookie(token: String, secure: Bool) -> String {
        "\(cookieName)=\(token); Path=/; Max-Age=31536000; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}
