import KioskCore

/// One value of the effective config: its dotted key (as config errors name it), the value as
/// TOML writes it, and where it comes from.
public struct EffectiveValue: Sendable, Equatable, CustomStringConvertible {
    public enum Source: Sendable, Equatable, CustomStringConvertible {
        /// Written in the config file, at this place.
        case file(SourceLocation)
        /// Not written: the value the reader used in its place.
        case `default`
        /// Set in the settings layer (`SettingsLayer`): who set it and when.
        case layer(SettingSource)

        public var description: String {
            switch self {
            case .file(let location): return "\(location)"
            case .default: return "default"
            case .layer(let source): return "\(source)"
            }
        }
    }

    public var key: String
    public var value: String
    public var source: Source

    public init(key: String, value: String, source: Source) {
        self.key = key
        self.value = value
        self.source = source
    }

    /// `display.rotation = 90  # /etc/kioskd/kioskd.toml:5`
    public var description: String { "\(key) = \(value)  # \(source)" }
}

/// The effective config with provenance: every value written in the file with its file:line,
/// and every value the reader took as a default because the file does not set it.
///
/// Read it from the tree after the config was checked (`DaemonConfig.tree`) and after the scenes
/// were made from it, since scene factories read their own keys; a default is listed only for a
/// key some reader asked for (a table the file leaves out lists no defaults). Values are shown as
/// written, before paths are resolved against the config file's folder.
public enum EffectiveConfig {
    /// The values of `root` and its tables, each table's written keys in file order followed by
    /// the defaults read from it.
    public static func values(of root: ConfigTable) -> [EffectiveValue] {
        var out: [EffectiveValue] = []
        add(root, to: &out)
        return out
    }

    /// The values of `root` (a tree the settings layer `layer` was laid over), those the layer
    /// set named as its (who set them, when).
    public static func values(of root: ConfigTable, layer: SettingsLayer) -> [EffectiveValue] {
        values(of: root).map { v in
            guard let e = layer.entry(SettingsKeys.canonical(v.key)) else { return v }
            return EffectiveValue(key: v.key, value: v.value, source: .layer(e.source))
        }
    }

    private static func add(_ table: ConfigTable, to out: inout [EffectiveValue]) {
        for key in table.keys {
            guard let node = table.entries[key] else { continue }
            add(node, key: table.fullKey(key), to: &out)
        }
        for (key, value) in table.defaults where table.entries[key] == nil {
            out.append(EffectiveValue(key: table.fullKey(key), value: toml(value), source: .default))
        }
    }

    private static func add(_ node: ConfigNode, key: String, to out: inout [EffectiveValue]) {
        switch node.value {
        case .table(let t):
            add(t, to: &out)
        case .array(let elements) where elements.contains(where: { if case .table = $0.value { return true } else { return false } }):
            for (i, e) in elements.enumerated() { add(e, key: "\(key)[\(i)]", to: &out) }
        default:
            out.append(EffectiveValue(key: key, value: toml(node.value), source: .file(node.location)))
        }
    }

    /// A value as TOML writes it (strings quoted and escaped, arrays inline).
    public static func toml(_ v: ConfigValue) -> String {
        switch v {
        case .string(let s): return "\"" + escaped(s) + "\""
        case .int(let i): return "\(i)"
        case .double(let d): return "\(d)"
        case .bool(let b): return b ? "true" : "false"
        case .array(let a): return "[" + a.map { toml($0.value) }.joined(separator: ", ") + "]"
        case .table(let t): return "{ " + t.keys.compactMap { k in t.entries[k].map { "\(k) = \(toml($0.value))" } }.joined(separator: ", ") + " }"
        }
    }

    /// `s` in a TOML basic string's escapes: `\\` and `\"`, then control characters as
    /// `ConfigTable.printable` writes them in messages.
    private static func escaped(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            if u == "\\" || u == "\"" { out += "\\" }
            out.unicodeScalars.append(u)
        }
        return ConfigTable.printable(out)
    }
}
