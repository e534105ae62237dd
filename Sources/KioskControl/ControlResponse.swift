import FoundationEssentials
import KioskCore

/// An answer: HTTP status, content type and body. Independent of the transport: the Unix-socket
/// server writes it as HTTP/1.1, and so would any other listener.
public struct ControlResponse: Sendable, Equatable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int, contentType: String = "application/json", body: [UInt8]) {
        self.status = status; self.contentType = contentType; self.body = body
    }

    /// A JSON answer (one of the answer types), followed by a newline.
    public static func json<T: Encodable>(_ status: Int, _ answer: T) -> ControlResponse {
        do {
            return ControlResponse(status: status, body: try ControlJSON.encode(answer) + [0x0A])
        } catch {
            // The answer types hold strings, numbers and booleans only; a non-finite number is
            // the one thing that cannot be written.
            return ControlResponse(status: 500, body: Array(#"{"error":"kioskd could not write its answer as JSON"}"#.utf8) + [0x0A])
        }
    }

    /// `{"error": message}` (plus `"field"` when one field is at fault).
    public static func error(_ status: Int, _ message: String, field: String? = nil) -> ControlResponse {
        json(status, ErrorAnswer(error: message, field: field))
    }

    /// The error for a `KioskError`: not found → 404, out of range → 422, config → 422, control → 400, others → 500.
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

    /// The body decoded as one of the answer types.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T { try ControlJSON.decode(type, from: body) }

    /// The error message of an error answer, when the body is one.
    public var errorMessage: String? { (try? decode(ErrorAnswer.self))?.error }

    /// The body as a JSON value, when it is JSON (for showing or checking any answer without
    /// its type).
    public var jsonValue: JSONValue? { try? JSONValue.parse(body) }

    /// The body as a generic JSON object of Swift values (`JSONValue.anyValue`), when it is one.
    public var jsonObject: [String: Any]? {
        guard let v = jsonValue, case .object = v else { return nil }
        return v.anyValue as? [String: Any]
    }
}
