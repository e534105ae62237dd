import Foundation
import KioskControl
import NIOConcurrencyHelpers
import NIOCore

/// Every limit of the control interface in one place (documented in docs/control.md, "Guarantees
/// and limits"). The handlers below and `HTTPGuard` (HTTPStack.swift) take their values from here, so
/// both HTTP listeners (the control socket and the web page, `GuardedHTTP1Channel`) get them.
public struct ControlLimits: Sendable, Equatable {
    /// Connections served at once. A connection over the cap is answered 503 (naming the cap)
    /// as soon as it sends its request (or after `overCapWait`) and closed; at most as many
    /// connections again wait for that answer, further ones are closed at once. So clients can
    /// never hold more than twice this many descriptors.
    public var maxConnections = 64
    /// How long a connection over the cap may take to send its request before it gets the 503.
    public var overCapWait: TimeAmount = .seconds(1)
    /// A connection with no request in progress that sends nothing for this long is closed
    /// (without an answer: there is nothing to answer).
    public var idleTimeout: TimeAmount = .seconds(30)
    /// From the first byte of a request to the end of its headers; then 408.
    public var headerTimeout: TimeAmount = .seconds(10)
    /// From the end of the headers to the end of the body; then 408.
    public var bodyTimeout: TimeAmount = .seconds(10)
    /// A complete request must be started by the render loop within this; otherwise it is
    /// dropped (never carried out) and answered 503.
    public var requestTimeout: TimeAmount = .seconds(5)
    /// A request the render loop has started is waited for this long; then 504 (outcome unknown).
    public var resultTimeout: TimeAmount = .seconds(30)
    /// Largest request body.
    public var maxBodyBytes = ControlRouter.maxBodyBytes
    /// After a 413, the rest of the too-large body is read and thrown away (so the client can
    /// finish sending and read the answer) up to this many bytes; beyond, the connection is closed.
    public var maxDiscardBytes = 4 << 20
    /// Complete requests read ahead on one connection (pipelining) before reading pauses.
    public var maxPipelined = 16
    /// On stop: how long accepted requests get to be carried out and answered.
    public var drainTimeout: TimeAmount = .seconds(2)
    /// Connections waiting to be accepted (listen(2) backlog).
    public var backlog: Int32 = 32

    public init() {}

    /// The answer to a request body larger than `maxBodyBytes`.
    public var bodyTooLargeAnswer: ControlResponse { .error(413, "request body too large: at most \(maxBodyBytes) bytes") }

    /// Headers larger than this are refused with 431 (the HTTP parser's fixed limit).
    public static let maxHeaderBytes = 80 * 1024
}

/// Seconds as people read them: "0.3 s", "5 s".
public func describeSeconds(_ t: TimeAmount) -> String {
    let s = Double(t.nanoseconds) / 1e9
    return s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
}

/// A complete HTTP/1.1 answer as bytes, for handlers that sit below the HTTP codec.
public func rawHTTPResponse(_ r: ControlResponse, reason: String) -> [UInt8] {
    let head = "HTTP/1.1 \(r.status) \(reason)\r\nContent-Type: \(r.contentType)\r\nContent-Length: \(r.body.count)\r\nConnection: close\r\n\r\n"
    return Array(head.utf8) + r.body
}

/// Counts the open connections of one listener and keeps them, so a stopping server can reach
/// each one; also counts the connections over the cap still waiting for their refusal.
/// Thread-safe (connections may live on several event loops).
public final class ConnectionLimiter: Sendable {
    public enum Admission: Sendable { case admitted, refuse, drop }
    public let maxConnections: Int
    private struct State {
        var open: [ObjectIdentifier: any Channel] = [:]
        var refusing = 0
    }
    private let state = NIOLockedValueBox(State())

    public init(maxConnections: Int) { self.maxConnections = maxConnections }

    /// Admits `channel` when there is room; otherwise it is to be refused with an answer (while
    /// fewer than `maxConnections` are being refused) or dropped.
    func admit(_ channel: any Channel) -> Admission {
        let cap = maxConnections
        return state.withLockedValue { s in
            if s.open.count < cap {
                s.open[ObjectIdentifier(channel)] = channel
                return .admitted
            }
            guard s.refusing < cap else { return .drop }
            s.refusing += 1
            return .refuse
        }
    }

    func remove(_ channel: any Channel) {
        state.withLockedValue { _ = $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func refused() { state.withLockedValue { $0.refusing -= 1 } }

    public var count: Int { state.withLockedValue { $0.open.count } }
    public var channels: [any Channel] { state.withLockedValue { Array($0.open.values) } }
}

/// First handler of a connection (raw bytes): admits it through a `ConnectionLimiter`, or
/// refuses it: `refusal` is written once the client has sent something (clients expect the
/// answer after their request) or after `wait`, the connection's output is closed, what the
/// client still sends is thrown away, and the connection is closed when the client closes it
/// (at most `wait` later). Nothing of a refused connection is passed on.
public final class ConnectionLimitHandler: ChannelInboundHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer

    private enum State { case new, admitted, refusing, refused, dropped }
    private let limiter: ConnectionLimiter
    private let refusal: [UInt8]
    private let wait: TimeAmount
    private var state = State.new
    private var timer: Scheduled<Void>?

    public init(limiter: ConnectionLimiter, refusal: [UInt8], wait: TimeAmount = .seconds(1)) {
        self.limiter = limiter
        self.refusal = refusal
        self.wait = wait
    }

    public func channelActive(context: ChannelHandlerContext) {
        switch limiter.admit(context.channel) {
        case .admitted:
            state = .admitted
            context.fireChannelActive()
        case .refuse:
            state = .refusing
            let ctx = context.loopBound
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: wait) { [self] in
                timer = nil
                guard state == .refusing else { ctx.value.close(promise: nil); return }
                // Nothing was sent: answer and close at once (nothing unread, a clean end).
                state = .refused
                var buf = ctx.value.channel.allocator.buffer(capacity: refusal.count)
                buf.writeBytes(refusal)
                ctx.value.writeAndFlush(NIOAny(buf)).whenComplete { _ in ctx.value.close(promise: nil) }
            }
        case .drop:
            state = .dropped
            context.close(promise: nil)
        }
    }

