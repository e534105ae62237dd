import Dispatch
import FoundationEssentials
import Glibc
import HTTPTypes
import HummingbirdCore
import KioskConfig
import KioskControl
import KioskCore
import KioskHTTP
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// The control interface: HTTP/1.1 + JSON on a Unix socket, on the phone page's HTTP stack
/// (`GuardedHTTP1Channel`: Hummingbird with every limit of `ControlLimits`). Each request is
/// checked by `ControlRouter`, handed to `execute` as a `ControlJob` (which runs it on the render
/// loop) and answered when done; see docs/control.md for what an answer guarantees.
public final class ControlServer: Sendable {
    /// Hands a job to the thread that carries out commands; that thread calls `job.run`.
    public typealias Execute = @Sendable (ControlJob) -> Void

    public let settings: ControlSettings
    public let limits: ControlLimits
    private let execute: Execute
    private let logger: Logger
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let limiter: ConnectionLimiter
    private let jobs = JobRegistry()
    private let stopping = NIOLockedValueBox(false)
    /// The server and the task running it, from start until stop.
    private let running = NIOLockedValueBox<(server: Server<GuardedHTTP1Channel>, task: Task<Void, Never>)?>(nil)
    static let stoppingAnswer = ControlResponse.error(503, "kioskd is stopping; not carried out")

    public init(settings: ControlSettings, limits: ControlLimits = ControlLimits(), logger: Logger, execute: @escaping Execute) {
        self.settings = settings
        self.limits = limits
        self.execute = execute
        self.logger = logger
        self.limiter = ConnectionLimiter(maxConnections: limits.maxConnections)
    }

    /// Open connections (for tests and status).
    public var connectionCount: Int { limiter.count }

    /// Binds the socket (as `start() async`). Blocking: for callers outside async code, never on
    /// the thread Swift concurrency runs on (the server starts there).
    public func start() throws {
        let done = DispatchSemaphore(value: 0)
        let outcome = NIOLockedValueBox<Result<Void, Error>>(.success(()))
        Task {
            do { try await self.start() } catch { outcome.withLockedValue { $0 = .failure(error) } }
            done.signal()
        }
        done.wait()
        try outcome.withLockedValue { $0 }.get()
    }

    /// Binds the socket (replacing a stale one, refusing when another kioskd answers on it) with
    /// its mode and group (`ControlSocketFile`).
    public func start() async throws {
        let file = try ControlSocketFile(settings)
        let bound = OneShot<Error?>()
        let jobs = self.jobs
        let channel = GuardedHTTP1Channel(responder: { [self] request, writer, channel in try await respond(request, writer, channel) },
                                          name: "control", limits: limits, limiter: limiter, logger: logger,
                                          onClose: { jobs.closed($0) })
        // Hummingbird's own start and stop lines would name the private bind path.
        var quiet = logger
        quiet.logLevel = .warning
        let server = Server(childChannelSetup: channel,
                            configuration: ServerConfiguration(address: .unixDomainSocket(path: file.bindPath), backlog: Int(limits.backlog)),
                            onServerRunning: { _ in bound.fulfil(nil) }, eventLoopGroup: group, logger: quiet)
        let task = Task {
            do { try await server.run() } catch { bound.fulfil(error) }
        }
        if let error = await bound.value() {
            file.discard()
            throw KioskError.control("cannot listen on the control socket \(settings.socketPath): \(error)")
        }
        do { try file.publish() } catch {
            try? await server.shutdownGracefully()
            await task.value
            throw error
        }
        running.withLockedValue { $0 = (server, task) }
        logger.info("control interface listening", metadata: ["control.socket": "\(settings.socketPath)", "control.mode": "\(String(settings.mode, radix: 8))",
                                                               "control.max_connections": "\(limits.maxConnections)"])
    }

