/// Where a config value was written.
public struct SourceLocation: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public init(file: String, line: Int) { self.file = file; self.line = line }
    public var description: String { line > 0 ? "\(file):\(line)" : file }
}

/// A parsed config value with the place it came from.
public indirect enum ConfigValue {
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    case array([ConfigNode])
    case table(ConfigTable)

    public var typeName: String {
        switch self {
        case .string: return "a string"
        case .int: return "an integer"
        case .double: return "a number"
        case .bool: return "a boolean"
        case .array: return "an array"
        case .table: return "a table"
        }
    }
}

public struct ConfigNode {
    public var value: ConfigValue
    public var location: SourceLocation
    public init(_ value: ConfigValue, at location: SourceLocation) { self.value = value; self.location = location }
}

/// A table of a config file, with typed getters whose errors name file:line, the full key
/// and what was expected. It records which keys were read so `finish()` can report unknown ones
/// (so it is not `Sendable`: a config is read on the thread that loaded it).
public final class ConfigTable {
    /// Dotted path of this table ("" for the root, "scene.clock", "scene.score.counter[1]").
    public let path: String
    public let location: SourceLocation
    public private(set) var entries: [String: ConfigNode]
    /// Keys in the order they were written.
    public private(set) var order: [String]
    private var used: Set<String> = []
    /// Keys the file does not set that a getter was asked for with a default, in the order
    /// asked, with the default returned (the effective config lists them as defaults).
    public private(set) var defaults: [(key: String, value: ConfigValue)] = []

    public init(path: String, location: SourceLocation, entries: [(String, ConfigNode)] = []) {
        self.path = path
        self.location = location
        self.entries = [:]
        self.order = []
        for (k, v) in entries { set(k, v) }
    }

    public func set(_ key: String, _ node: ConfigNode) {
        if entries[key] == nil { order.append(key) }
        entries[key] = node
    }

