#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// The `[mqtt]` settings as a value: where the broker is, who this kiosk is, how to log in, and
/// the limits of the client (keepalive, outgoing queue, reconnect backoff).
public struct MQTTConfig: Sendable, Equatable {
    public struct TLS: Sendable, Equatable {
        /// CA certificate file (PEM) that the broker's certificate must chain to.
        public var caFile: String
        /// Client certificate and key (PEM), both or neither.
        public var certFile: String?
        public var keyFile: String?
        public init(caFile: String, certFile: String? = nil, keyFile: String? = nil) {
            self.caFile = caFile
            self.certFile = certFile
            self.keyFile = keyFile
        }
    }

    public var host: String
    public var port: Int
    /// Set for `mqtts://` brokers.
    public var tls: TLS?
    /// This kiosk's id in topics (`kioskd/ID/...`).
    public var id: String
    public var username: String?
    /// Read from `password_file` (trailing newline removed).
    public var password: String?
    /// Seconds between keepalive pings when idle; the broker drops the client after 1.5×.
    public var keepalive: Int = 60
    /// Messages kept while disconnected; further ones are refused (see `MQTTClient.publish`).
    public var queueLimit: Int = 100
    /// Incoming messages with a larger payload are dropped on arrival, never copied
    /// (`[mqtt] max_message_bytes`, default 64 KiB).
    public var maxMessageBytes: Int = 65536
    /// The MQTT version spoken: 5 (the default: the broker is told `maxMessageBytes` as the
    /// maximum packet size and never sends larger messages; a broker that refuses MQTT 5 is
    /// spoken to in 3.1.1 from then on) or 3.1.1 (`[mqtt] protocol = "3.1.1"`; larger messages
    /// are then received and dropped on arrival).
    public var protocolVersion: ProtocolVersion = .v5
    public enum ProtocolVersion: String, Sendable, Equatable {
        case v5 = "5"
        case v311 = "3.1.1"
    }
    /// Reconnect backoff: first delay and ceiling, in nanoseconds.
    public var backoffInitial: Int64 = 500_000_000
    public var backoffMax: Int64 = 30_000_000_000
    /// A TCP/TLS connect (up to CONNACK) that takes longer than this is abandoned and retried.
    public var connectTimeout: Int64 = 10_000_000_000
    /// Home Assistant's discovery prefix (`PREFIX/device/kioskd_ID/config`, `PREFIX/status`).
    public var discoveryPrefix = "homeassistant"
    /// The device's name in Home Assistant (`[homeassistant] name`, settable from the phone);
    /// nil: "kioskd ID". Only the name: ids and topics stay those of `id`.
    public var deviceName: String?

    public init(host: String, port: Int, tls: TLS? = nil, id: String, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
        self.id = id
        self.username = username
        self.password = password
    }

    /// MQTT client id sent to the broker.
    public var clientID: String { "kioskd-\(id)" }
    /// `kioskd/ID/availability`: `online` (retained, on connect) / `offline` (retained: the last
    /// will, and published on a clean stop).
    public var availabilityTopic: String { "kioskd/\(id)/availability" }

    // MARK: - Parsing

    /// One config value with where it was written (for example `/etc/kioskd/kioskd.toml:12`).
    public struct Entry: Sendable {
        public enum Value: Sendable, Equatable {
            case string(String)
            case integer(Int)
            case other(String) // any other TOML type, named for the error message
        }
        public var value: Value
        public var location: String
        public init(_ value: Value, at location: String) {
            self.value = value
            self.location = location
        }
    }

    public static let knownKeys: Set<String> = [
        "broker", "id", "username", "password_file", "ca_file", "cert_file", "key_file", "keepalive", "queue_limit",
        "discovery_prefix", "max_message_bytes", "protocol",
    ]

