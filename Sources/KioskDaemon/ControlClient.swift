import Foundation
import KioskCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// Why a control request got no answer, in words for the person at the terminal.
public struct ControlClientError: Error, CustomStringConvertible, Equatable {
    public enum Kind: Equatable { case notRunning, permission, timeout, protocolError }
    public var kind: Kind
    public var description: String
}

/// A client of the control socket (`kioskctl`): one HTTP/1.1 request per connection, over
/// SwiftNIO's `ClientBootstrap.connect(unixDomainSocketPath:)` with NIOHTTP1's codecs.
public struct ControlClient {
    public var socketPath: String
    /// Seconds to wait for the answer.
    public var timeout: Double

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

    /// Sends one request and returns the answer (any status); throws when there is no answer.
    public func send(method: HTTPMethod, path: String, json: [String: Any]? = nil) throws -> ControlResponse {
        let body: [UInt8] = try json.map { [UInt8](try JSONSerialization.data(withJSONObject: $0)) } ?? []
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
        let handler = ClientHandler(promise: promise)
        let channel: Channel
        do {
            channel = try ClientBootstrap(group: group)
                .connectTimeout(.milliseconds(Int64(max(timeout, 0.1) * 1000)))
                .channelInitializer { ch in
                    ch.pipeline.addHTTPClientHandlers().flatMap { ch.pipeline.addHandler(handler) }
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
        let task = el.scheduleTask(in: .milliseconds(Int64(t * 1000))) {
            promise.fail(ControlClientError(kind: .timeout, description: "kioskd did not answer within \(t) s (it is busy or hung; socket \(sp)); try --timeout"))
        }
        defer {
            task.cancel()
            channel.close(promise: nil)
        }
        return try promise.futureResult.wait()
    }
}

/// Collects one HTTP response.
private final class ClientHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPClientResponsePart
    private let promise: EventLoopPromise<ControlResponse>
    private var status = 0
    private var contentType = "application/json"
    private var body: [UInt8] = []

    init(promise: EventLoopPromise<ControlResponse>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            status = Int(h.status.code)
            contentType = h.headers.first(name: "content-type") ?? contentType
        case .body(var b):
            body += b.readBytes(length: b.readableBytes) ?? []
        case .end:
            promise.succeed(ControlResponse(status: status, contentType: contentType, body: body))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ControlClientError(kind: .protocolError, description: "kioskd closed the connection without an answer (did it stop?)"))
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        promise.fail(ControlClientError(kind: .protocolError, description: "control connection failed: \(error)"))
        context.close(promise: nil)
    }
}
