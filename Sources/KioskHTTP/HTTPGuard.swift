import KioskControl
import Logging
import NIOCore
import NIOHTTP1

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

/// A request `HTTPGuard` gave up on (timed out, malformed, cut short, or the server stops):
/// Hummingbird's body stream fails with it, so a cut body is never taken for a whole one.
public struct HTTPRequestAbandoned: Error {}

/// Sits right after the HTTP/1 parser, below Hummingbird. Passes requests on in order and
/// counts those not yet answered (reading pauses at `maxPipelined`); gives each answer the
/// request's HTTP version, its standard reason phrase and `Connection: keep-alive` or `close`;
/// tells `RequestTimeoutHandler` how a request progresses; and, as JSON, answers itself (after
/// the answers already due) and closes: a body announced larger than the limit (413 at once,
/// the rest read and thrown away up to `maxDiscardBytes`), a request that timed out (408),
/// malformed HTTP (400, 431), a body cut by a half-close (400). A request without `keep-alive`,
/// a half-closed client, a body over the limit without a length (the responder answers 413), an
/// answer that says `Connection: close` and a stopping server (Hummingbird's quiesce event) end
/// reading: what was read is answered, then the connection closes.
final class HTTPGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Reading {
        case waiting
        case body(HTTPRequestHead, received: Int)
        /// Throwing away the rest of a too-large body.
        case discarding(Int)
        /// No further request is read on this connection.
        case finished
    }
    private let limits: ControlLimits
    private let name: String
    private let logger: Logger
    private var reading = Reading.waiting
    /// The HTTP versions of the requests passed on and not yet answered, oldest first.
    private var unanswered = CircularBuffer<HTTPVersion>()
    /// An answer of the guard's own, written once every request passed on is answered.
    private var pending: (ControlResponse, HTTPVersion)?
    private var closeWhenAnswered = false
    private var closed = false
    /// Reading paused while `maxPipelined` requests wait for their answers.
    private var readPending = false
    private var lastWrite: EventLoopFuture<Void>?

    init(limits: ControlLimits, name: String, logger: Logger) {
        self.limits = limits
        self.name = name
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closed else { return }
        switch (unwrapInboundIn(data), reading) {
        case (.head(let h), .waiting):
            context.triggerUserOutboundEvent(RequestProgress.headReceived, promise: nil)
            if let l = h.headers.first(name: "content-length").flatMap(Int.init), l > limits.maxBodyBytes {
                // Answered at once; the body is read and thrown away so the client can read the answer.
                reading = .discarding(0)
                pending = (limits.bodyTooLargeAnswer, h.version)
                closeWhenAnswered = true
                afterAnswers(context)
                return
            }
            reading = .body(h, received: 0)
            unanswered.append(h.version)
            if !h.isKeepAlive { closeWhenAnswered = true }
            context.fireChannelRead(data)
        case (.body(let b), .body(let h, let n)):
            let total = n + b.readableBytes
            if total > limits.maxBodyBytes {
                // A body without a length that runs on: the responder sees it pass the limit and
                // answers 413; the rest is thrown away, then the connection closes.
                reading = .discarding(total)
                closeWhenAnswered = true
            } else {
                reading = .body(h, received: total)
            }
            context.fireChannelRead(data)
        case (.body(let b), .discarding(let n)):
            let total = n + b.readableBytes
            if total > limits.maxDiscardBytes {
                logger.info("\(name) request body far too large; closing", metadata: ["\(name).discarded": "\(total)"])
                close(context)
            } else {
                reading = .discarding(total)
            }
        case (.end, .body):
            context.triggerUserOutboundEvent(RequestProgress.requestComplete, promise: nil)
            reading = closeWhenAnswered ? .finished : .waiting
            context.fireChannelRead(data)
        case (.end, .discarding):
            context.triggerUserOutboundEvent(RequestProgress.requestComplete, promise: nil)
            reading = .finished
            afterAnswers(context)
        case (_, .finished), (.body, .waiting), (.end, .waiting), (.head, .body), (.head, .discarding):
            return
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let e = error as? HTTPParserError else { context.fireErrorCaught(error); return }
        switch reading {
        case .finished, .discarding:
            // Already answering and closing; the rest of the input does not matter.
            reading = .finished
            afterAnswers(context)
        case .waiting, .body:
            let (status, what) = describeParserError(e)
            answerLast(context, .error(status, "malformed HTTP request: \(what)"), version: .http1_1)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // A half-closed client: answer what it sent, then close.
            if case .body(let h, let n) = reading {
                let expected = h.headers.first(name: "content-length") ?? "?"
                answerLast(context, .error(400, "the connection was half-closed before the request body was complete (\(n) of \(expected) bytes); not carried out"),
                           version: h.version)
            } else {
                finishReading(context)
            }
        case let t as RequestTimeout:
            switch (t, reading) {
            case (.body(let limit), .body(let h, let n)):
                let expected = h.headers.first(name: "content-length").map { "\(n) of \($0) bytes received" } ?? "\(n) bytes received"
                answerLast(context, .error(408, "request body not complete within \(describeSeconds(limit)) (\(expected)); not carried out"), version: h.version)
            case (.headers(let limit), .waiting):
                answerLast(context, .error(408, "request headers not complete within \(describeSeconds(limit))"), version: .http1_1)
            default:
                // Already answering (a 413 whose body is still being thrown away, …): just close.
                finishReading(context)
            }
        case is ChannelShouldQuiesceEvent:
            // The server stops: what was read is answered, nothing more is read.
            finishReading(context)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Pauses reading while enough requests wait for their answers (pipelining).
    func read(context: ChannelHandlerContext) {
        if unanswered.count >= limits.maxPipelined {
            readPending = true
        } else {
            context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closed else { promise?.fail(ChannelError.ioOnClosedChannel); return }
        switch unwrapOutboundIn(data) {
        case .head(var head):
            if head.headers.first(name: "connection")?.lowercased() == "close" {
                // The responder ends the connection (an outcome it cannot vouch for).
                closeWhenAnswered = true
                if case .waiting = reading { reading = .finished }
            }
            head.version = unanswered.first ?? head.version
            head.status = HTTPResponseStatus(statusCode: Int(head.status.code))
            let closing = closeWhenAnswered && unanswered.count <= 1 && pending == nil
            head.headers.replaceOrAdd(name: "Connection", value: closing ? "close" : "keep-alive")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let p = promise ?? context.eventLoop.makePromise()
            context.write(data, promise: p)
            lastWrite = p.futureResult
            _ = unanswered.popFirst()
            if readPending && unanswered.count < limits.maxPipelined {
                readPending = false
                context.read()
            }
            afterAnswers(context)
        }
    }

    /// Nothing more is read; the connection closes once what was read is answered.
    private func finishReading(_ context: ChannelHandlerContext) {
        if case .body = reading {
            // Cut short: its body never comes whole, so it is never carried out.
            _ = unanswered.popLast()
            context.fireErrorCaught(HTTPRequestAbandoned())
        }
        reading = .finished
        closeWhenAnswered = true
        afterAnswers(context)
    }

    /// `r` is the connection's last answer, after those already due.
    private func answerLast(_ context: ChannelHandlerContext, _ r: ControlResponse, version: HTTPVersion) {
        pending = (r, version)
        finishReading(context)
    }

    /// Once every request passed on is answered: the guard's own answer, then the close (after
    /// the rest of a refused body is read); or, with the connection kept, the idle timer.
    private func afterAnswers(_ context: ChannelHandlerContext) {
        guard unanswered.isEmpty, !closed else { return }
        if let (r, version) = pending {
            pending = nil
            writeOwn(context, r, version: version)
        } else if !closeWhenAnswered {
            context.triggerUserOutboundEvent(RequestProgress.allAnswered, promise: nil)
            return
        }
        if case .discarding = reading { return }
        close(context)
    }

    private func writeOwn(_ context: ChannelHandlerContext, _ r: ControlResponse, version: HTTPVersion) {
        logger.info("\(name) request refused", metadata: ["\(name).status": "\(r.status)", "\(name).error": "\(r.errorMessage ?? "")"])
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: r.contentType)
        headers.add(name: "Content-Length", value: "\(r.body.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: version, status: HTTPResponseStatus(statusCode: r.status), headers: headers))),
                      promise: nil)
        var buf = context.channel.allocator.buffer(capacity: r.body.count)
        buf.writeBytes(r.body)
        context.write(wrapOutboundOut(.body(.byteBuffer(buf))), promise: nil)
        lastWrite = context.writeAndFlush(wrapOutboundOut(.end(nil)))
    }

    /// Closes after everything written so far has gone out; later writes are refused.
    private func close(_ context: ChannelHandlerContext) {
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
