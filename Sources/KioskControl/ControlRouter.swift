import FoundationEssentials
import Glibc
import KioskCore

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

/// An HTTP request as a client sends it: method, path (percent-encoded) and body.
public struct ControlRequest: Sendable, Equatable {
    public var method: String
    public var path: String
    public var body: [UInt8]
    public init(method: String, path: String, body: [UInt8] = []) { self.method = method; self.path = path; self.body = body }
}

/// One route of the control interface: the first path segment that selects it, how it is
/// written (for 404 answers and documentation), and how a request on it becomes a command.
/// The table knows nothing of the transport: any HTTP listener hands it method, target and body.
public struct ControlRoute: Sendable {
    /// The first path segment ("counter").
    public let segment: String
    /// The route's forms, method and path ("GET /counter/{name}").
    public let forms: [String]
    let parse: @Sendable (RouteRequest) throws -> ControlCommand
}

/// A request being matched: its method, path segments (percent-decoded) and body.
struct RouteRequest {
    let method: String
    let uri: String
    let path: String
    let parts: [String]
    let body: [UInt8]

    func requireMethod(_ m: String) throws {
        let get = ["GET", "HEAD"].contains(method)
        guard (m == "GET" && get) || method == m else {
            throw ControlRequestError(405, "method \(method) not allowed on /\(parts.joined(separator: "/")); use \(m)")
        }
    }
    func exact(_ n: Int) throws { guard parts.count == n else { throw ControlRouter.notFound(uri) } }
}

/// Turns an HTTP method, path and body into a `ControlCommand` (pure; see docs/control.md), and a
/// command into its request (`ControlCommand.request`), from one table of routes.
public enum ControlRouter {
    /// Largest accepted request body.
    public static let maxBodyBytes = 64 * 1024