    public var keys: [String] { order }
    public func has(_ key: String) -> Bool { entries[key] != nil }
    public func fullKey(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The error for `key`: "file:line: key 'scene.clock.color_mode': expected …, got …".
    public func error(_ key: String, _ message: String) -> KioskError {
        let loc = entries[key]?.location ?? location
        return .config("\(loc): key '\(ConfigTable.printable(fullKey(key)))': \(message)")
    }

    /// `s` with control characters written as escapes (`\t`, `\n`, `\u0000`), for messages.
    public static func printable(_ s: String) -> String {
        var out = ""
        for u in s.unicodeScalars {
            switch u {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if u.value < 0x20 || (0x7F...0x9F).contains(u.value) {
                    out += "\\u" + String(repeating: "0", count: 4 - String(u.value, radix: 16).count) + String(u.value, radix: 16, uppercase: true)
                } else {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out
    }

    /// A string value for a message: quoted, escaped, cut after 80 characters, with its length
    /// when it is longer than 64 (`"aaaa…" (200 characters)`).
    public static func quoted(_ s: String) -> String {
        let n = s.unicodeScalars.count
        var shown = String(String.UnicodeScalarView(s.unicodeScalars.prefix(80)))
        if n > 80 { shown += "…" }
        return "\"\(printable(shown))\"" + (n > 64 ? " (\(n) characters)" : "")
    }

    /// What a scene or counter name is, for error messages.
    public static let nameRule = "1…64 characters, no spaces, control characters or /"

    /// A scene or counter name: 1…64 characters, none of them white space, a control or format
    /// character, or `/`. Names are typed in commands and URL paths (`/counter/NAME/inc`); the
    /// state files they name are encoded so that any such name can be stored (`StateKey`).
    public static func isName(_ s: String) -> Bool {
        let scalars = s.unicodeScalars
        return !scalars.isEmpty && scalars.count <= 64 && scalars.allSatisfy { c in
            !c.properties.isWhitespace && c != "/" && c.value != 0xFFFD
                && ![.control, .format, .surrogate, .privateUse, .unassigned, .lineSeparator, .paragraphSeparator].contains(c.properties.generalCategory)
        }
    }

    /// A string of at most `maxCharacters` characters (labels and other text drawn on screen);
    /// `what` names it in the error ("a label").
    public func text(_ key: String, default d: String, maxCharacters: Int, what: String = "a label") throws -> String {
        let s = try string(key, default: d)
        let n = s.unicodeScalars.count
        if n > maxCharacters { throw error(key, "\(n) characters is too long; \(what) has at most \(maxCharacters) characters") }
        return s
    }

    /// Notes that `key` took its default `value` (once per key) and returns `d`.
    private func defaulted<T>(_ key: String, _ value: ConfigValue, _ d: T) -> T {
        if !defaults.contains(where: { $0.key == key }) { defaults.append((key, value)) }
        return d
    }

    public func node(_ key: String) -> ConfigNode? {
        used.insert(key)
        return entries[key]
    }

    private func describe(_ v: ConfigValue) -> String {
        switch v {
        case .string(let s): return ConfigTable.quoted(s)
        case .int(let i): return "\(i)"
        case .double(let d): return "\(d)"
        case .bool(let b): return "\(b)"
        case .array: return "an array"
        case .table: return "a table"
        }
    }

    private func typeError(_ key: String, expected: String, got v: ConfigValue) -> KioskError {
        error(key, "expected \(expected), got \(v.typeName) (\(describe(v)))")
    }

    public func string(_ key: String) throws -> String? {
        guard let n = node(key) else { return nil }
        guard case .string(let s) = n.value else { throw typeError(key, expected: "a string", got: n.value) }
        return s
    }
    public func string(_ key: String, default d: String) throws -> String { try string(key) ?? defaulted(key, .string(d), d) }
    public func requiredString(_ key: String) throws -> String {
        guard let s = try string(key) else { throw error(key, "missing (expected a string)") }
        return s
    }

    public func bool(_ key: String, default d: Bool) throws -> Bool {
        guard let n = node(key) else { return defaulted(key, .bool(d), d) }
        guard case .bool(let b) = n.value else { throw typeError(key, expected: "true or false", got: n.value) }
        return b
    }

    public func int(_ key: String, default d: Int, range: ClosedRange<Int>? = nil) throws -> Int {
        guard let n = node(key) else { return defaulted(key, .int(d), d) }
        guard case .int(let i) = n.value else { throw typeError(key, expected: "an integer", got: n.value) }
        if let r = range, !r.contains(i) {
            throw error(key, "\(i) is out of range, expected \(r.lowerBound)…\(r.upperBound)")
        }
        return i
    }

    public func double(_ key: String, default d: Double, range: ClosedRange<Double>? = nil) throws -> Double {
        guard let n = node(key) else { return defaulted(key, .double(d), d) }
        let v: Double
        switch n.value {
        case .int(let i): v = Double(i)
        case .double(let x): v = x
        default: throw typeError(key, expected: "a number", got: n.value)
        }
        guard v.isFinite else { throw error(key, "expected a finite number, got \(v)") }
        if let r = range, !r.contains(v) {
            throw error(key, "\(v) is out of range, expected \(r.lowerBound)…\(r.upperBound)")
        }
        return v
    }

    /// One of a fixed set of strings.
    public func choice<T: RawRepresentable & CaseIterable>(_ key: String, default d: T) throws -> T where T.RawValue == String {
        guard let s = try string(key) else { return defaulted(key, .string(d.rawValue), d) }
        guard let v = T(rawValue: s) else {
            throw error(key, "expected one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), got \(ConfigTable.quoted(s))")
        }
        return v
    }

    public func color(_ key: String) throws -> Color? {
        guard let s = try string(key) else { return nil }
        guard let c = Color(hex: s) else { throw error(key, "expected a colour like \"#RRGGBB\", got \(ConfigTable.quoted(s))") }
        return c
    }

    public func array(_ key: String) throws -> [ConfigNode]? {
        guard let n = node(key) else { return nil }
        guard case .array(let a) = n.value else { throw typeError(key, expected: "an array", got: n.value) }
        return a
    }

    public func stringArray(_ key: String) throws -> [String]? {
        guard let a = try array(key) else { return nil }
        return try a.enumerated().map { i, n in
            guard case .string(let s) = n.value else {
                throw KioskError.config("\(n.location): key '\(ConfigTable.printable(fullKey(key)))[\(i)]': expected a string, got \(n.value.typeName)")
            }
            return s
        }
    }

    public func doubleArray(_ key: String) throws -> [Double]? {
        guard let a = try array(key) else { return nil }
        return try a.enumerated().map { i, n in
            switch n.value {
            case .int(let v): return Double(v)
            case .double(let v) where v.isFinite: return v
            case .double(let v): throw KioskError.config("\(n.location): key '\(ConfigTable.printable(fullKey(key)))[\(i)]': expected a finite number, got \(v)")
            default: throw KioskError.config("\(n.location): key '\(ConfigTable.printable(fullKey(key)))[\(i)]': expected a number, got \(n.value.typeName)")
            }
        }
    }

    public func table(_ key: String) throws -> ConfigTable? {
        guard let n = node(key) else { return nil }
        guard case .table(let t) = n.value else { throw typeError(key, expected: "a table", got: n.value) }
        return t
    }

    /// An array of tables (`[[scene.x.counter]]`).
    public func tableArray(_ key: String) throws -> [ConfigTable]? {
        guard let a = try array(key) else { return nil }
        return try a.enumerated().map { i, n in
            guard case .table(let t) = n.value else {
                throw KioskError.config("\(n.location): key '\(ConfigTable.printable(fullKey(key)))[\(i)]': expected a table, got \(n.value.typeName)")
            }
            return t
        }
    }

    /// Keys present but never read.
    public var unknownKeys: [String] { order.filter { !used.contains($0) } }

    /// Throws for the first key that no getter read (a misspelt or unsupported key).
    public func finish() throws {
        if let k = unknownKeys.first {
            let known = used.sorted().joined(separator: ", ")
            throw error(k, "unknown key" + (known.isEmpty ? "" : " (known keys here: \(known))"))
        }
    }
}
