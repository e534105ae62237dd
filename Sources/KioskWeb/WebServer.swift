import FoundationEssentials
import HTTPTypes
import Hummingbird
import HummingbirdCore
import KioskControl
import KioskCore
import KioskHTTP
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
/// carried out by the daemon through `WebBackend`; on the same HTTP stack as the control socket
/// (`GuardedHTTP1Channel`), with its own connection cap.
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
        let logger = self.logger
        let server = HTTPServerBuilder { responder in
            GuardedHTTP1Channel(responder: responder, name: "web", limits: limits.control, limiter: limiter, logger: logger)
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
