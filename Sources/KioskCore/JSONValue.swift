import FoundationEssentials

/// One JSON value (RFC 8259): what a request body, an MQTT payload or a generic answer holds when
/// no `Codable` type describes it. Read with FoundationEssentials' `JSONDecoder` (`parse`) and
/// written with its `JSONEncoder` (`bytes`), so kioskd needs no `JSONSerialization` (full
/// Foundation).
///
/// Numbers: one whose value is whole and within `Int64` is `.integer`, read exactly (not through a
/// `Double`: 9007199254740993 stays itself); any other is `.double`, as are whole numbers beyond
/// `Int64` and -0 (its sign kept). `JSONDecoder` does not say how a number was spelt, so `1`,
/// `1.0` and `1e3` are all integers (1, 1 and 1000).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

/// Why bytes are not one JSON value (`JSONValue.parse`).
public struct JSONParseError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension JSONValue {
    /// Deepest nesting of arrays and objects `JSONDecoder` reads (deeper input is refused as not
    /// valid JSON, before any value is built).
    public static let maxDepth = 512

    /// `bytes` as one JSON value (any value at the top, not only an object or array).
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch DecodingError.dataCorrupted(let c) {
            throw JSONParseError(c.underlyingError.map { "\($0)" } ?? Self.corruptText(c.debugDescription))
        } catch {
            throw JSONParseError("\(error)")
        }
    }

    private static func corruptText(_ debug: String) -> String {
        debug == "The given data was not valid JSON." ? "not valid JSON (RFC 8259)" : debug
    }

    /// The value written as JSON: keys sorted (by their UTF-8 bytes, as `JSONEncoder` sorts),
    /// `/` not escaped, compact (`pretty`: indented by two spaces). Throws for a non-finite number.
    public func bytes(pretty: Bool = false) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = pretty ? [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted] : [.sortedKeys, .withoutEscapingSlashes]
        return [UInt8](try e.encode(self))
    }

    /// The value's member `key` when it is an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let o) = self else { return nil }
        return o[key]
    }

    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var integerValue: Int64? { if case .integer(let i) = self { return i }; return nil }
    public var objectValue: [String: JSONValue]? { if case .object(let o) = self { return o }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var isNull: Bool { self == .null }

    /// The value of a number (integer or not); nil for any other value.
    public var numberValue: Double? {
        switch self {
        case .integer(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The value's JSON type and, for a scalar, the value, for error texts: `null`,
    /// `a boolean (true)`, `a number (3)`, `a string ("x")`, `an array`, `an object`.
    public var described: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return "a boolean (\(b))"
        case .integer(let i): return "a number (\(i))"
        case .double(let d): return "a number (\(d))"
        case .string(let s): return "a string (\"\(s)\")"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}

extension JSONValue: Decodable {
    public init(from decoder: any Decoder) throws {
        // JSONDecoder cannot say a value's type: each kind is asked for in turn, the commonest
        // first (each wrong guess costs a thrown type mismatch); any other error (a bad member,
        // a number that does not parse) is the answer.
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let s = try Self.attempt({ try c.decode(String.self) }) { self = .string(s); return }
        if let o = try Self.attempt({ try decoder.container(keyedBy: AnyKey.self) }) {
            var members: [String: JSONValue] = [:]
            members.reserveCapacity(o.allKeys.count)
            for k in o.allKeys { members[k.stringValue] = try o.decode(JSONValue.self, forKey: k) }
            self = .object(members)
            return
        }
        if let d = try Self.attempt({ try c.decode(Double.self) }) {
            // Whole and not -0: read again as an integer, exactly (it fails beyond Int64).
            if d == d.rounded(.towardZero), !(d == 0 && d.sign == .minus), let i = try? c.decode(Int64.self) {
                self = .integer(i)
            } else {
                self = .double(d)
            }
            return
        }
        if let b = try Self.attempt({ try c.decode(Bool.self) }) { self = .bool(b); return }
        var a = try decoder.unkeyedContainer()
        var elements: [JSONValue] = []
        while !a.isAtEnd { elements.append(try a.decode(JSONValue.self)) }
        self = .array(elements)
    }

    /// `body`'s result, or nil when the value is of another JSON type.
    private static func attempt<T>(_ body: () throws -> T) throws -> T? {
        do { return try body() } catch DecodingError.typeMismatch { return nil }
    }
}

extension JSONValue: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .integer(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        // A dictionary, not a keyed container: its keys are written as they are, also under
        // an encoder's key strategy (`.convertToSnakeCase`).
        case .object(let o): try c.encode(o)
        }
    }
}

/// Any member name of a JSON object.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
