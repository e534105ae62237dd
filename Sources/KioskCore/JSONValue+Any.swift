import FoundationEssentials

extension JSONValue {
    /// What a value built as Swift values (`[String: Any]` of strings, numbers, booleans, arrays
    /// and dictionaries; nil or `JSONValue.null` for null) is as JSON. Nil for anything else
    /// (names no type: the builders are kioskd's own).
    public init?(any v: Any) {
        switch v {
        case let j as JSONValue: self = j
        case let b as Bool: self = .bool(b)
        case let s as String: self = .string(s)
        case let s as Substring: self = .string(String(s))
        case let i as Int: self = .integer(Int64(i))
        case let i as Int64: self = .integer(i)
        case let i as Int32: self = .integer(Int64(i))
        case let i as Int16: self = .integer(Int64(i))
        case let i as Int8: self = .integer(Int64(i))
        case let i as UInt32: self = .integer(Int64(i))
        case let i as UInt16: self = .integer(Int64(i))
        case let i as UInt8: self = .integer(Int64(i))
        case let i as UInt: self = i <= UInt(Int64.max) ? .integer(Int64(i)) : .double(Double(i))
        case let i as UInt64: self = i <= UInt64(Int64.max) ? .integer(Int64(i)) : .double(Double(i))
        case let d as Double: self = .double(d)
        case let f as Float: self = .double(Double(f))
        case let a as [Any]:
            var out: [JSONValue] = []
            out.reserveCapacity(a.count)
            for e in a { guard let j = JSONValue(any: e) else { return nil }; out.append(j) }
            self = .array(out)
        case let o as [String: Any]:
            var out: [String: JSONValue] = [:]
            for (k, e) in o { guard let j = JSONValue(any: e) else { return nil }; out[k] = j }
            self = .object(out)
        case let o as any OptionalValue:
            guard let inner = o.wrapped else { self = .null; return }
            guard let j = JSONValue(any: inner) else { return nil }
            self = j
        default: return nil
        }
    }

    /// The value as Swift values, the inverse of `init(any:)`: `String`, `Bool`, `Int` (an
    /// integer beyond `Int` stays `Int64`), `Double`, `[Any]`, `[String: Any]`; null is
    /// `JSONValue.null`.
    public var anyValue: Any {
        switch self {
        case .null: return JSONValue.null
        case .bool(let b): return b
        case .integer(let i): return Int(exactly: i).map { $0 as Any } ?? i
        case .double(let d): return d
        case .string(let s): return s
        case .array(let a): return a.map(\.anyValue)
        case .object(let o): return o.mapValues(\.anyValue)
        }
    }
}

/// An `Optional` of any type, seen through `Any`.
private protocol OptionalValue { var wrapped: Any? { get } }
extension Optional: OptionalValue { fileprivate var wrapped: Any? { map { $0 as Any } } }