    /// Every route, in the order they are listed in 404 answers.
    public static let table: [ControlRoute] = [
        ControlRoute(segment: "status", forms: ["GET /status"]) { r in
            try r.exact(1); try r.requireMethod("GET"); return .status
        },
        ControlRoute(segment: "outputs", forms: ["GET /outputs"]) { r in
            try r.exact(1); try r.requireMethod("GET"); return .outputs
        },
        ControlRoute(segment: "scene", forms: ["POST /scene"]) { r in
            try r.exact(1); try r.requireMethod("POST")
            let b = try decode(SceneRequest.self, r.body)
            return .scene(name: b.name, output: b.output)
        },
        ControlRoute(segment: "theme", forms: ["POST /theme", "GET /theme"]) { r in
            try r.exact(1)
            if ["GET", "HEAD"].contains(r.method) { return .palette }
            try r.requireMethod("POST")
            return .theme(name: try decode(NameRequest.self, r.body).name)
        },
        ControlRoute(segment: "counter", forms: ["GET /counter/{name}", "POST /counter/{name}/{set|inc|dec|reset}"]) { r in
            let parts = r.parts
            if parts.count == 2 {
                try r.requireMethod("GET")
                return .counter(name: parts[1], op: .get, value: nil)
            }
            guard parts.count == 3 else {
                throw ControlRequestError(404, "expected /counter/{name}/{set|inc|dec|reset}, got \(r.path)")
            }
            try r.requireMethod("POST")
            guard let op = ControlCommand.CounterOp(rawValue: parts[2]), op != .get else {
                throw ControlRequestError(404, "unknown counter operation '\(parts[2])'; operations: set, inc, dec, reset")
            }
            let name = parts[1]
            guard !name.isEmpty else { throw ControlRequestError(400, "empty counter name", field: "name") }
            if op == .set {
                return .counter(name: name, op: op, value: try decode(CounterSetRequest.self, r.body).value)
            }
            _ = try decode(AnyObjectBody.self, r.body, allowEmpty: true)
            return .counter(name: name, op: op, value: nil)
        },
        ControlRoute(segment: "paint", forms: ["POST /paint/{clear|undo|redo|save}"]) { r in
            try r.exact(2); try r.requireMethod("POST")
            guard let op = ControlCommand.PaintOp(rawValue: r.parts[1]) else {
                throw ControlRequestError(404, "unknown paint operation '\(r.parts[1])'; operations: clear, undo, redo, save")
            }
            guard op == .save else {
                _ = try decode(AnyObjectBody.self, r.body, allowEmpty: true)
                return .paint(op: op, name: nil)
            }
            return .paint(op: op, name: try decode(PaintSaveRequest.self, r.body, allowEmpty: true).name)
        },
        ControlRoute(segment: "screenshot", forms: ["POST /screenshot", "GET /screenshot"]) { r in
            try r.exact(1)
            if ["GET", "HEAD"].contains(r.method) { return .screenshot() }
            try r.requireMethod("POST")
            return .screenshot(output: try decode(ScreenshotBody.self, r.body, allowEmpty: true).output)
        },
        ControlRoute(segment: "blank", forms: ["POST /blank"]) { r in
            try r.exact(1); try r.requireMethod("POST")
            let b = try decode(BlankRequest.self, r.body)
            return .blank(on: b.on, output: b.output)
        },
        ControlRoute(segment: "reload", forms: ["POST /reload"]) { r in
            try r.exact(1); try r.requireMethod("POST")
            _ = try decode(AnyObjectBody.self, r.body, allowEmpty: true)
            return .reload
        },
        ControlRoute(segment: "brightness", forms: ["GET /brightness", "POST /brightness"]) { r in
            try r.exact(1)
            if ["GET", "HEAD"].contains(r.method) { return .brightness(percent: nil) }
            try r.requireMethod("POST")
            return .brightness(percent: try decode(BrightnessRequest.self, r.body).percent)
        },
        ControlRoute(segment: "clock", forms: ["POST /clock", "POST /clock/mode"]) { r in
            if r.parts.count == 1 {
                try r.requireMethod("POST")
                let body = try decode(ClockRequest.self, r.body)
                do {
                    return .clock(intent: try ClockIntent.parse(body.words), scene: body.scene)
                } catch let e as KioskError {
                    throw ControlRequestError(400, e.message)
                }
            }
            try r.exact(2)
            guard r.parts[1] == "mode" else { throw ControlRequestError(404, "expected /clock/mode, got \(r.path)") }
            try r.requireMethod("POST")
            let body = try decode(ClockModeRequest.self, r.body)
            return .clockMode(mode: body.mode, scene: body.scene)
        },
        ControlRoute(segment: "pair", forms: ["POST /pair"]) { r in
            try r.exact(1); try r.requireMethod("POST")
            let body = try decode(PairRequest.self, r.body, allowEmpty: true)
            return .pair(role: body.role, show: body.show)
        },
        ControlRoute(segment: "devices", forms: ["GET /devices", "POST /devices/{name}/revoke"]) { r in
            if r.parts.count == 1 { try r.requireMethod("GET"); return .devices }
            guard r.parts.count == 3, r.parts[2] == "revoke" else {
                throw ControlRequestError(404, "expected /devices or /devices/{name}/revoke, got \(r.path)")
            }
            try r.requireMethod("POST")
            _ = try decode(AnyObjectBody.self, r.body, allowEmpty: true)
            guard !r.parts[1].isEmpty else { throw ControlRequestError(400, "empty device name", field: "name") }
            return .revokeDevice(name: r.parts[1])
        },
        ControlRoute(segment: "errors", forms: ["GET /errors"]) { r in
            try r.exact(1); try r.requireMethod("GET"); return .recentErrors
        },
        ControlRoute(segment: "themes", forms: ["GET /themes"]) { r in
            try r.exact(1); try r.requireMethod("GET"); return .themes
        },
        ControlRoute(segment: "paintings", forms: ["GET /paintings", "GET /paintings/{name}"]) { r in
            try r.requireMethod("GET")
            if r.parts.count == 1 { return .paintings }
            try r.exact(2)
            do { try PaintingFileName.validate(r.parts[1]) } catch let e as KioskError {
                throw ControlRequestError(400, "painting name: \(e.message)", field: "name")
            }
            return .painting(name: r.parts[1])
        },
        ControlRoute(segment: "horn", forms: ["POST /horn"]) { r in
            try r.exact(1); try r.requireMethod("POST")
            _ = try decode(AnyObjectBody.self, r.body, allowEmpty: true)
            return .horn
        },
        ControlRoute(segment: "settings", forms: ["GET /settings", "PATCH /settings", "PATCH /settings/fleet"]) { r in
            if r.parts.count == 2, r.parts[1] == "fleet" {
                // The whole fleet group's settings (docs/mqtt.md, "Settings for the whole fleet"): made on its primary.
                try r.requireMethod("PATCH")
                var change = try SettingsChange.parse(r.body, source: .kioskctl(at: Int64(time(nil))))
                change.fleet = true
                return .changeSettings(change)
            }
            try r.exact(1)
            if r.method == "PATCH" {
                return .changeSettings(try SettingsChange.parse(r.body, source: .kioskctl(at: Int64(time(nil)))))
            }
            guard ["GET", "HEAD"].contains(r.method) else {
                throw ControlRequestError(405, "method \(r.method) not allowed on /settings; use GET (read) or PATCH (change)")
            }
            return .settings
        },
    ]

