import NIOCore

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
