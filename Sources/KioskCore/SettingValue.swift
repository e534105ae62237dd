import FoundationEssentials

/// A value of the settings layer (docs/config.md, "Settings kept beside the config file"): what a
/// config key may be set to from the phone page or `kioskctl config set`. JSON and TOML scalars
/// and arrays of strings (`scenes.order`, schedules).
public enum SettingValue: Sendable, Equatable, Codable, CustomStringConvertible {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case strings([String])

    public init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let b = try? c.decode(Bool.self) { self = .bool(b) }
        else if let i = try? c.decode(Int.self) { self = .int(i) }
        else if let d = try? c.decode(Double.self) { self = .double(d) }
        else if let s = try? c.decode(String.self) { self = .string(s) }
        else if let a = try? c.decode([String].self) { self = .strings(a) }
        else {
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "expected a string, a number, true or false, or an array of strings")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .string(let s): try c.encode(s)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .bool(let b): try c.encode(b)
        case .strings(let a): try c.encode(a)
        }
    }

    /// The value as a config node (placed at `location`).
    public func node(at location: SourceLocation) -> ConfigNode {
        switch self {
        case .string(let s): return ConfigNode(.string(s), at: location)
        case .int(let i): return ConfigNode(.int(i), at: location)
        case .double(let d): return ConfigNode(.double(d), at: location)
        case .bool(let b): return ConfigNode(.bool(b), at: location)
        case .strings(let a): return ConfigNode(.array(a.map { ConfigNode(.string($0), at: location) }), at: location)
        }
    }

    /// The value of a config node, when the layer can hold it (nil: a table, or an array of
    /// something other than strings).
    public init?(_ v: ConfigValue) {
        switch v {
        case .string(let s): self = .string(s)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .bool(let b): self = .bool(b)
        case .array(let a):
            var out: [String] = []
            for n in a { guard case .string(let s) = n.value else { return nil }; out.append(s) }
            self = .strings(out)
        case .table: return nil
        }
    }

    /// The value of a JSON value (nil: null, an object, an array of other than strings).
    public init?(json v: JSONValue) {
        switch v {
        case .bool(let b): self = .bool(b)
        case .string(let s): self = .string(s)
        case .integer(let i): self = .int(Int(i))
        case .double(let d): self = .double(d)
        case .array(let a):
            var out: [String] = []
            for e in a { guard case .string(let s) = e else { return nil }; out.append(s) }
            self = .strings(out)
        case .null, .object: return nil
        }
    }

    /// The value as JSON.
    public var json: JSONValue {
        switch self {
        case .string(let s): return .string(s)
        case .int(let i): return .integer(Int64(i))
        case .double(let d): return .double(d)
        case .bool(let b): return .bool(b)
        case .strings(let a): return .array(a.map(JSONValue.string))
        }
    }

    /// As TOML writes it: `"LIONS"`, `3`, `true`, `["a", "b"]`.
    public var description: String {
        switch self {
        case .string(let s): return Self.quote(s)
        case .int(let i): return "\(i)"
        case .double(let d): return "\(d)"
        case .bool(let b): return b ? "true" : "false"
        case .strings(let a): return "[" + a.map(Self.quote).joined(separator: ", ") + "]"
        }
    }

    private static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            if u == "\\" || u == "\"" { out += "\\" }
            out.unicodeScalars.append(u)
        }
        return ConfigTable.printable(out) + "\""
    }
}

/// Who set a value of the settings layer, and when.
public struct SettingSource: Sendable, Equatable, Codable, CustomStringConvertible {
    /// "phone" (the phone page, `device` names the paired device) or "kioskctl".
    public var by: String
    public var device: String?
    /// Seconds since the epoch (UTC).
    public var at: Int64
    /// Set for every kiosk of the `[fleet]` group: the kiosk id of the group's primary, where it
    /// was set and which publishes it (docs/mqtt.md, "Settings for the whole fleet"). Nil: this
    /// kiosk's own value.
    public var fleet: String?

    public init(by: String, device: String? = nil, at: Int64, fleet: String? = nil) {
        self.by = by; self.device = device; self.at = at; self.fleet = fleet
    }

    public static func phone(_ device: String, at: Int64) -> SettingSource { SettingSource(by: "phone", device: device, at: at) }
    public static func kioskctl(at: Int64) -> SettingSource { SettingSource(by: "kioskctl", at: at) }

    /// "set from the phone by Anna's phone at 2026-11-28T20:01:02Z", "set by kioskctl at …".
    public var description: String {
        let when = Self.iso(at)
        if let fleet { return "set from the fleet by \(by == "phone" ? device ?? "a paired device" : by) on \(fleet) at \(when)" }
        if by == "phone" { return "set from the phone by \(device ?? "a paired device") at \(when)" }
        return "set by \(by) at \(when)"
    }

    static func iso(_ t: Int64) -> String {
        TextFormat.utc(t)
    }
}

/// A change of the settings layer: keys set (in order) and keys dropped (back to the file's
/// value), by one source.
public struct SettingsChange: Sendable, Equatable {
    public var set: [(key: String, value: SettingValue)]
    public var reset: [String]
    public var source: SettingSource
    /// For every kiosk of the `[fleet]` group (`PATCH /settings/fleet`, `kioskctl config set
    /// --fleet`): made on the group's primary, which publishes it to the followers.
    public var fleet: Bool

    public init(set: [(key: String, value: SettingValue)] = [], reset: [String] = [], source: SettingSource, fleet: Bool = false) {
        self.set = set; self.reset = reset; self.source = source; self.fleet = fleet
    }

    public static func == (a: SettingsChange, b: SettingsChange) -> Bool {
        a.fleet == b.fleet && a.reset == b.reset && a.source == b.source && a.set.map(\.key) == b.set.map(\.key) && a.set.map(\.value) == b.set.map(\.value)
    }
}
