import FoundationEssentials
import KioskCore

// The request bodies decoded (`ControlRouter.decode`): each body type's `init(from:)` checks its
// fields through `BodyFields`, whose refusals are the control interface's error texts.

/// The fields of a body that must be a JSON object, and the checks of each kind of field.
struct BodyFields {
    let values: [String: JSONValue]

    init(from decoder: any Decoder) throws {
        let body = try JSONValue(from: decoder)
        guard case .object(let o) = body else {
            throw ControlRequestError(400, "request body must be a JSON object, got \(body.described)")
        }
        values = o
    }

    /// How an error text describes the field's value ("a string (\"x\")", "a number (3)").
    func described(_ field: String) -> String { (values[field] ?? .null).described }

    func isPresent(_ field: String) -> Bool { values[field] != nil }

    /// Present and not null.
    func isSet(_ field: String) -> Bool {
        if case .some(.null) = values[field] { return false }
        return values[field] != nil
    }

    /// A string that must be there and must not be empty.
    func requiredString(_ field: String) throws -> String {
        guard let v = values[field] else { throw ControlRequestError(400, "missing field '\(field)' (a string)", field: field) }
        guard case .string(let s) = v else {
            throw ControlRequestError(400, "field '\(field)' must be a string, got \(described(field))", field: field)
        }
        guard !s.isEmpty else { throw ControlRequestError(400, "field '\(field)' must not be empty", field: field) }
        return s
    }

    /// A painting's file name (validated by `PaintingFileName.validate`), or nil when absent or null.
    func optionalFileName(_ field: String) throws -> String? {
        guard isSet(field) else { return nil }
        guard case .string(let s) = values[field] else {
            throw ControlRequestError(400, "field '\(field)' must be a string (a file name such as drawing-1.png), got \(described(field))", field: field)
        }
        do { try PaintingFileName.validate(s) } catch let e as KioskError {
            throw ControlRequestError(400, "field '\(field)': \(e.message)", field: field)
        }
        return s
    }

    /// An integer (a JSON number without a fraction, below 10^15 in size); `missing` names it when absent.
    func integer(_ field: String, missing: String) throws -> Int {
        guard let v = values[field] else { throw ControlRequestError(400, "missing field '\(field)' (\(missing))", field: field) }
        let d: Double
        switch v {
        case .integer(let i):
            guard i.magnitude < 1_000_000_000_000_000 else { throw ControlRequestError(400, "field '\(field)' must be an integer, got \(i)", field: field) }
            return Int(i)
        case .double(let x): d = x
        default: throw ControlRequestError(400, "field '\(field)' must be an integer, got \(described(field))", field: field)
        }
        guard d.isFinite, d == d.rounded(), abs(d) < 1e15 else {
            throw ControlRequestError(400, "field '\(field)' must be an integer, got \(d)", field: field)
        }
        return Int(d)  // -0
    }

    /// true or false; nil when absent.
    func bool(_ field: String) throws -> Bool? {
        guard let v = values[field] else { return nil }
        guard case .bool(let b) = v else {
            throw ControlRequestError(400, "field '\(field)' must be true or false, got \(described(field))", field: field)
        }
        return b
    }

    /// The optional `output` field: an output's name (nil when absent or null).
    func optionalOutput() throws -> String? {
        guard isSet("output") else { return nil }
        guard case .string(let s) = values["output"] else {
            throw ControlRequestError(400, "field 'output' must be a string, got \(described("output"))", field: "output")
        }
        guard !s.isEmpty else { throw ControlRequestError(400, "field 'output' must name an output, got an empty string", field: "output") }
        return s
    }

    /// A refusal for a field that is not accepted.
    func refuse(_ field: String, _ why: String) throws {
        if isPresent(field) { throw ControlRequestError(400, "field '\(field)' is not accepted: \(why)", field: field) }
    }
}

/// A body that may be any JSON object (its fields are not read).
struct AnyObjectBody: Decodable {
    init(from decoder: any Decoder) throws { _ = try BodyFields(from: decoder) }
}

/// `POST /screenshot`: any object without 'path'; the output captured (nil: the first).
struct ScreenshotBody: Decodable {
    var output: String?
    init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        try f.refuse("path", "kioskd writes no screenshot file; the answer is the PNG and the client writes it (kioskctl screenshot FILE.png)")
        output = try f.optionalOutput()
    }
}

extension SceneRequest {
    public init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        name = try f.requiredString("name")
        output = try f.optionalOutput()
    }
}

extension NameRequest {
    public init(from decoder: any Decoder) throws {
        name = try BodyFields(from: decoder).requiredString("name")
    }
}

extension CounterSetRequest {
    public init(from decoder: any Decoder) throws {
        value = try BodyFields(from: decoder).integer("value", missing: "an integer")
    }
}

extension PaintSaveRequest {
    public init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        try f.refuse("path", "paintings are saved in kioskd's paintings folder; give a file name with 'name' (or none)")
        name = try f.optionalFileName("name")
    }
}

extension ClockModeRequest {
    public init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        scene = f.isSet("scene") ? try f.requiredString("scene") : nil
        mode = try f.requiredString("mode")
    }
}

extension BlankRequest {
    public init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        guard let on = try f.bool("on") else { throw ControlRequestError(400, "missing field 'on' (true or false)", field: "on") }
        self.on = on
        output = try f.optionalOutput()
    }
}

extension BrightnessRequest {
    public init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        guard f.isPresent("percent") else { throw ControlRequestError(400, "missing field 'percent' (a number 0…100)", field: "percent") }
        guard let p = f.values["percent"]?.numberValue, p.isFinite, (0...100).contains(p) else {
            throw ControlRequestError(400, "field 'percent' must be a number 0…100, got \(f.described("percent"))", field: "percent")
        }
        percent = p == 0 ? 0 : p // -0 is 0 %
    }
}

extension PairRequest {
    public init(from decoder: any Decoder) throws {
        let f = try BodyFields(from: decoder)
        role = "operator"
        if f.isPresent("role") {
            guard case .string(let s) = f.values["role"], ["owner", "operator", "viewer"].contains(s) else {
                throw ControlRequestError(400, "field 'role' must be \"owner\", \"operator\" or \"viewer\", got \(f.described("role"))", field: "role")
            }
            role = s
        }
        show = try f.bool("show") ?? true
    }
}

extension ControlRouter {
    /// The body decoded as `T`; an empty (or blank) body is `{}` when `allowEmpty`. The refusals
    /// for a missing body, invalid JSON and a non-object are the same for every route.
    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], allowEmpty: Bool = false) throws -> T {
        var bytes = body
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            guard allowEmpty else { throw ControlRequestError(400, "missing request body: expected a JSON object") }
            bytes = Array("{}".utf8)
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let e as ControlRequestError {
            throw e
        } catch {
            if (try? JSONValue.parse(bytes)) != nil {
                throw ControlRequestError(400, "request body is JSON but not of the fields expected: \(error)")
            }
            throw ControlRequestError(400, "request body is not valid JSON (RFC 8259): \(excerpt(bytes))")
        }
    }

    /// The start of a body for an error text: at most 40 characters, control characters and
    /// invalid UTF-8 shown as `?`, `…` when cut.
    static func excerpt(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        var out = String(String.UnicodeScalarView(text.unicodeScalars.prefix(40).map {
            $0.value < 0x20 || $0.value == 0x7F || $0 == "\u{FFFD}" ? "?" : $0
        }))
        if text.unicodeScalars.count > 40 { out += "…" }
        return out
    }
}
