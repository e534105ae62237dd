import Foundation
import KioskControl
import KioskCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import KioskPosix

/// Events a stopping server sends to each connection.
enum ControlServerEvent: Sendable {
    /// Stop reading requests; carry out and answer those already complete, then close.
    case drain
    /// The drain time is over: drop what has not started, close.
    case drainDeadline
}

/// The control interface: HTTP/1.1 + JSON on a Unix socket (SwiftNIO `ServerBootstrap` +
/// NIOHTTP1). Each request is checked by `ControlRouter`, handed to `execute` as a `ControlJob`
/// (which runs it on the render loop) and answered when done; see `ControlLimits` for the caps
/// and timeouts and docs/control.md for what an answer guarantees.
public final class ControlServer: Sendable {
    /// Hands a job to the thread that carries out commands; that thread calls `job.run`.
    public typealias Execute = @Sendable (ControlJob) -> Void

    public let settings: ControlSettings
    public let limits: ControlLimits
    private let execute: Execute
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let limiter: ConnectionLimiter
    private let jobs = JobRegistry()
    /// The listening channel, from start until stop.
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)

    public init(settings: ControlSettings, limits: ControlLimits = ControlLimits(), logger: Logger, execute: @escaping Execute) {
        self.settings = settings
        self.limits = limits
        self.execute = execute
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.limiter = ConnectionLimiter(maxConnections: limits.maxConnections)
    }

    /// Open connections (for tests and status).
    public var connectionCount: Int { limiter.count }

    /// Binds the socket (replacing a stale one, refusing when another kioskd answers on it).
    /// Blocking: for callers outside async code.
    public func start() throws {
        let (tmpDir, tmpPath) = try prepare()
        let ch: Channel
        do { ch = try bootstrap().bind(unixDomainSocketPath: tmpPath).wait() } catch {
            rmdir(tmpDir)
            throw KioskError.control("cannot listen on the control socket \(settings.socketPath): \(error)")
        }
        try publish(ch, tmpDir: tmpDir, tmpPath: tmpPath)
    }

    /// Binds the socket (as `start()`), without blocking a thread.
    public func start() async throws {
        let (tmpDir, tmpPath) = try prepare()
        let ch: Channel
        do { ch = try await bootstrap().bind(unixDomainSocketPath: tmpPath).get() } catch {
            rmdir(tmpDir)
            throw KioskError.control("cannot listen on the control socket \(settings.socketPath): \(error)")
        }
        try publish(ch, tmpDir: tmpDir, tmpPath: tmpPath)
    }

    /// Checks the target and makes a private (0700) directory next to it to bind in: the socket
    /// is never reachable by others before it has its configured mode and group, whatever the umask.
    private func prepare() throws -> (String, String) {
        let path = settings.socketPath
        var dir = (path as NSString).deletingLastPathComponent
        if dir.isEmpty { dir = "." }
        do { try Self.makeDirectories(dir) } catch let e as KioskError {
            throw KioskError(.control, "cannot create the control socket directory \(dir): \(e.message)", errno: e.errno)
        }
        if FileManager.default.fileExists(atPath: path) && ControlClient.socketAnswers(path) {
            throw KioskError.control("another kioskd is already listening on \(path)")
        }
        var template = Array("\(dir)/.kioskd-XXXXXX".utf8CString)
        // The name is read inside the closure: the array's storage is only valid there (read
        // after it, the optimizer may already have freed it — an aarch64 release build did).
        guard let tmpDir = template.withUnsafeMutableBufferPointer({ buf -> String? in
            mkdtemp(buf.baseAddress!).map { String(cString: $0) }
        }) else {
            throw Posix.error("mkdtemp", path: "\(dir)/.kioskd-XXXXXX", errno: errno)
        }
        // mkdtemp gives 0700 & ~umask; make sure it is exactly 0700.
        chmod(tmpDir, 0o700)
        let tmpPath = "\(tmpDir)/s"
        guard tmpPath.utf8.count < MemoryLayout.size(ofValue: sockaddr_un().sun_path) else {
            rmdir(tmpDir)
            throw KioskError.control("control socket path \(path) is too long to bind through \(tmpPath) (at most \(MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1) bytes)")
        }
        return (tmpDir, tmpPath)
    }

    /// `mkdir -p` (mode 0755 for what is created); errors name the directory that could not be made.
    static func makeDirectories(_ dir: String) throws {
        var prefix = dir.hasPrefix("/") ? "" : "."
        for part in dir.split(separator: "/") {
            prefix += "/" + part
            var st = stat()
            if stat(prefix, &st) == 0 { continue }
            do { try Posix.call("mkdir", path: prefix) { mkdir(prefix, 0o755) } } catch let e as KioskError where e.errno == EEXIST {}
        }
    }

    /// Mode and group on the private socket, then rename(2) into place.
    private func publish(_ ch: Channel, tmpDir: String, tmpPath: String) throws {
        let path = settings.socketPath
        func fail(_ message: String) -> Error {
            ch.close(promise: nil)
            unlink(tmpPath)
            rmdir(tmpDir)
            return KioskError.control(message)
        }
        do {
            try Posix.call("chmod \(String(settings.mode, radix: 8))", path: tmpPath) { chmod(tmpPath, mode_t(settings.mode)) }
        } catch let e as KioskError { throw fail(e.message) }
        if let g = settings.group {
            guard let gr = getgrnam(g) else { throw fail("control group '\(g)' does not exist (config key control.group)") }
            let gid = gr.pointee.gr_gid
            do { try Posix.call("chown :\(g)", path: tmpPath) { chown(tmpPath, uid_t.max, gid) } } catch let e as KioskError {
                throw fail("\(e.message) (is kioskd a member of '\(g)'?)")
            }
        }
        do { try Posix.call("rename", path: "\(tmpPath) → \(path)") { rename(tmpPath, path) } } catch let e as KioskError {
            throw fail(e.message)
        }
        rmdir(tmpDir)
        channel.withLockedValue { $0 = ch }
        logger.info("control interface listening", metadata: ["control.socket": "\(path)", "control.mode": "\(String(settings.mode, radix: 8))",
                                                               "control.max_connections": "\(limits.maxConnections)"])
    }

    private func bootstrap() -> ServerBootstrap {
        let execute = self.execute
        let limits = self.limits
        let logger = self.logger
        let limiter = self.limiter
        let jobs = self.jobs
        let refusal = rawHTTPResponse(.error(503, "too many control connections: at most \(limits.maxConnections) at once; try again later"),
                                      reason: "Service Unavailable")
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: limits.backlog)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelInitializer { ch in
                ch.eventLoop.makeCompletedFuture {
                    let sync = ch.pipeline.syncOperations
                    try sync.addHandler(ConnectionLimitHandler(limiter: limiter, refusal: refusal, wait: limits.overCapWait))
                    try sync.addHandler(RequestTimeoutHandler(limits: limits))
                    try sync.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
                    try sync.addHandler(HTTPResponseEncoder())
                    try sync.addHandler(ControlHTTPHandler(limits: limits, jobs: jobs, execute: execute, logger: logger))
                }
            }
    }

    /// Stops accepting, lets accepted requests finish and be answered (at most
    /// `limits.drainTimeout`; what has not started by then is dropped), closes every connection,
    /// removes the socket file, then stops the server's threads.
    public func stop() async {
        try? await drain().get()
        try? await group.shutdownGracefully()
    }

    /// Blocking `stop()`, for callers outside async code.
    public func stop() {
        try? drain().wait()
        try? group.syncShutdownGracefully()
    }

    private func drain() -> EventLoopFuture<Void> {
        let el = group.next()
        let taken: (any Channel)? = channel.withLockedValue { c in defer { c = nil }; return c }
        guard let ch = taken else { return el.makeSucceededVoidFuture() }
        let limiter = self.limiter, jobs = self.jobs, limits = self.limits, logger = self.logger, path = settings.socketPath
        return ch.close().flatMapError { _ in el.makeSucceededVoidFuture() }.flatMap {
            unlink(path)
            for c in limiter.channels { c.pipeline.fireUserInboundEventTriggered(ControlServerEvent.drain) }
            return self.connectionsClosed(on: el, within: limits.drainTimeout)
        }.flatMap {
            guard limiter.count > 0 else { return el.makeSucceededVoidFuture() }
            logger.notice("control requests unfinished at stop; dropping those not started", metadata: ["control.connections": "\(limiter.count)"])
            for c in limiter.channels { c.pipeline.fireUserInboundEventTriggered(ControlServerEvent.drainDeadline) }
            return self.connectionsClosed(on: el, within: .milliseconds(200))
        }.flatMap {
            jobs.abandonAll()
            let closes = limiter.channels.map { $0.close().flatMapError { _ in el.makeSucceededVoidFuture() } }
            return EventLoopFuture.andAllComplete(closes, on: el)
        }
    }

    /// Succeeds once no connection is open, or after `t`.
    private func connectionsClosed(on el: any NIOCore.EventLoop, within t: TimeAmount) -> EventLoopFuture<Void> {
        let p = el.makePromise(of: Void.self)
        poll(p, on: el, until: .now() + t)
        return p.futureResult
    }

    private func poll(_ p: EventLoopPromise<Void>, on el: any NIOCore.EventLoop, until end: NIODeadline) {
        if limiter.count == 0 || NIODeadline.now() >= end {
            p.succeed(())
        } else {
            el.scheduleTask(in: .milliseconds(5)) { self.poll(p, on: el, until: end) }
        }
    }
}

