import FoundationEssentials
import KioskCore

/// Settings kept beside the config file, not in it (docs/config.md): values set from the phone
/// page or `kioskctl config set`, kept in the state directory (under `SettingsLayer.stateKey`,
/// through the command pipeline) and laid over the file's values each time the config is read.
/// The file under /etc is never written. A key the layer sets wins over the file; a key it does
/// not set is the file's, so an edit of the file shows at the next reload for every key the
/// layer leaves alone.
///
/// Kept as a JSON document with a format version: `{"format": "kioskd-settings", "version": 1,
/// "entries": [{"key", "value", "source"}]}`. A document of a later version is not applied and
/// not overwritten (`Decoded.newer`).
public struct SettingsLayer: Sendable, Equatable {
    public struct Entry: Sendable, Equatable, Codable {
        /// The config's dotted key, as its errors name it (`scene.score.counter[0].label`).
        public var key: String
        public var value: SettingValue
        public var source: SettingSource
        public init(key: String, value: SettingValue, source: SettingSource) { self.key = key; self.value = value; self.source = source }
    }

    /// The state key the layer is kept under.
    public static let stateKey = "settings.layer"
    public static let format = "kioskd-settings"
    /// The layer's format version; a later one is left alone by this version.
    public static let version = 1
    /// Most values in the layer.
    public static let maxEntries = 256

    /// In the order first set.
    public private(set) var entries: [Entry] = []

    public init(entries: [Entry] = []) { self.entries = entries }

    public var isEmpty: Bool { entries.isEmpty }
    public func entry(_ key: String) -> Entry? { entries.first { $0.key == key } }

    /// The layer with `change` made: its keys set (replacing a value the layer had), its resets dropped.
    public func applying(_ change: SettingsChange) -> SettingsLayer {
        var out = self
        out.entries.removeAll { e in change.reset.contains(e.key) }
        for (key, value) in change.set {
            let e = Entry(key: SettingsKeys.canonical(key), value: value, source: change.source)
            if let i = out.entries.firstIndex(where: { $0.key == e.key }) { out.entries[i] = e } else { out.entries.append(e) }
        }
        return out
    }

    // MARK: kept form

    private struct Document: Codable {
        var format: String
        var version: Int
        var entries: [Entry]?
    }

    /// What was kept, read back.
    public enum Decoded: Equatable {
        case layer(SettingsLayer)
        /// Written by a later version (its number): left alone.
        case newer(Int)
        /// Not a settings document (why).
        case damaged(String)
    }

    /// The kept text.
    public func encoded() -> String {
        let enc = JSONEncoder()
        enc.outputFormatting = [.sortedKeys]
        let data = (try? enc.encode(Document(format: Self.format, version: Self.version, entries: entries))) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// Reads kept `text` (nil: nothing kept, an empty layer).
    public static func decode(_ text: String?) -> Decoded {
        guard let text else { return .layer(SettingsLayer()) }
        let doc: Document
        do { doc = try JSONDecoder().decode(Document.self, from: Data(text.utf8)) } catch {
            return .damaged("not a settings document (\(error))")
        }
        guard doc.format == format else { return .damaged("format \"\(doc.format)\", expected \"\(format)\"") }
        guard doc.version <= version else { return .newer(doc.version) }
        guard doc.version >= 1 else { return .damaged("version \(doc.version)") }
        return .layer(SettingsLayer(entries: doc.entries ?? []))
    }

    // MARK: laying it over the file

    /// Where a layer value is said to come from in config errors and `EffectiveConfig`.
    public static func location(_ e: Entry) -> SourceLocation {
        SourceLocation(file: "settings '\(e.key)' (\(e.source))", line: 0)
    }

    /// Sets each value of the layer in the file's tree `root` (tables the file does not have are
    /// made; an array element must exist in the file). Errors name the key.
    public func apply(to root: ConfigTable) throws {
        for e in entries { try Self.set(e, in: root) }
    }

    static func set(_ e: Entry, in root: ConfigTable) throws {
        let loc = location(e)
        // The file's limits on strings hold for the layer's too (ConfigFile).
        let strings: [String]
        switch e.value {
        case .string(let s): strings = [s]
        case .strings(let a): strings = a
        default: strings = []
        }
        if strings.count > 1000 { throw KioskError.config("\(loc): key '\(e.key)': \(strings.count) strings is too many; at most 1000") }
        for s in strings {
            if s.utf8.contains(0) { throw KioskError.config("\(loc): key '\(e.key)': contains a NUL character (\\u0000); config strings cannot hold NUL") }
            if s.utf8.count > ConfigFile.maxStringBytes {
                throw KioskError.config("\(loc): key '\(e.key)': a string of \(s.utf8.count) bytes is too long; config strings have at most \(ConfigFile.maxStringBytes) bytes")
            }
        }
        let path = try SettingsKeys.parse(e.key)
        var table = root
        for (i, seg) in path.dropLast().enumerated() {
            let soFar = SettingsKeys.join(Array(path[...i]))
            if let index = seg.index {
                guard let node = table.entries[seg.name], case .array(let elements) = node.value else {
                    throw KioskError.config("\(loc): key '\(e.key)': the config file has no array of tables \(table.fullKey(seg.name)) (a value can be set only for an element the file has)")
                }
                guard index < elements.count, case .table(let t) = elements[index].value else {
                    throw KioskError.config("\(loc): key '\(e.key)': the config file has \(elements.count) element(s) in \(table.fullKey(seg.name)), no \(soFar)")
                }
                table = t
            } else if let node = table.entries[seg.name] {
                guard case .table(let t) = node.value else {
                    throw KioskError.config("\(loc): key '\(e.key)': \(soFar) is \(node.value.typeName) in the config file, not a table")
                }
                table = t
            } else {
                let t = ConfigTable(path: table.fullKey(seg.name), location: loc)
                table.set(seg.name, ConfigNode(.table(t), at: loc))
                table = t
            }
        }
        guard let last = path.last, last.index == nil else {
            throw KioskError.config("\(loc): key '\(e.key)': expected a key naming a value, not an array element")
        }
        table.set(last.name, e.value.node(at: loc))
    }
}