    /// Builds the config from the keys of the `[mqtt]` table. Errors are `KioskError.config`
    /// naming the location, the key (`mqtt.KEY`) and the bad value. `hostName` is the default id;
    /// `readFile` reads `password_file` (replaceable in tests).
    public static func parse(_ entries: [String: Entry], table: String = "mqtt", hostName: String? = nil,
                             readFile: (String) throws -> String = MQTTConfig.readSmallFile) throws -> MQTTConfig {
        func fail(_ key: String, _ e: Entry?, _ what: String) -> KioskError {
            let loc = e.map { "\($0.location): " } ?? ""
            return KioskError.config("\(loc)key '\(table).\(key)': \(what)")
        }
        for key in entries.keys.sorted() where !knownKeys.contains(key) {
            throw fail(key, entries[key], "unknown key (known: \(knownKeys.sorted().joined(separator: ", ")))")
        }
        func string(_ key: String) throws -> String? {
            guard let e = entries[key] else { return nil }
            switch e.value {
            case .string(let s): return s
            case .integer(let i): throw fail(key, e, "expected a string, saw the integer \(i)")
            case .other(let t): throw fail(key, e, "expected a string, saw \(t)")
            }
        }
        func integer(_ key: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let e = entries[key] else { return nil }
            switch e.value {
            case .integer(let i):
                guard range.contains(i) else { throw fail(key, e, "\(i) is out of range \(range.lowerBound)...\(range.upperBound)") }
                return i
            case .string(let s): throw fail(key, e, "expected an integer, saw the string \"\(s)\"")
            case .other(let t): throw fail(key, e, "expected an integer, saw \(t)")
            }
        }

        guard let brokerText = try string("broker") else {
            throw fail("broker", nil, "missing: the broker URL, for example \"mqtt://127.0.0.1:1883\"")
        }
        let broker: (tls: Bool, host: String, port: Int)
        do {
            broker = try parseBrokerURL(brokerText)
        } catch let e as KioskError {
            throw fail("broker", entries["broker"], e.message)
        }

        let id = try string("id") ?? hostName ?? currentHostName()
        if let problem = topicLevelProblem(id) { throw fail("id", entries["id"], "\"\(id)\" \(problem)") }

        var config = MQTTConfig(host: broker.host, port: broker.port, id: id)
        config.username = try string("username")
        if let u = config.username, u.isEmpty { throw fail("username", entries["username"], "is empty (leave the key out for an anonymous login)") }
        if let path = try string("password_file") {
            guard config.username != nil else { throw fail("password_file", entries["password_file"], "set, but 'username' is not: MQTT sends a password only with a user name") }
            do {
                var pw = try readFile(path)
                while pw.hasSuffix("\n") || pw.hasSuffix("\r") { pw.removeLast() }
                guard !pw.isEmpty else { throw KioskError.config("\(path) is empty") }
                config.password = pw
            } catch let e as KioskError {
                throw fail("password_file", entries["password_file"], e.message)
            }
        }
        let ca = try string("ca_file"), cert = try string("cert_file"), key = try string("key_file")
        if broker.tls {
            guard let ca else { throw fail("ca_file", entries["broker"], "missing: \"\(brokerText)\" uses TLS and needs the CA certificate file that signed the broker's certificate") }
            if (cert == nil) != (key == nil) {
                let (k, other) = cert == nil ? ("cert_file", "key_file") : ("key_file", "cert_file")
                throw fail(k, entries[other], "missing: '\(other)' is set; a client certificate needs both cert_file and key_file")
            }
            config.tls = TLS(caFile: ca, certFile: cert, keyFile: key)
        } else {
            for (k, v) in [("ca_file", ca), ("cert_file", cert), ("key_file", key)] where v != nil {
                throw fail(k, entries[k], "set, but the broker \"\(brokerText)\" is mqtt:// (no TLS); use mqtts://")
            }
        }
        if let k = try integer("keepalive", 5...65535) { config.keepalive = k }
        if let q = try integer("queue_limit", 0...100_000) { config.queueLimit = q }
        if let m = try integer("max_message_bytes", 16...268_435_455) { config.maxMessageBytes = m }
        if let e = entries["protocol"] {
            // `protocol = 5` is read as the string "5".
            let v: String
            if case .integer(let i) = e.value { v = String(i) } else { v = try string("protocol") ?? "" }
            guard let p = ProtocolVersion(rawValue: v) else {
                throw fail("protocol", entries["protocol"], "\"\(v.prefix(64))\" is not an MQTT version kioskd speaks: expected \"5\" or \"3.1.1\"")
            }
            config.protocolVersion = p
        }
        if let p = try string("discovery_prefix") {
            if p.isEmpty || p.hasPrefix("/") || p.hasSuffix("/") || p.contains("//") || p.contains("+") || p.contains("#") || p.utf8.count > 256 {
                throw fail("discovery_prefix", entries["discovery_prefix"], "\"\(p)\" is not a topic prefix: expected levels separated by '/', none empty, no '+' or '#', at most 256 bytes, like \"homeassistant\"")
            }
            config.discoveryPrefix = p
        }
        return config
    }