    /// One request: its command carried out by the deadline rule (`ControlJob`: its own answer,
    /// 503 when not started in time, 504 when not finished), or the router's refusal.
    private func respond(_ request: Request, _ writer: consuming ResponseWriter, _ channel: any Channel) async throws {
        let method = request.method.rawValue, uri = request.head.path ?? "/"
        var response: ControlResponse
        var closing = false
        if stopping.withLockedValue({ $0 }) {
            response = Self.stoppingAnswer
        } else if let body = try await Self.body(of: request, upTo: limits.maxBodyBytes) {
            do {
                let command = try ControlRouter.parse(method: method, uri: uri, body: Array(buffer: body))
                let ending: ControlJob.Ending
                (response, ending) = await run(command, on: channel)
                switch ending {
                case .answered: break
                case .notStarted:
                    logger.warning("control request not started in time: the render loop is busy; not carried out", metadata: ["control.request": "\(method) \(uri)"])
                case .unfinished:
                    logger.error("control request started but not finished in time; its outcome is unknown", metadata: ["control.request": "\(method) \(uri)"])
                    // Its answer may still come: nothing more is served on this connection.
                    closing = true
                }
            } catch let e as ControlRequestError {
                response = e.response
            } catch {
                response = .error(400, "\(error)")
            }
        } else {
            response = limits.bodyTooLargeAnswer
        }
        if response.status >= 400 {
            logger.info("control request refused", metadata: ["control.request": "\(method) \(uri)", "control.status": "\(response.status)",
                                                             "control.error": "\(response.errorMessage ?? "")"])
        }
        var fields = HTTPFields()
        fields[.contentType] = response.contentType
        fields[.contentLength] = "\(request.method == .head ? 0 : response.body.count)"
        if closing { fields[.connection] = "close" }
        let body = request.method == .head ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: response.body))
        try await writer.write(response: HTTPResponse(status: .init(code: response.status), headerFields: fields), body: body)
    }

    /// The whole body; nil when it is larger than `limit`.
    private static func body(of request: Request, upTo limit: Int) async throws -> ByteBuffer? {
        do { return try await request.body.collect(upTo: limit) } catch is NIOTooManyBytesError { return nil }
    }

    private func run(_ command: ControlCommand, on channel: any Channel) async -> (ControlResponse, ControlJob.Ending) {
        let (limits, jobs, execute) = (self.limits, self.jobs, self.execute)
        defer { jobs.remove(on: channel) }
        return await withCheckedContinuation { c in
            let job = ControlJob(command: command, limits: limits, clock: .nio(channel.eventLoop)) { c.resume(returning: ($0, $1)) }
            jobs.add(job, on: channel)
            execute(job)
        }
    }

    /// Stops accepting and removes the socket file; lets accepted requests finish and be
    /// answered (at most `limits.drainTimeout`; what has not started by then is answered 503 and
    /// dropped, a started one's connection closed), closes every connection, then stops the
    /// server's thread.
    public func stop() async {
        guard let (server, task) = running.withLockedValue({ r in defer { r = nil }; return r }) else { return }
        stopping.withLockedValue { $0 = true }
        unlink(settings.socketPath)
        async let drained: Void? = try? await server.shutdownGracefully()
        if await !connectionsClosed(within: limits.drainTimeout) {
            logger.notice("control requests unfinished at stop; dropping those not started", metadata: ["control.connections": "\(limiter.count)"])
            jobs.endAll(answering: Self.stoppingAnswer, evenIfStarted: false)
            if await !connectionsClosed(within: .milliseconds(200)) {
                for c in limiter.channels { c.close(promise: nil) }
            }
        }
        jobs.endAll(answering: Self.stoppingAnswer, evenIfStarted: true)
        _ = await drained
        await task.value
        try? await group.shutdownGracefully()
    }

    /// Blocking `stop()`, for callers outside async code.
    public func stop() {
        let done = DispatchSemaphore(value: 0)
        Task { await self.stop(); done.signal() }
        done.wait()
    }

    /// Whether every connection closed within `t`.
    private func connectionsClosed(within t: TimeAmount) async -> Bool {
        let end = NIODeadline.now() + t
        while limiter.count > 0 && NIODeadline.now() < end { try? await Task.sleep(nanoseconds: 5_000_000) }
        return limiter.count == 0
    }
}
