import FoundationEssentials
import Glibc
import KioskCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// Why a control request got no answer, in words for the person at the terminal.
public struct ControlClientError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Equatable, Sendable { case notRunning, permission, timeout, protocolError }
    public var kind: Kind
    public var description: String
    public init(kind: Kind, description: String) { self.kind = kind; self.description = description }
}

/// A client of the control socket (`kioskctl`): one HTTP/1.1 request per connection, over
/// SwiftNIO's `ClientBootstrap.connect(unixDomainSocketPath:)` with NIOHTTP1's codecs.
public struct ControlClient: Sendable {
    public var socketPath: String
    /// Seconds to wait for the answer (used clamped to `minTimeout...maxTimeout`; NaN counts as the default 10).
    public var timeout: Double

    /// Shortest and longest wait for an answer, in seconds.
    public static let minTimeout = 0.001
    public static let maxTimeout = 3600.0
    /// Largest answer read (a screenshot of an 8K panel is ~100 MiB raw, far less as PNG).
    public static let maxAnswerBytes = 64 << 20

    /// `seconds` as whole milliseconds within `minTimeout...maxTimeout` (never traps: NaN and
    /// infinities are clamped, not converted).
    public static func milliseconds(_ seconds: Double) -> Int64 {
        let s = seconds.isNaN ? 10 : min(max(seconds, minTimeout), maxTimeout)
        return max(1, Int64((s * 1000).rounded()))
    }

    public init(socketPath: String, timeout: Double = 10) {
        self.socketPath = socketPath
        self.timeout = timeout
    }

    /// True when something accepts connections on `path` (a running kioskd, not a stale file); wraps `connect(2)`.
    public static func socketAnswers(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
        }
        let r = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return r == 0
    }

    /// Sends `command` and returns the answer (any status); throws when there is no answer.
    public func send(_ command: ControlCommand) throws -> ControlResponse {
        let r = command.request
        return try send(method: HTTPMethod(rawValue: r.method), path: r.path, body: r.body)
    }

    /// Sends one request and returns the answer (any status); throws when there is no answer.
    public func send(method: HTTPMethod, path: String, json: JSONValue? = nil) throws -> ControlResponse {
        let body: [UInt8] = try json.map { try $0.bytes() } ?? []
        return try send(method: method, path: path, body: body)
    }

    public func send(method: HTTPMethod, path: String, body: [UInt8]) throws -> ControlResponse {
        guard FileManager.default.fileExists(atPath: socketPath) else {
            throw ControlClientError(kind: .notRunning, description: "kioskd is not running (no socket at \(socketPath))")
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let el = group.next()
        let promise = el.makePromise(of: ControlResponse.self)
        let socketPath = self.socketPath
        let channel: Channel
        do {
            channel = try ClientBootstrap(group: group)
                .connectTimeout(.milliseconds(max(Self.milliseconds(timeout), 100)))
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHTTPClientHandlers()
                        try ch.pipeline.syncOperations.addHandler(ClientHandler(promise: promise, socketPath: socketPath))
                    }
                }
                .connect(unixDomainSocketPath: socketPath).wait()
        } catch {
            promise.fail(error)
            let text = "\(error)"
            if text.contains("ECONNREFUSED") || text.contains("Connection refused") || text.contains("ENOENT") || text.contains("No such file") {
                throw ControlClientError(kind: .notRunning, description: "kioskd is not running (nothing listens on \(socketPath); the file is left from an earlier run)")
            }
            if text.contains("EACCES") || text.contains("Permission denied") {
                throw ControlClientError(kind: .permission, description: "permission denied on \(socketPath): run as root or as a member of the socket's group (config key control.group)")
            }
            if text.contains("connectTimeout") || text.contains("timed out") {
                throw ControlClientError(kind: .timeout, description: "kioskd did not accept the connection on \(socketPath) within \(timeout) s (is it hung?)")
            }
            throw ControlClientError(kind: .protocolError, description: "cannot connect to \(socketPath): \(error)")
        }
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "kioskd")
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Connection", value: "close")
        let head = HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if !body.isEmpty {
            var buf = channel.allocator.buffer(capacity: body.count)
            buf.writeBytes(body)
            channel.write(HTTPClientRequestPart.body(.byteBuffer(buf)), promise: nil)
        }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        let t = timeout
        let sp = socketPath
        let task = el.scheduleTask(in: .milliseconds(Self.milliseconds(t))) {
            promise.fail(ControlClientError(kind: .timeout, description: "kioskd did not answer within \(t) s (it is busy or hung; socket \(sp)); try --timeout"))
        }
        defer {
            task.cancel()
            channel.close(promise: nil)
        }
        return try promise.futureResult.wait()
    }
}

/// Collects one HTTP response (at most `ControlClient.maxAnswerBytes` of body).
private final class ClientHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    private let promise: EventLoopPromise<ControlResponse>
    private let socketPath: String
    private var status = 0
    private var contentType = "application/json"
    private var body: [UInt8] = []
    private var gotHead = false
    private var done = false

    init(promise: EventLoopPromise<ControlResponse>, socketPath: String) {
        self.promise = promise
        self.socketPath = socketPath
    }

    private func fail(_ context: ChannelHandlerContext, _ message: String) {
        guard !done else { return }
        done = true
        promise.fail(ControlClientError(kind: .protocolError, description: message))
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let h):
            gotHead = true
            status = Int(h.status.code)
            contentType = h.headers.first(name: "content-type") ?? contentType
        case .body(var b):
            guard body.count + b.readableBytes <= ControlClient.maxAnswerBytes else {
                fail(context, "kioskd's answer on \(socketPath) is larger than \(ControlClient.maxAnswerBytes >> 20) MiB; not read")
                return
            }
            body += b.readBytes(length: b.readableBytes) ?? []
        case .end:
            done = true
            promise.succeed(ControlResponse(status: status, contentType: contentType, body: body))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if gotHead {
            fail(context, "kioskd closed the connection on \(socketPath) in the middle of its answer (HTTP \(status), \(body.count) bytes of the body received)")
        } else {
            fail(context, "kioskd closed the connection on \(socketPath) without an answer (did it stop?)")
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if gotHead, error is HTTPParserError {
            fail(context, "kioskd's answer on \(socketPath) was cut off or malformed (HTTP \(status), \(body.count) bytes of the body received): \(error)")
        } else if error is HTTPParserError {
            fail(context, "the answer on \(socketPath) is not HTTP (is something other than kioskd listening there?): \(error)")
        } else {
            fail(context, "control connection on \(socketPath) failed: \(error)")
        }
    }
}
