import HummingbirdCore
import KioskControl
import KioskCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The HTTP stack of every kioskd listener (the control socket, the phone page): Hummingbird's
/// HTTP/1.1 channel with the rules of `ControlLimits` in front of it, written once here:
/// the connection cap (`ConnectionLimitHandler`) and the idle/header/body timers
/// (`RequestTimeoutHandler`) on raw bytes, and `HTTPGuard` right after the HTTP parser (body
/// size, pipelining order, half-closes, 408/413/431/400 answers, closing, draining on stop).
/// `name` ("control", "web") is the word the answers and logs use.
public struct GuardedHTTP1Channel: ServerChildChannel {
    public typealias Value = HTTP1Channel.Value
    let http1: HTTP1Channel
    let name: String
    let limits: ControlLimits
    let limiter: ConnectionLimiter
    let logger: Logger
    let refusal: [UInt8]
    let onClose: (@Sendable (any Channel) -> Void)?
    let unserved = UnservedConnections()

    /// `onClose` is called once for each admitted connection, when it closes.
    public init(responder: @escaping HTTPChannelHandler.Responder, name: String, limits: ControlLimits, limiter: ConnectionLimiter,
                logger: Logger, onClose: (@Sendable (any Channel) -> Void)? = nil) {
        self.http1 = HTTP1Channel(responder: responder)
        self.name = name
        self.limits = limits
        self.limiter = limiter
        self.logger = logger
        self.onClose = onClose
        self.refusal = rawHTTPResponse(.error(503, "too many \(name) connections: at most \(limiter.maxConnections) at once; try again later"),
                                       reason: "Service Unavailable")
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(ConnectionLimitHandler(limiter: limiter, refusal: refusal, wait: limits.overCapWait))
            try sync.addHandler(RequestTimeoutHandler(limits: limits))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        if let onClose { channel.closeFuture.whenComplete { _ in onClose(channel) } }
        let (limits, name, ownLogger) = (self.limits, self.name, self.logger)
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let sync = channel.pipeline.syncOperations
            // Right after the parser (the response encoder sits before it).
            let decoder = try sync.context(handlerType: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try sync.addHandler(HTTPGuard(limits: limits, name: name, logger: ownLogger), position: .after(decoder.handler))
            unserved.hold(value)
            return value
        }
    }

    public func handle(value: Value, logger: Logger) async {
        unserved.claim(value)
        await http1.handle(value: value, logger: logger)
    }
}

/// The connections set up but not yet handed to `handle`. A connection accepted while the
/// listener closes is set up and then dropped by the server without being served; NIO traps
/// when the last reference to its writer goes without `finish()` ("Deinited NIOAsyncWriter
/// without calling finish()", apple/swift-nio#2813). Held here until served, or finished here
/// when it closes unserved (the connection cap closes it at stop).
final class UnservedConnections: Sendable {
    typealias Value = HTTP1Channel.Value
    private let held = NIOLockedValueBox<[ObjectIdentifier: Value]>([:])

    /// Keeps `value` until `claim`, or finishes it when its connection closes unserved.
    func hold(_ value: Value) {
        let id = ObjectIdentifier(value.channel)
        held.withLockedValue { $0[id] = value }
        value.channel.closeFuture.whenComplete { [self] _ in
            held.withLockedValue { $0.removeValue(forKey: id) }?.outbound.finish()
        }
    }

    /// The server serves `value`: it finishes the writer itself.
    func claim(_ value: Value) {
        held.withLockedValue { _ = $0.removeValue(forKey: ObjectIdentifier(value.channel)) }
    }

}
