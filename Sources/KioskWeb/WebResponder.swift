import FoundationEssentials
import HTTPTypes
import Hummingbird
import KioskControl
import KioskCore
import Logging
import NIOCore

/// Answers every request of the web server:
/// - `/api/…`: `Host` and `Origin` checked; `POST /api/pair` redeems a pairing code (no
///   cookie needed); every other route needs a paired device's cookie (401 without), and a
///   change needs the operator role (403 for a viewer). `GET /api/events` is the live stream,
///   `GET /api/session` says who the device is; the rest is the control interface's table
///   (`ControlRouter`) under `/api/`, with its status codes and JSON errors.
/// - anything else: the page's files (`WebAssets`).
struct WebResponder: HTTPResponder {
    typealias Context = WebRequestContext
    let settings: WebSettings
    let limits: WebLimits
    let backend: any WebBackend
    let access: WebAccess
    let streams: WebStreams
    let logger: Logger

    func respond(to request: Request, context: Context) async throws -> Response {
        let path = request.uri.path
        guard path == "/api" || path.hasPrefix("/api/") else { return asset(request, path) }
        if let refusal = access.check(host: request.head.authority, origin: request.headers[.origin]) {
            return answer(refusal, request)
        }
        let route = String(path.dropFirst(4))  // "/status"
        if route == "/pair" && request.method == .post {
            return try await pair(request, context)
        }
        guard let token = WebAccess.token(cookie: request.headers[.cookie]) else {
            return answer(.error(401, "not paired: this device has no session; pair it with the code that `kioskctl pair` shows on the kiosk"), request)
        }
        guard let device = await backend.device(token: token) else {
            return answer(.error(401, "not paired: this device's session is unknown or was revoked; pair it again with a new code"), request)
        }
        if route == "/session" {
            return answer(.json(200, SessionAnswer(device: device.name, role: device.role.rawValue)), request)
        }
        if route == "/events" {
            guard request.method == .get else { return answer(.error(405, "method \(request.method) not allowed on /events; use GET"), request) }
            return await events(device, context, request)
        }
        var req = request
        let body: ByteBuffer
        do { body = try await req.collectBody(upTo: limits.control.maxBodyBytes) } catch is NIOTooManyBytesError {
            return answer(limits.control.bodyTooLargeAnswer, request)
        }
        // `POST /api/devices/pair` opens a code from the page (an owner's): the control API's `POST /pair`.
        let uri = route == "/devices/pair" ? "/pair" : request.uri.query.map { "\(route)?\($0)" } ?? route
        var command: ControlCommand
        do {
            command = try ControlRouter.parse(method: request.method.rawValue, uri: uri, body: Array(buffer: body))
        } catch let e as ControlRequestError {
            return answer(e.response, request)
        } catch {
            return answer(.error(400, "\(error)"), request)
        }
        switch WebResponder.settingsChange(command, device) {
        case .refuse(let refusal)?: return answer(refusal, request)
        case .run(let c)?: command = c
        case nil: if let refusal = WebResponder.permission(command, device) { return answer(refusal, request) }
        }
        let r = await backend.run(command)
        return answer(r, request)
    }

    /// Viewers read (every command a GET carries, such as the brightness or a counter);
    /// operators change; owners also pair and revoke devices and read the recent errors
    /// (`WebPermission`, WebRoles.swift).
    static func permission(_ command: ControlCommand, _ device: WebDevice) -> ControlResponse? {
        WebPermission.refusal(command, device)
    }

    private func pair(_ request: Request, _ context: Context) async throws -> Response {
        var req = request
        let body: ByteBuffer
        do { body = try await req.collectBody(upTo: limits.control.maxBodyBytes) } catch is NIOTooManyBytesError {
            return answer(limits.control.bodyTooLargeAnswer, request)
        }
        let o: [String: JSONValue]
        do {
            guard let v = try JSONValue.parse(Array(buffer: body)).objectValue else {
                return answer(.error(400, "request body must be a JSON object {\"code\": \"…\", \"name\": \"…\"}"), request)
            }
            o = v
        } catch {
            return answer(.error(400, "request body is not valid JSON; expected {\"code\": \"…\", \"name\": \"…\"}"), request)
        }
        guard let code = o["code"]?.stringValue, !code.isEmpty else {
            return answer(.error(400, "missing field 'code' (the code shown on the kiosk's screen)", field: "code"), request)
        }
        guard let name = o["name"]?.stringValue else {
            return answer(.error(400, "missing field 'name' (a name for this device, such as \"Anna's phone\")", field: "name"), request)
        }
        switch await backend.redeem(code: code, name: name, client: context.client) {
        case .refused(let r):
            return answer(r, request)
        case .paired(let token, let device):
            var r = answer(.json(200, SessionAnswer(ok: true, device: device.name, role: device.role.rawValue)), request)
            r.headers[.setCookie] = WebAccess.setCookie(token: token, secure: settings.url?.hasPrefix("https://") ?? false)
            return r
        }
    }

    private func events(_ device: WebDevice, _ context: Context, _ request: Request) async -> Response {
        guard let (id, events) = streams.add(device: device.name, channel: context.channel) else {
            return answer(.error(503, "too many live streams: at most \(limits.maxStreams) at once; try again later"), request)
        }
        let streams = self.streams
        let backendID = await backend.openStream(device: device, sink: { e in
            streams.send(WebStreams.format(e), to: id)
        }, closed: {
            streams.end(id)
        })
        let backend = self.backend
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer {
                backend.closeStream(backendID)
                streams.remove(id)
            }
            var w = writer
            for await chunk in events { try await w.write(chunk) }
            try await w.finish(nil)
        })
    }

    private func asset(_ request: Request, _ path: String) -> Response {
        guard request.method == .get || request.method == .head else {
            return answer(.error(405, "method \(request.method) not allowed on \(path); the page's files are read with GET"), request)
        }
        if let refusal = access.check(host: request.head.authority, origin: nil) { return answer(refusal, request) }
        guard let f = WebAssets.file(path) else { return answer(.error(404, "no file \(path)"), request) }
        var headers = securityHeaders()
        headers[.contentType] = f.contentType
        headers[.cacheControl] = "no-cache"
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: f.body))
        return Response(status: .ok, headers: headers, body: body)
    }

    private func securityHeaders() -> HTTPFields {
        var h = HTTPFields()
        h[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        h[HTTPField.Name("X-Frame-Options")!] = "DENY"
        h[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return h
    }

    private func answer(_ r: ControlResponse, _ request: Request) -> Response {
        if r.status >= 400 {
            logger.info("web request refused", metadata: ["web.request": "\(request.method) \(request.uri.path)", "web.status": "\(r.status)",
                                                         "web.error": "\(r.errorMessage ?? "")"])
        }
        var headers = securityHeaders()
        headers[.contentType] = r.contentType
        headers[.cacheControl] = "no-store"
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: r.body))
        return Response(status: .init(code: r.status), headers: headers, body: body)
    }
}

/// `GET /api/session` and `POST /api/pair`: which device this is and its role.
public struct SessionAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var device: String
    public var role: String
    public init(ok: Bool? = nil, device: String, role: String) { self.ok = ok; self.device = device; self.role = role }
}