    /// `mqtt://HOST[:PORT]` (default port 1883) or `mqtts://HOST[:PORT]` (8883). HOST may be a
    /// name, an IPv4 address or a bracketed IPv6 address (`mqtt://[::1]:1883`).
    public static func parseBrokerURL(_ url: String) throws -> (tls: Bool, host: String, port: Int) {
        let tls: Bool
        var rest: Substring
        if url.hasPrefix("mqtt://") { tls = false; rest = url.dropFirst(7) }
        else if url.hasPrefix("mqtts://") { tls = true; rest = url.dropFirst(8) }
        else { throw KioskError.config("\"\(url)\" is not a broker URL: expected mqtt://HOST:PORT or mqtts://HOST:PORT") }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.contains("/") || rest.contains("@") || rest.contains("?") {
            throw KioskError.config("\"\(url)\": only HOST[:PORT] may follow the scheme (no path, user or query; use the username and password_file keys)")
        }
        var host: Substring, portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw KioskError.config("\"\(url)\": '[' of an IPv6 address is not closed") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.isEmpty { portText = nil }
            else if after.hasPrefix(":") { portText = after.dropFirst() }
            else { throw KioskError.config("\"\(url)\": expected ':PORT' after the IPv6 address, saw \"\(after)\"") }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
            portText = nil
        }
        guard !host.isEmpty else { throw KioskError.config("\"\(url)\": the host is empty") }
        var port = tls ? 8883 : 1883
        if let p = portText {
            guard let n = Int(p), (1...65535).contains(n) else {
                throw KioskError.config("\"\(url)\": port \"\(p)\" is not a number in 1...65535")
            }
            port = n
        }
        return (tls, String(host), port)
    }

    /// Why `s` cannot be one topic level (nil when it can).
    static func topicLevelProblem(_ s: String) -> String? {
        if s.isEmpty { return "is empty" }
        if s.utf8.count > 64 { return "is longer than 64 bytes" }
        for c in s.unicodeScalars {
            if c == "/" || c == "+" || c == "#" { return "contains '\(c)', which MQTT topics reserve" }
            if c.value < 0x20 || c.value == 0x7F { return "contains a control character" }
        }
        return nil
    }

    static func currentHostName() -> String {
        var buf = [CChar](repeating: 0, count: 256)
        guard gethostname(&buf, buf.count - 1) == 0 else { return "kiosk" }
        let name = String(decoding: buf.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return topicLevelProblem(name) == nil ? name : "kiosk"
    }

    /// Reads a small text file (a secret): errors name the path, the call and errno.
    public static func readSmallFile(_ path: String) throws -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { let e = errno; throw KioskError(.config, "open \(path) failed: \(String(cString: strerror(e))) (errno \(e))", errno: e) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buf, buf.count)
            if n < 0 {
                let e = errno
                if e == EINTR { continue }
                throw KioskError(.config, "read \(path) failed: \(String(cString: strerror(e))) (errno \(e))", errno: e)
            }
            if n == 0 { break }
            bytes += buf[0..<n]
            if bytes.count > 65536 { throw KioskError.config("\(path) is larger than 64 KiB; expected a password") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