/// Plain words for an HTTP parse error.
func describeParserError(_ e: HTTPParserError) -> (status: Int, message: String) {
    switch e {
    case .headerOverflow: return (431, "request headers too large (at most \(ControlLimits.maxHeaderBytes / 1024) KiB)")
    case .invalidMethod: return (400, "invalid method")
    case .invalidVersion: return (400, "invalid HTTP version")
    case .invalidURL, .invalidPath, .invalidQueryString, .invalidFragment, .invalidHost, .invalidPort: return (400, "invalid request target")
    case .invalidHeaderToken: return (400, "invalid header")
    case .invalidContentLength: return (400, "invalid Content-Length")
    case .unexpectedContentLength: return (400, "Content-Length not allowed here (Transfer-Encoding is chunked)")
    case .invalidChunkSize: return (400, "invalid chunk size")
    case .invalidCharactersUsed, .invalidConstant, .lfExpected, .strictModeAssertion: return (400, "invalid characters in the request line or headers")
    case .invalidEOFState: return (400, "the connection ended in the middle of a request")
    default: return (400, "\(e)")
    }
}

/// One HTTP connection: reads requests (pipelined ones too), carries them out one at a time in
/// order, answers each, honours keep-alive and `Connection: close`, answers a half-closed
/// client before closing, and turns protocol errors, size and time limits into JSON answers.
final class ControlHTTPHandler: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Item {
        case command(HTTPRequestHead, ControlCommand, received: NIODeadline)
        case answer(HTTPRequestHead?, ControlResponse)
    }
    /// What the reading side is doing.
    private enum Reading {
        case waiting
        case body(HTTPRequestHead, [UInt8])
        /// Throwing away the rest of a too-large body (its 413 is queued).
        case discarding(Int)
        /// No further requests are read on this connection.
        case finished
    }

    private let limits: ControlLimits
    private let jobs: JobRegistry
    private let execute: ControlServer.Execute
    private let logger: Logger
    private var queue = CircularBuffer<Item>()
    private var reading = Reading.waiting
    private var current: (job: ControlJob, serial: Int, head: HTTPRequestHead)?
    private var closeWhenDone = false
    private var draining = false
    private var readPending = false
    private var closed = false
    private var lastWrite: EventLoopFuture<Void>?
    /// Numbers the jobs of this connection, so a late answer never lands on a later request.
    private var serial = 0
    private var context: ChannelHandlerContext!

    init(limits: ControlLimits, jobs: JobRegistry, execute: @escaping ControlServer.Execute, logger: Logger) {
        self.limits = limits
        self.jobs = jobs
        self.execute = execute
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func channelInactive(context: ChannelHandlerContext) {
        closed = true
        if let c = current {
            // Nobody is left to answer: a request not started is dropped.
            c.job.abandon()
            jobs.remove(c.job)
            current = nil
        }
        queue.removeAll()
        context.fireChannelInactive()
    }

    // MARK: reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            guard case .waiting = reading else { return }
            if draining {
                enqueue(.answer(h, .error(503, "kioskd is stopping; not carried out")), last: true)
                return
            }
            context.triggerUserOutboundEvent(RequestProgress.headReceived, promise: nil)
            if let l = h.headers.first(name: "content-length").flatMap(Int.init), l > limits.maxBodyBytes {
                // Answer at once; the body is read and thrown away so the client can read the answer.
                tooLarge(h)
            } else {
                reading = .body(h, [])
            }
        case .body(let buf):
            switch reading {
            case .body(let h, var body):
                if body.count + buf.readableBytes > limits.maxBodyBytes {
                    reading = .waiting
                    tooLarge(h, read: body.count + buf.readableBytes)
                } else {
                    reading = .waiting  // drop the copy held by `reading` before appending
                    body += buf.readableBytesView
                    reading = .body(h, body)
                }
            case .discarding(let n):
                let total = n + buf.readableBytes
                if total > limits.maxDiscardBytes {
                    logger.info("control request body far too large; closing", metadata: ["control.discarded": "\(total)"])
                    closeNow()
                } else {
                    reading = .discarding(total)
                }
            case .waiting, .finished:
                return
            }
        case .end:
            switch reading {
            case .body(let h, let body):
                context.triggerUserOutboundEvent(RequestProgress.requestComplete, promise: nil)
                reading = .waiting
                let item: Item
                do {
                    item = .command(h, try ControlRouter.parse(method: h.method.rawValue, uri: h.uri, body: body), received: .now())
                } catch let e as ControlRequestError {
                    item = .answer(h, e.response)
                } catch {
                    item = .answer(h, .error(400, "\(error)"))
                }
                enqueue(item, last: !h.isKeepAlive)
            case .discarding:
                context.triggerUserOutboundEvent(RequestProgress.requestComplete, promise: nil)
                reading = .finished
                process()
            case .waiting, .finished:
                return
            }
        }
    }

    private func tooLarge(_ h: HTTPRequestHead, read: Int = 0) {
        reading = .discarding(read)
        enqueue(.answer(h, .error(413, "request body too large: at most \(limits.maxBodyBytes) bytes")), last: true)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let e = error as? HTTPParserError {
            switch reading {
            case .finished, .discarding:
                // Already answering and closing; the rest of the input does not matter.
                reading = .finished
                process()
            case .waiting, .body:
                let (status, what) = describeParserError(e)
                enqueue(.answer(nil, .error(status, "malformed HTTP request: \(what)")), last: true)
            }
            return
        }
        logger.debug("control connection error", metadata: ["error": "\(error)"])
        closeNow()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // A half-closed client: answer what it sent, then close.
            switch reading {
            case .body(let h, let body):
                let expected = h.headers.first(name: "content-length") ?? "?"
                enqueue(.answer(h, .error(400, "the connection was half-closed before the request body was complete (\(body.count) of \(expected) bytes); not carried out")), last: true)
            case .waiting, .discarding, .finished:
                reading = .finished
                closeWhenDone = true
                process()
            }
        case let t as RequestTimeout:
            switch (t, reading) {
            case (.body(let limit), .body(let h, let body)):
                let expected = h.headers.first(name: "content-length").map { "\(body.count) of \($0) bytes received" } ?? "\(body.count) bytes received"
                enqueue(.answer(h, .error(408, "request body not complete within \(describeSeconds(limit)) (\(expected)); not carried out")), last: true)
            case (.headers(let limit), .waiting):
                enqueue(.answer(nil, .error(408, "request headers not complete within \(describeSeconds(limit))")), last: true)
            default:
                // Already answering (a 413 whose body is still being thrown away, …): just close.
                reading = .finished
                closeWhenDone = true
                if current == nil && queue.isEmpty { closeNow() }
            }
        case let e as ControlServerEvent:
            switch e {
            case .drain:
                draining = true
                // Complete requests not yet handed to the render loop are refused, in order.
                queue = CircularBuffer(queue.map { item -> Item in
                    if case .command(let h, _, _) = item { return .answer(h, .error(503, "kioskd is stopping; not carried out")) }
                    return item
                })
                reading = .finished
                closeWhenDone = true
                process()
            case .drainDeadline:
                if let c = current, c.job.drop() == .notStarted {
                    jobs.remove(c.job)
                    current = nil
                    write(.error(503, "kioskd is stopping; not carried out"), head: c.head)
                }
                closeNow()
            }
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Pauses reading while enough complete requests wait.
    func read(context: ChannelHandlerContext) {
        if queue.count >= limits.maxPipelined {
            readPending = true
        } else {
            context.read()
        }
    }

    // MARK: answering

    /// Queues an item; `last` means nothing after it is read or served on this connection.
    private func enqueue(_ item: Item, last: Bool) {
        queue.append(item)
        if last {
            closeWhenDone = true
            if case .discarding = reading {} else { reading = .finished }
        }
        process()
    }

    /// Serves queued items in order, one at a time; closes when told to and all is answered.
    private func process() {
        while current == nil, !closed, let item = queue.popFirst() {
            switch item {
            case .answer(let h, let r):
                write(r, head: h)
            case .command(let h, let command, let received):
                start(h, command, received: received)
            }
        }
        if readPending && queue.count < limits.maxPipelined {
            readPending = false
            context.read()
        }
        guard current == nil, queue.isEmpty, !closed else { return }
        if closeWhenDone {
            if case .discarding = reading { return }  // close once the rest of the body is read
            closeNow()
        } else {
            context.triggerUserOutboundEvent(RequestProgress.allAnswered, promise: nil)
        }
    }

    /// Hands the request to the executor as a job, which answers it by the deadline rule
    /// (`ControlJob`): its own answer, 503 when not started in time, 504 when not finished.
    private func start(_ h: HTTPRequestHead, _ command: ControlCommand, received: NIODeadline) {
        let loop = context.eventLoop
        let bound = NIOLoopBound(self, eventLoop: loop)
        serial += 1
        let n = serial
        let job = ControlJob(command: command, received: Int64(received.uptimeNanoseconds), limits: limits, clock: .nio(loop)) { response, ending in
            loop.execute { bound.value.finish(n, h, response, ending) }
        }
        current = (job, n, h)
        jobs.add(job)
        execute(job)
    }

    private func finish(_ n: Int, _ h: HTTPRequestHead, _ response: ControlResponse, _ ending: ControlJob.Ending) {
        guard let c = current, c.serial == n, !closed else { return }
        jobs.remove(c.job)
        current = nil
        switch ending {
        case .answered:
            write(response, head: h)
        case .notStarted:
            logger.warning("control request not started in time: the render loop is busy; not carried out",
                           metadata: ["control.request": "\(h.method) \(h.uri)"])
            write(response, head: h)
        case .unfinished:
            logger.error("control request started but not finished in time; its outcome is unknown",
                         metadata: ["control.request": "\(h.method) \(h.uri)"])
            write(response, head: h)
            // Its answer may still come: nothing more is served on this connection.
            closeWhenDone = true
            reading = .finished
        }
        process()
    }

    private func write(_ r: ControlResponse, head h: HTTPRequestHead?) {
        guard !closed else { return }
        let method = h?.method ?? .GET
        if r.status >= 400 {
            logger.info("control request refused", metadata: ["control.request": "\(method) \(h?.uri ?? "?")", "control.status": "\(r.status)",
                                                             "control.error": "\(r.errorMessage ?? "")"])
        }
        let closing = closeWhenDone && queue.isEmpty
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: r.contentType)
        headers.add(name: "Content-Length", value: "\(method == .HEAD ? 0 : r.body.count)")
        headers.add(name: "Connection", value: closing ? "close" : "keep-alive")
        let head = HTTPResponseHead(version: h?.version ?? .http1_1, status: HTTPResponseStatus(statusCode: r.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if method != .HEAD {
            var buf = context.channel.allocator.buffer(capacity: r.body.count)
            buf.writeBytes(r.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
        }
        lastWrite = context.writeAndFlush(wrapOutboundOut(.end(nil)))
    }

    /// Closes after everything written so far has gone out.
    private func closeNow() {
        guard !closed else { return }
        closed = true
        let ctx = context.loopBound
        if let last = lastWrite {
            last.whenComplete { _ in ctx.value.close(promise: nil) }
        } else {
            context.close(promise: nil)
        }
    }
}
