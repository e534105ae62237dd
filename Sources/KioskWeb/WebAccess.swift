import Foundation
import KioskControl

/// Who may reach the page under which name: the `Host` a request names must be the kiosk's
/// (an IP address, `localhost`, this machine's name, the configured URL's host or a name in
/// `hosts`), so a page on another site cannot reach the kiosk through DNS rebinding; an
/// `Origin`, when sent, must be this same host (no cross-site requests, no CORS).
public struct WebAccess: Sendable {
    public let names: Set<String>
    /// The session cookie's name.
    public static let cookieName = "kioskd_session"

    public init(settings: WebSettings, machineName: String = WebAccess.machineName()) {
        var n: Set<String> = ["localhost"]
        n.formUnion(settings.hosts)
        if let u = settings.url, let h = URLComponents(string: u)?.host { n.insert(h.lowercased()) }
        if !machineName.isEmpty {
            n.insert(machineName.lowercased())
            n.insert(machineName.lowercased() + ".local")
        }
        names = n
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
            guard let c = URLComponents(string: origin), c.scheme == "http" || c.scheme == "https", let oh = c.host else {
                return .error(403, "origin '\(origin)' is not this kiosk's page; cross-site requests are refused")
            }
            // Same host; same port when both name one (behind a reverse proxy on the default
            // port the origin names none).
            let sameHost = oh.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")) == WebAccess.hostPart(host)
            let hostPort = WebAccess.port(host).flatMap { Int($0) }
            let samePort = c.port == nil || hostPort == nil || c.port == hostPort
            guard sameHost, samePort else {
                return .error(403, "origin '\(origin)' is not this kiosk's page (\(host)); cross-site requests are refused")
            }
        }
        return nil
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
            let kv = part.trimmingCharacters(in: .whitespaces)
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
