import Foundation
import KioskCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// The control interface: HTTP/1.1 + JSON on a Unix socket (SwiftNIO `ServerBootstrap` +
/// NIOHTTP1). Each request is checked by `ControlRouter`, handed to `execute` (which runs it on
/// the render loop) and answered when done, or with 503 after `timeout`.
public final class ControlServer: @unchecked Sendable {
    public typealias Execute = @Sendable (ControlCommand, @escaping @Sendable (ControlResponse) -> Void) -> Void

    public let settings: ControlSettings
    public let timeout: TimeAmount
    private let execute: Execute
    private let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private var channel: Channel?

    public init(settings: ControlSettings, timeout: TimeAmount = .seconds(5), logger: Logger, execute: @escaping Execute) {
        self.settings = settings
        self.timeout = timeout
        self.execute = execute
        self.logger = logger
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    /// Binds the socket (replacing a stale one, refusing when another kioskd answers on it),
    /// then sets its mode and group.
    public func start() throws {
        let path = settings.socketPath
        let dir = (path as NSString).deletingLastPathComponent
        if !dir.isEmpty && !FileManager.default.fileExists(atPath: dir) {
            do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755]) } catch {
                throw KioskError.control("cannot create the control socket directory \(dir): \(ConfigFile.describe(error))")
            }
        }
        if FileManager.default.fileExists(atPath: path) && ControlClient.socketAnswers(path) {
            throw KioskError.control("another kioskd is already listening on \(path)")
        }
        let execute = self.execute
        let timeout = self.timeout
        let logger = self.logger
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 32)
            .childChannelInitializer { ch in
                ch.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    ch.pipeline.addHandler(ControlHTTPHandler(execute: execute, timeout: timeout, logger: logger))
                }
            }
        do {
            channel = try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
        } catch {
            throw KioskError.control("cannot listen on the control socket \(path): \(error)")
        }
        // bind(2) created the socket with the umask's mode (no write access for others); narrow or widen to the config.
        if chmod(path, mode_t(settings.mode)) != 0 {
            throw KioskError.control("chmod \(String(settings.mode, radix: 8)) \(path) failed: \(String(cString: strerror(errno)))")
        }
        if let g = settings.group {
            guard let gr = getgrnam(g) else { throw KioskError.control("control group '\(g)' does not exist (config key control.group)") }
            if chown(path, uid_t.max, gr.pointee.gr_gid) != 0 {
                throw KioskError.control("chown :\(g) \(path) failed: \(String(cString: strerror(errno))) (is kioskd a member of '\(g)'?)")
            }
        }
        logger.info("control interface listening", metadata: ["control.socket": "\(path)", "control.mode": "\(String(settings.mode, radix: 8))"])
    }

    /// Closes the socket and removes its file.
    public func stop() {
        if let c = channel {
            try? c.close().wait()
            channel = nil
            unlink(settings.socketPath)
        }
        try? group.syncShutdownGracefully()
    }
}

/// One HTTP connection: collects a request (at most `ControlRouter.maxBodyBytes` of body), routes
/// it, runs it, answers and closes.
final class ControlHTTPHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let execute: ControlServer.Execute
    private let timeout: TimeAmount
    private let logger: Logger
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    private var answered = false

    init(execute: @escaping ControlServer.Execute, timeout: TimeAmount, logger: Logger) {
        self.execute = execute
        self.timeout = timeout
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
            body = []
            tooLarge = false
            answered = false
            if let l = h.headers.first(name: "content-length").flatMap(Int.init), l > ControlRouter.maxBodyBytes {
                // Answer at once: the body is not read.
                tooLarge = true
                head = nil
                handle(context: context, head: h)
            }
        case .body(var buf):
            guard !tooLarge else { return }
            if body.count + buf.readableBytes > ControlRouter.maxBodyBytes {
                tooLarge = true
                body = []
            } else if let bytes = buf.readBytes(length: buf.readableBytes) {
                body += bytes
            }
        case .end:
            guard let h = head else { return }
            head = nil
            handle(context: context, head: h)
        }
    }

    private func handle(context: ChannelHandlerContext, head h: HTTPRequestHead) {
        if tooLarge {
            respond(context: context, .error(413, "request body too large: at most \(ControlRouter.maxBodyBytes) bytes"), head: h)
            return
        }
        let command: ControlCommand
        do {
            command = try ControlRouter.parse(method: h.method.rawValue, uri: h.uri, body: body)
        } catch let e as ControlRequestError {
            respond(context: context, e.response, head: h)
            return
        } catch {
            respond(context: context, .error(400, "\(error)"), head: h)
            return
        }
        let el = context.eventLoop
        let bound = NIOLoopBound(context, eventLoop: el)
        let selfBound = NIOLoopBound(self, eventLoop: el)
        let timeoutTask = el.scheduleTask(in: timeout) {
            let me = selfBound.value
            guard !me.answered else { return }
            me.logger.warning("control request timed out: the render loop is busy", metadata: ["control.request": "\(h.method) \(h.uri)"])
            me.respond(context: bound.value, .error(503, "kioskd is busy: the render loop did not answer within \(me.timeout.nanoseconds / 1_000_000) ms"), head: h)
        }
        execute(command) { response in
            el.execute {
                timeoutTask.cancel()
                let me = selfBound.value
                guard !me.answered else { return }
                me.respond(context: bound.value, response, head: h)
            }
        }
    }

    private func respond(context: ChannelHandlerContext, _ r: ControlResponse, head h: HTTPRequestHead) {
        guard !answered else { return }
        answered = true
        if r.status >= 400 {
            logger.info("control request refused", metadata: ["control.request": "\(h.method) \(h.uri)", "control.status": "\(r.status)",
                                                             "control.error": "\((r.jsonObject?["error"] as? String) ?? "")"])
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: r.contentType)
        headers.add(name: "Content-Length", value: "\(h.method == .HEAD ? 0 : r.body.count)")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(version: h.version, status: HTTPResponseStatus(statusCode: r.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if h.method != .HEAD {
            var buf = context.channel.allocator.buffer(capacity: r.body.count)
            buf.writeBytes(r.body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
        }
        let ctx = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in ctx.value.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("control connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
