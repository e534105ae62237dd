import Foundation
import KioskCore
import KioskScenes

/// A request to the daemon, checked: every field present and of the right type.
public enum ControlCommand: Sendable, Equatable {
    case status
    case outputs
    case scene(name: String)
    case theme(name: String)
    case counter(name: String, op: CounterOp, value: Int?)
    /// `name`: with save, the painting's file name in the paintings folder (nil: kioskd picks one).
    case paint(op: PaintOp, name: String?)
    /// Answers what the screen shows as PNG bytes; the client writes the file.
    case screenshot
    case blank(on: Bool)
    case reload

    public enum CounterOp: String, Sendable, Equatable, CaseIterable { case get, set, inc, dec, reset }
    public enum PaintOp: String, Sendable, Equatable, CaseIterable { case clear, undo, redo, save }
}

/// An answer: HTTP status, content type and body.
public struct ControlResponse: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int, contentType: String = "application/json", body: [UInt8]) {
        self.status = status; self.contentType = contentType; self.body = body
    }

    /// A JSON answer (`object` must be JSONSerialization-compatible).
    public static func json(_ status: Int, _ object: [String: Any]) -> ControlResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return ControlResponse(status: status, body: [UInt8](data) + [0x0A])
    }

    /// `{"error": message}` (plus `"field"` when one field is at fault).
    public static func error(_ status: Int, _ message: String, field: String? = nil) -> ControlResponse {
        var o: [String: Any] = ["error": message]
        if let field { o["field"] = field }
        return json(status, o)
    }

    public static func ok(_ extra: [String: Any] = [:]) -> ControlResponse {
        var o = extra
        o["ok"] = true
        return json(200, o)
    }

    /// The error for a `KioskError`: not found → 404, out of range → 422, config → 422, others → 500.
    public static func from(_ error: Error, field: String? = nil) -> ControlResponse {
        guard let k = error as? KioskError else { return .error(500, "\(error)", field: field) }
        switch k.kind {
        case .notFound: return .error(404, k.message, field: field)
        case .outOfRange: return .error(422, k.message, field: field)
        case .config: return .error(422, k.message, field: field)
        case .control: return .error(400, k.message, field: field)
        default: return .error(500, k.message, field: field)
        }
    }

    /// The body as a JSON object, when it is one.
    public var jsonObject: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

/// A request that cannot become a command: the status to answer and why.
public struct ControlRequestError: Error, Equatable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public var field: String?
    public init(_ status: Int, _ message: String, field: String? = nil) {
        self.status = status; self.message = message; self.field = field
    }
    public var description: String { message }
    public var response: ControlResponse { .error(status, message, field: field) }
}

/// Turns an HTTP method, path and body into a `ControlCommand` (pure; see docs/control.md).
public enum ControlRouter {
    /// Largest accepted request body.
    public static let maxBodyBytes = 64 * 1024

    /// Every route, for 404 answers and documentation.
    public static let routes = [
        "GET /status", "GET /outputs", "POST /scene", "POST /theme", "GET /counter/{name}", "POST /counter/{name}/{set|inc|dec|reset}",
        "POST /paint/{clear|undo|redo|save}", "POST /screenshot", "POST /blank", "POST /reload",
    ]

    public static func parse(method: String, uri: String, body: [UInt8]) throws -> ControlCommand {
        let pathPart = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        let parts = pathPart.split(separator: "/").map { $0.removingPercentEncoding ?? String($0) }
        guard let first = parts.first else { throw notFound(uri) }
        let get = ["GET", "HEAD"].contains(method)

        func requireMethod(_ m: String) throws {
            guard (m == "GET" && get) || method == m else {
                throw ControlRequestError(405, "method \(method) not allowed on /\(parts.joined(separator: "/")); use \(m)")
            }
        }
        func exact(_ n: Int) throws { guard parts.count == n else { throw notFound(uri) } }

        switch first {
        case "status":
            try exact(1); try requireMethod("GET"); return .status
        case "outputs":
            try exact(1); try requireMethod("GET"); return .outputs
        case "scene":
            try exact(1); try requireMethod("POST")
            return .scene(name: try requiredString(try object(body), "name"))
        case "theme":
            try exact(1); try requireMethod("POST")
            return .theme(name: try requiredString(try object(body), "name"))
        case "counter":
            if parts.count == 2 {
                try requireMethod("GET")
                return .counter(name: parts[1], op: .get, value: nil)
            }
            guard parts.count == 3 else {
                throw ControlRequestError(404, "expected /counter/{name}/{set|inc|dec|reset}, got \(pathPart)")
            }
            try requireMethod("POST")
            guard let op = ControlCommand.CounterOp(rawValue: parts[2]), op != .get else {
                throw ControlRequestError(404, "unknown counter operation '\(parts[2])'; operations: set, inc, dec, reset")
            }
            let name = parts[1]
            guard !name.isEmpty else { throw ControlRequestError(400, "empty counter name", field: "name") }
            if op == .set {
                let o = try object(body)
                guard let v = o["value"] else { throw ControlRequestError(400, "missing field 'value' (an integer)", field: "value") }
                return .counter(name: name, op: op, value: try integer(v, "value"))
            }
            _ = try object(body, allowEmpty: true)
            return .counter(name: name, op: op, value: nil)
        case "paint":
            try exact(2); try requireMethod("POST")
            guard let op = ControlCommand.PaintOp(rawValue: parts[1]) else {
                throw ControlRequestError(404, "unknown paint operation '\(parts[1])'; operations: clear, undo, redo, save")
            }
            let o = try object(body, allowEmpty: true)
            var name: String?
            if op == .save {
                if o["path"] != nil {
                    throw ControlRequestError(400, "field 'path' is not accepted: paintings are saved in kioskd's paintings folder; give a file name with 'name' (or none)", field: "path")
                }
                name = try optionalFileName(o, "name")
            }
            return .paint(op: op, name: name)
        case "screenshot":
            try exact(1); try requireMethod("POST")
            let o = try object(body, allowEmpty: true)
            if o["path"] != nil {
                throw ControlRequestError(400, "field 'path' is not accepted: kioskd writes no screenshot file; the answer is the PNG and the client writes it (kioskctl screenshot FILE.png)", field: "path")
            }
            return .screenshot
        case "blank":
            try exact(1); try requireMethod("POST")
            let o = try object(body)
            guard let v = o["on"] else { throw ControlRequestError(400, "missing field 'on' (true or false)", field: "on") }
            guard let b = v as? Bool, CFGetTypeIsBool(v) else {
                throw ControlRequestError(400, "field 'on' must be true or false, got \(describe(v))", field: "on")
            }
            return .blank(on: b)
        case "reload":
            try exact(1); try requireMethod("POST")
            _ = try object(body, allowEmpty: true)
            return .reload
        default:
            throw notFound(uri)
        }
    }

