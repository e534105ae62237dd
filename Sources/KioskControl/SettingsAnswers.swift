import FoundationEssentials
import KioskCore

/// `GET /settings` and `PATCH /settings`: the effective config, each value with where it comes
/// from (docs/web.md, docs/control.md).
public struct SettingsAnswer: Codable, Sendable, Equatable {
    public struct Value: Codable, Sendable, Equatable {
        /// The config's dotted key (`scene.score.counter[0].label`).
        public var key: String
        /// As TOML writes it (`"LIONS"`, `3`).
        public var toml: String
        /// The value, for keys the settings layer can hold (nil for others).
        public var value: SettingValue?
        /// `/etc/kioskd/kioskd.toml:12`, `default`, or `set from the phone by DEVICE at TIME`.
        public var source: String
        /// The value comes from the settings layer (`kioskctl config reset KEY` drops it).
        public var layer: Bool
        /// The key may be set (`PATCH /settings`).
        public var settable: Bool
        public init(key: String, toml: String, value: SettingValue?, source: String, layer: Bool, settable: Bool) {
            self.key = key; self.toml = toml; self.value = value; self.source = source; self.layer = layer; self.settable = settable
        }
    }
    public var ok: Bool?
    /// The config file the layer lies over.
    public var file: String
    public var values: [Value]
    /// Patterns of the keys that can be set (`*` any name, `[]` any index).
    public var settable: [String]
    /// What the change did (the reload's message).
    public var message: String?
    /// The `[fleet]` group this kiosk is in: its name and this kiosk's role (`primary`: a change
    /// can be made for the whole fleet, `PATCH /settings/fleet`). Nil: no fleet.
    public var fleet: Fleet?
    public struct Fleet: Codable, Sendable, Equatable {
        public var group: String
        public var role: String
        public init(group: String, role: String) { self.group = group; self.role = role }
    }
    public init(ok: Bool? = nil, file: String, values: [Value], settable: [String], message: String? = nil, fleet: Fleet? = nil) {
        self.ok = ok; self.file = file; self.values = values; self.settable = settable; self.message = message; self.fleet = fleet
    }
}

extension SettingsChange {
    /// The body of `PATCH /settings`: a JSON object of dotted keys to values; `null` drops the
    /// key from the layer (back to the file's value).
    public var body: [UInt8] {
        var o: [String: JSONValue] = [:]
        for (k, v) in set { o[k] = v.json }
        for k in reset { o[k] = .null }
        return (try? JSONValue.object(o).bytes()) ?? []
    }

    /// Reads a `PATCH /settings` body (see `body`); the change is made by `source`.
    static func parse(_ bytes: [UInt8], source: SettingSource) throws -> SettingsChange {
        let any: JSONValue
        do { any = try JSONValue.parse(bytes) } catch {
            throw ControlRequestError(400, "request body is not valid JSON (RFC 8259): \(ControlRouter.excerpt(bytes)); expected an object of config keys to values, e.g. {\"scene.score.counter[0].label\": \"LIONS\"}")
        }
        guard case .object(let o) = any else {
            throw ControlRequestError(400, "request body must be a JSON object of config keys to values, e.g. {\"scene.score.counter[0].label\": \"LIONS\"}; got \(any.described)")
        }
        if o.isEmpty { throw ControlRequestError(400, "request body names no key; expected an object of config keys to values, e.g. {\"scene.score.counter[0].label\": \"LIONS\"}") }
        var change = SettingsChange(source: source)
        for k in o.keys.sorted() {
            let v = o[k]!
            if v == .null { change.reset.append(k); continue }
            guard let s = SettingValue(json: v) else {
                throw ControlRequestError(400, "key '\(k)': expected a string, a number, true or false, an array of strings, or null (back to the file's value); got \(v.described)", field: k)
            }
            change.set.append((k, s))
        }
        return change
    }
}

extension SettingValue {
    /// A value typed on a command line (`kioskctl config set KEY VALUE`): read as JSON — which
    /// for these values is also how TOML writes them: `3`, `1.5`, `true`, `"LIONS"`,
    /// `["score", "clock"]` — and otherwise taken as the text itself (`LIONS`).
    public static func argument(_ text: String) -> SettingValue {
        if let v = try? JSONValue.parse(text.utf8), let s = SettingValue(json: v) {
            // Spelt with a fraction or an exponent: a float, as TOML reads it (`1.0`).
            if case .int(let i) = s, text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { return .double(Double(i)) }
            return s
        }
        return .string(text)
    }
}
