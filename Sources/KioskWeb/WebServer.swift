import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import KioskControl
import KioskCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle

/// The limits of the web server: the control interface's (`ControlLimits`: idle, header and body
/// timeouts, body size) and its own connection and stream caps.
public struct WebLimits: Sendable, Equatable {
    public var control = ControlLimits()
    /// Connections at once (a page holds one live stream and up to six requests).
    public var maxConnections = 256
    /// Live streams (`GET /api/events`) at once.
    public var maxStreams = 128
    /// Events queued for one live stream; a reader that falls this far behind is dropped.
    public var streamQueue = 64
    /// A comment line on every live stream this often, so proxies and phones keep it open.
    public var keepAlive: TimeAmount = .seconds(15)
    public init() {}
}

/// The phone page's HTTP server: the control routes under `/api/`, pairing, live events and the
/// page's files, on Hummingbird (SwiftNIO). Every `/api/` request is checked (`WebAccess`) and
/// carried out by the daemon through `WebBackend`; connections are capped and timed by the same
/// NIO handlers as the control socket (`ConnectionLimitHandler`, `RequestTimeoutHandler`).
public final class WebServer: Service, Sendable {
    public let settings: WebSettings
    public let limits: WebLimits
    private let backend: any WebBackend
    private let logger: Logger
    private let access: WebAccess
    let streams: WebStreams
    private let limiter: ConnectionLimiter
    private let listening = NIOLockedValueBox<(port: Int?, waiters: [CheckedContinuation<Int, Error>], failure: String?)>((nil, [], nil))
    /// Called with the bound port once listening (the pairing URL uses it).
    private let onListening: @Sendable (Int) -> Void

    public init(settings: WebSettings, limits: WebLimits = WebLimits(), backend: any WebBackend, logger: Logger,
                onListening: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.settings = settings
        self.limits = limits
        self.backend = backend
        self.logger = logger
        self.access = WebAccess(settings: settings)
        self.streams = WebStreams(limits: limits)
        self.limiter = ConnectionLimiter(maxConnections: limits.maxConnections)
        self.onListening = onListening
    }

    /// Open connections.
    public var connectionCount: Int { limiter.count }
    /// Open live streams.
    public var streamCount: Int { streams.count }

    /// The port once the server listens (for tests and the bench, which bind port 0).
    public func port() async throws -> Int {
        try await withCheckedThrowingContinuation { c in
            let now: Result<Int, Error>? = listening.withLockedValue { l in
                if let p = l.port { return .success(p) }
                if let f = l.failure { return .failure(KioskError.control(f)) }
                l.waiters.append(c)
                return nil
            }
            if let now { c.resume(with: now) }
        }
    }

    private enum Listening { case success(Int), failure(String) }

    private func listened(_ result: Listening) {
        let waiters = listening.withLockedValue { l -> [CheckedContinuation<Int, Error>] in
            switch result {
            case .success(let p): l.port = p
            case .failure(let f): l.failure = f
            }
            defer { l.waiters = [] }
            return l.waiters
        }
        for w in waiters {
            switch result {
            case .success(let p): w.resume(returning: p)
            case .failure(let f): w.resume(throwing: KioskError.control(f))
            }
        }
    }

    /// Serves until graceful shutdown: then live streams are ended, the listener closed, and
    /// open requests finished.
    public func run() async throws {
        let limits = self.limits
        let limiter = self.limiter
        let refusal = rawHTTPResponse(.error(503, "too many web connections: at most \(limits.maxConnections) at once; try again later"),
                                      reason: "Service Unavailable")
        let server = HTTPServerBuilder { responder in
            WebChildChannel(http1: HTTP1Channel(responder: responder), limits: limits, limiter: limiter, refusal: refusal)
        }
        let responder = WebResponder(settings: settings, limits: limits, backend: backend, access: access, streams: streams, logger: logger)
        var config = ApplicationConfiguration(address: .hostname(settings.host, port: settings.port), serverName: nil,
                                              backlog: Int(limits.control.backlog), reuseAddress: true)
        config.availableConnectionsDelegate = nil
        let app = Application(responder: responder, server: server, configuration: config, onServerRunning: { [self] ch in
            let port = ch.localAddress?.port ?? settings.port
            logger.info("web server listening", metadata: ["web.listen": "\(settings.host):\(port)", "web.max_connections": "\(limits.maxConnections)"])
            listened(.success(port))
            onListening(port)
        }, eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton), logger: logger)
        let streams = self.streams
        let keepAlive = Task { await streams.keepAliveLoop() }
        defer { keepAlive.cancel() }
        do {
            try await withGracefulShutdownHandler {
                try await app.run()
            } onGracefulShutdown: {
                streams.closeAll()
            }
        } catch {
            listened(.failure("cannot serve the web page on \(settings.host):\(settings.port) (config key web.listen): \(error)"))
            throw KioskError.control("cannot serve the web page on \(settings.host):\(settings.port) (config key web.listen): \(error)")
        }
        streams.closeAll()
    }
}

