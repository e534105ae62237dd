import NIOConcurrencyHelpers
import NIOCore

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