    static func notFound(_ uri: String) -> ControlRequestError {
        ControlRequestError(404, "no route \(uri); routes: \(routes.joined(separator: ", "))")
    }

    /// The body as a JSON object; an empty body is `{}` when `allowEmpty`.
    static func object(_ body: [UInt8], allowEmpty: Bool = false) throws -> [String: Any] {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            if allowEmpty { return [:] }
            throw ControlRequestError(400, "missing request body: expected a JSON object")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            throw ControlRequestError(400, "request body is not valid JSON: \(jsonErrorText(error))")
        }
        guard let o = parsed as? [String: Any] else {
            throw ControlRequestError(400, "request body must be a JSON object, got \(describe(parsed))")
        }
        return o
    }

    static func jsonErrorText(_ error: Error) -> String {
        let ns = error as NSError
        return (ns.userInfo[NSDebugDescriptionErrorKey] as? String) ?? ns.localizedDescription
    }

    static func requiredString(_ o: [String: Any], _ field: String) throws -> String {
        guard let v = o[field] else { throw ControlRequestError(400, "missing field '\(field)' (a string)", field: field) }
        guard let s = v as? String else {
            throw ControlRequestError(400, "field '\(field)' must be a string, got \(describe(v))", field: field)
        }
        guard !s.isEmpty else { throw ControlRequestError(400, "field '\(field)' must not be empty", field: field) }
        return s
    }

    /// A painting's file name (validated like `PaintScene.validateFileName`), or nil.
    static func optionalFileName(_ o: [String: Any], _ field: String) throws -> String? {
        guard let v = o[field], !(v is NSNull) else { return nil }
        guard let s = v as? String else {
            throw ControlRequestError(400, "field '\(field)' must be a string (a file name such as drawing-1.png), got \(describe(v))", field: field)
        }
        do { try PaintScene.validateFileName(s) } catch let e as KioskError {
            throw ControlRequestError(400, "field '\(field)': \(e.message)", field: field)
        }
        return s
    }

    static func integer(_ v: Any, _ field: String) throws -> Int {
        if let n = v as? NSNumber, !CFGetTypeIsBool(v) {
            let d = n.doubleValue
            guard d.isFinite, d == d.rounded(), abs(d) < 1e15 else {
                throw ControlRequestError(400, "field '\(field)' must be an integer, got \(n)", field: field)
            }
            return Int(d)
        }
        throw ControlRequestError(400, "field '\(field)' must be an integer, got \(describe(v))", field: field)
    }

    /// JSON type name and value for error messages.
    static func describe(_ v: Any) -> String {
        if v is NSNull { return "null" }
        if CFGetTypeIsBool(v) { return "a boolean (\(v))" }
        if let s = v as? String { return "a string (\"\(s)\")" }
        if let n = v as? NSNumber { return "a number (\(n))" }
        if v is [Any] { return "an array" }
        if v is [String: Any] { return "an object" }
        return "\(type(of: v))"
    }
}

/// True when `v` came from a JSON `true`/`false` (Foundation bridges both to NSNumber).
func CFGetTypeIsBool(_ v: Any) -> Bool {
    guard let n = v as? NSNumber else { return false }
    #if canImport(Darwin)
    return CFGetTypeID(n) == CFBooleanGetTypeID()
    #else
    return String(cString: n.objCType) == "c" && (n == NSNumber(value: true) || n == NSNumber(value: false)) && type(of: v) != Int.self
    #endif
}