/// HTTP/1.1 as Hummingbird sets it up, with the control interface's NIO limits in front: the
/// connection cap and the idle/header/body timers on raw bytes, and `WebHTTPGuard` after the
/// HTTP parser (body size, 408 and malformed-request answers).
struct WebChildChannel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let http1: HTTP1Channel
    let limits: WebLimits
    let limiter: ConnectionLimiter
    let refusal: [UInt8]

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(ConnectionLimitHandler(limiter: limiter, refusal: refusal, wait: limits.control.overCapWait))
            try sync.addHandler(RequestTimeoutHandler(limits: limits.control))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let limits = self.limits
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let sync = channel.pipeline.syncOperations
            // Right after the parser (the response encoder sits before it).
            let decoder = try sync.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try sync.addHandler(WebHTTPGuard(limits: limits.control), position: .after(decoder.handler))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

/// Sits right after the HTTP/1 parser: tells `RequestTimeoutHandler` how a request progresses,
/// answers a body announced larger than the limit with 413 at once (before reading it), a
/// request that timed out with 408 and malformed HTTP with 400, as JSON, and closes.
final class WebHTTPGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum State { case idle, body(Int), refusing(discarded: Int), closed }
    private let limits: ControlLimits
    private var state = State.idle
    /// The last request head passed on, until its answer ends.
    private var answering = false

    init(limits: ControlLimits) { self.limits = limits }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.closed, _):
            return
        case (.refusing(let n), .body(let b)):
            let total = n + b.readableBytes
            if total > limits.maxDiscardBytes { close(context) } else { state = .refusing(discarded: total) }
        case (.refusing, .end):
            close(context)
        case (.refusing, .head):
            return
        case (_, .head(let h)):
            context.triggerUserOutboundEvent(RequestProgress.headReceived, promise: nil)
            if let l = h.headers.first(name: "content-length").flatMap(Int.init), l > limits.maxBodyBytes {
                state = .refusing(discarded: 0)
                answer(context, .error(413, "request body too large: at most \(limits.maxBodyBytes) bytes"), version: h.version)
                return
            }
            state = .body(0)
            answering = true
            context.fireChannelRead(data)
        case (.body(let n), .body(let b)):
            let total = n + b.readableBytes
            // A body without a length that runs on: the route refuses it at the limit; beyond
            // the discard allowance nothing more is read.
            if total > limits.maxBodyBytes + limits.maxDiscardBytes { close(context); return }
            state = .body(total)
            context.fireChannelRead(data)
        case (_, .end):
            state = .idle
            context.triggerUserOutboundEvent(RequestProgress.requestComplete, promise: nil)
            context.fireChannelRead(data)
        case (.idle, .body):
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            answering = false
            context.write(data, promise: promise)
            context.triggerUserOutboundEvent(RequestProgress.allAnswered, promise: nil)
        } else {
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let t = event as? RequestTimeout else { context.fireUserInboundEventTriggered(event); return }
        switch state {
        case .refusing, .closed: close(context); return  // already answered
        case .idle, .body: break
        }
        switch t {
        case .headers(let limit):
            answer(context, .error(408, "request headers not complete within \(describeSeconds(limit))"), version: .http1_1)
        case .body(let limit):
            answer(context, .error(408, "request body not complete within \(describeSeconds(limit)); not carried out"), version: .http1_1)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let e = error as? HTTPParserError {
            if case .closed = state { return }
            if answering { close(context); return }
            let status = e == .headerOverflow ? 431 : 400
            answer(context, .error(status, "malformed HTTP request: \(e)"), version: .http1_1)
            return
        }
        context.fireErrorCaught(error)
    }

    /// Writes `r` (connection: close) below Hummingbird, then closes once it is out, or after
    /// the rest of a refused body was read (bounded by `maxDiscardBytes`).
    private func answer(_ context: ChannelHandlerContext, _ r: ControlResponse, version: HTTPVersion) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: r.contentType)
        headers.add(name: "Content-Length", value: "\(r.body.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: .init(statusCode: r.status), headers: headers))), promise: nil)
        var buf = context.channel.allocator.buffer(capacity: r.body.count)
        buf.writeBytes(r.body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
        let ctx = context.loopBound
        let refusing: Bool
        if case .refusing = state { refusing = true } else { refusing = false }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [refusing] _ in
            if !refusing { ctx.value.close(promise: nil) }
        }
        if !refusing { state = .closed }
    }

    private func close(_ context: ChannelHandlerContext) {
        state = .closed
        context.close(promise: nil)
    }
}

/// What Hummingbird hands each request: the client's address and its connection.
struct WebRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
    /// The client's IP address (the key for the limit on wrong pairing codes).
    var client: String { channel.remoteAddress?.ipAddress ?? "unknown" }
}