    /// Every route's form, for 404 answers and documentation.
    public static let routes: [String] = table.flatMap(\.forms)

    public static func parse(method: String, uri: String, body: [UInt8]) throws -> ControlCommand {
        let pathPart = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        let parts = pathPart.split(separator: "/").map { PathSegment.percentDecoded($0) ?? String($0) }
        guard let first = parts.first, let route = table.first(where: { $0.segment == first }) else { throw notFound(uri) }
        return try route.parse(RouteRequest(method: method, uri: uri, path: pathPart, parts: parts, body: body))
    }

    static func notFound(_ uri: String) -> ControlRequestError {
        ControlRequestError(404, "no route \(uri); routes: \(routes.joined(separator: ", "))")
    }
}

extension ControlCommand {
    /// The HTTP request that carries this command (what `ControlRouter.parse` turns back into it).
    public var request: ControlRequest {
        func body<T: Encodable>(_ v: T) -> [UInt8] { (try? ControlJSON.encode(v)) ?? [] }
        switch self {
        case .status: return ControlRequest(method: "GET", path: "/status")
        case .outputs: return ControlRequest(method: "GET", path: "/outputs")
        case .scene(let name, let output): return ControlRequest(method: "POST", path: "/scene", body: body(SceneRequest(name: name, output: output)))
        case .theme(let name): return ControlRequest(method: "POST", path: "/theme", body: body(NameRequest(name: name)))
        case .counter(let name, let op, let value):
            let enc = PathSegment.percentEncoded(name)
            if op == .get { return ControlRequest(method: "GET", path: "/counter/\(enc)") }
            return ControlRequest(method: "POST", path: "/counter/\(enc)/\(op.rawValue)", body: value.map { body(CounterSetRequest(value: $0)) } ?? [])
        case .paint(let op, let name):
            return ControlRequest(method: "POST", path: "/paint/\(op.rawValue)", body: name.map { body(PaintSaveRequest(name: $0)) } ?? [])
        case .screenshot(let output): return ControlRequest(method: "POST", path: "/screenshot", body: output.map { body(OutputRequest(output: $0)) } ?? [])
        case .blank(let on, let output): return ControlRequest(method: "POST", path: "/blank", body: body(BlankRequest(on: on, output: output)))
        case .reload: return ControlRequest(method: "POST", path: "/reload")
        case .brightness(let p):
            guard let p else { return ControlRequest(method: "GET", path: "/brightness") }
            return ControlRequest(method: "POST", path: "/brightness", body: body(BrightnessRequest(percent: p)))
        case .clockMode(let mode, let scene):
            return ControlRequest(method: "POST", path: "/clock/mode", body: body(ClockModeRequest(mode: mode, scene: scene)))
        case .clock(let intent, let scene):
            return ControlRequest(method: "POST", path: "/clock", body: body(ClockRequest(words: intent.words, scene: scene)))
        case .pair(let role, let show): return ControlRequest(method: "POST", path: "/pair", body: body(PairRequest(role: role, show: show)))
        case .devices: return ControlRequest(method: "GET", path: "/devices")
        case .revokeDevice(let name):
            let enc = PathSegment.percentEncoded(name)
            return ControlRequest(method: "POST", path: "/devices/\(enc)/revoke")
        case .recentErrors: return ControlRequest(method: "GET", path: "/errors")
        case .themes: return ControlRequest(method: "GET", path: "/themes")
        case .palette: return ControlRequest(method: "GET", path: "/theme")
        case .paintings: return ControlRequest(method: "GET", path: "/paintings")
        case .painting(let name): return ControlRequest(method: "GET", path: "/paintings/\(name)")
        case .horn: return ControlRequest(method: "POST", path: "/horn")
        case .settings: return ControlRequest(method: "GET", path: "/settings")
        case .changeSettings(let change): return ControlRequest(method: "PATCH", path: change.fleet ? "/settings/fleet" : "/settings", body: change.body)
        }
    }
}