    private func refuse(_ context: ChannelHandlerContext) {
        state = .refused
        var buf = context.channel.allocator.buffer(capacity: refusal.count)
        buf.writeBytes(refusal)
        let ctx = context.loopBound
        context.writeAndFlush(NIOAny(buf)).whenComplete { _ in ctx.value.close(mode: .output, promise: nil) }
        if timer == nil {
            timer = context.eventLoop.assumeIsolated().scheduleTask(in: wait) { ctx.value.close(promise: nil) }
        }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .admitted: context.fireChannelRead(data)
        case .refusing: refuse(context)
        case .new, .refused, .dropped: break
        }
    }

    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if state == .admitted {
            context.fireUserInboundEventTriggered(event)
        } else if case ChannelEvent.inputClosed = event {
            guard state == .refusing else { context.close(promise: nil); return }
            // The client has sent all it will: answer, then close.
            state = .refused
            var buf = context.channel.allocator.buffer(capacity: refusal.count)
            buf.writeBytes(refusal)
            let ctx = context.loopBound
            context.writeAndFlush(NIOAny(buf)).whenComplete { _ in ctx.value.close(promise: nil) }
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        switch state {
        case .admitted: limiter.remove(context.channel)
        case .refusing, .refused: limiter.refused()
        case .new, .dropped: break
        }
        state = .dropped
        context.fireChannelInactive()
    }
}

/// What the HTTP layer tells `RequestTimeoutHandler` (outbound user events).
public enum RequestProgress: Sendable {
    /// A request's headers are complete (its body timer starts).
    case headReceived
    /// A request is complete.
    case requestComplete
    /// Every request read so far is answered (the idle timer starts).
    case allAnswered
}

/// What `RequestTimeoutHandler` tells the HTTP layer (inbound user event): a request did not
/// arrive in time; answer 408 and close.
public enum RequestTimeout: Sendable, Equatable {
    case headers(TimeAmount)
    case body(TimeAmount)
}

/// Times the reading side of an HTTP connection (placed on raw bytes, before the codec):
/// idle (nothing sent, nothing in progress) → close; headers begun but not complete within
/// `headerTimeout`, or a body not complete within `bodyTimeout` → `RequestTimeout` event.
/// The HTTP layer reports progress with `RequestProgress` outbound events.
public final class RequestTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = ByteBuffer
    public typealias InboundOut = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private enum Reading { case waiting(sawBytes: Bool), body }
    private let idleTimeout: TimeAmount
    private let headerTimeout: TimeAmount
    private let bodyTimeout: TimeAmount
    private var reading = Reading.waiting(sawBytes: false)
    private var answering = false
    private var timer: Scheduled<Void>?

    public init(idleTimeout: TimeAmount, headerTimeout: TimeAmount, bodyTimeout: TimeAmount) {
        self.idleTimeout = idleTimeout
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
    }

    public convenience init(limits: ControlLimits) {
        self.init(idleTimeout: limits.idleTimeout, headerTimeout: limits.headerTimeout, bodyTimeout: limits.bodyTimeout)
    }

    public func channelActive(context: ChannelHandlerContext) {
        rearm(context)
        context.fireChannelActive()
    }

    public func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    public func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .waiting(sawBytes: false) = reading {
            reading = .waiting(sawBytes: true)
            rearm(context)
        }
        context.fireChannelRead(data)
    }

    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let p = event as? RequestProgress else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        switch p {
        case .headReceived: reading = .body
        case .requestComplete: reading = .waiting(sawBytes: false); answering = true
        case .allAnswered:
            answering = false
            // Only the idle timer depends on this; a body or header timer keeps running.
            guard case .waiting(sawBytes: false) = reading else { promise?.succeed(()); return }
        }
        rearm(context)
        promise?.succeed(())
    }

    /// One timer for the current state: body, headers, idle, or none while answering.
    private func rearm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        let fire: (TimeAmount, RequestTimeout?)
        switch reading {
        case .body: fire = (bodyTimeout, .body(bodyTimeout))
        case .waiting(sawBytes: true): fire = (headerTimeout, .headers(headerTimeout))
        case .waiting(sawBytes: false):
            guard !answering else { return }
            fire = (idleTimeout, nil)
        }
        let ctx = context.loopBound
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: fire.0) { [self] in
            timer = nil
            reading = .waiting(sawBytes: false)
            answering = true
            if let event = fire.1 {
                ctx.value.fireUserInboundEventTriggered(event)
            } else {
                ctx.value.close(promise: nil)
            }
        }
    }
}
