import FoundationEssentials
import Glibc
import KioskControl
import NIOConcurrencyHelpers
import NIOCore

/// The open live streams (`GET /api/events`, server-sent events). Each has a bounded queue
/// (`WebLimits.streamQueue` events): the daemon's thread only appends to it, never waits; a
/// reader that falls that far behind is dropped (its connection closed). Thread-safe.
final class WebStreams: Sendable {
    struct Stream {
        let continuation: AsyncStream<ByteBuffer>.Continuation
        let channel: any Channel
        let device: String
    }
    private let limits: WebLimits
    private let state = NIOLockedValueBox<(next: Int, open: [Int: Stream])>((0, [:]))

    init(limits: WebLimits) { self.limits = limits }

    var count: Int { state.withLockedValue { $0.open.count } }

    /// Registers a stream; nil when `maxStreams` are open.
    func add(device: String, channel: any Channel) -> (id: Int, events: AsyncStream<ByteBuffer>)? {
        let (events, continuation) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingOldest(limits.streamQueue))
        let id: Int? = state.withLockedValue { s in
            guard s.open.count < limits.maxStreams else { return nil }
            s.next += 1
            s.open[s.next] = Stream(continuation: continuation, channel: channel, device: device)
            return s.next
        }
        guard let id else { return nil }
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        return (id, events)
    }

    func remove(_ id: Int) {
        _ = state.withLockedValue { $0.open.removeValue(forKey: id) }
    }

    /// Queues `bytes` on stream `id`; a full queue drops the reader.
    func send(_ bytes: ByteBuffer, to id: Int) {
        guard let s = state.withLockedValue({ $0.open[id] }) else { return }
        if case .dropped = s.continuation.yield(bytes) { drop(id, s, why: "fell \(limits.streamQueue) events behind") }
    }

    /// Ends stream `id` (a revoked device): its response ends and the connection closes.
    func end(_ id: Int) {
        guard let s = state.withLockedValue({ $0.open.removeValue(forKey: id) }) else { return }
        s.continuation.finish()
        s.channel.close(promise: nil)
    }

    private func drop(_ id: Int, _ s: Stream, why: String) {
        remove(id)
        s.continuation.finish()
        // The writer may be waiting for the slow reader: closing the connection ends it.
        s.channel.close(promise: nil)
    }

    /// Ends every stream (the server is stopping).
    func closeAll() {
        let all = state.withLockedValue { s -> [Stream] in defer { s.open = [:] }; return Array(s.open.values) }
        for s in all { s.continuation.finish() }
    }

    /// Sends a comment line on every stream every `keepAlive`, until cancelled.
    func keepAliveLoop() async {
        let line = ByteBuffer(string: ": keep-alive\n\n")
        while !Task.isCancelled {
            do { try await Task.sleep(nanoseconds: UInt64(limits.keepAlive.nanoseconds)) } catch { return }
            let ids = state.withLockedValue { Array($0.open.keys) }
            for id in ids { send(line, to: id) }
        }
    }

    /// One event in the SSE format (`event: NAME`, `data: JSON`, blank line).
    static func format(_ e: WebEvent) -> ByteBuffer {
        var b = ByteBuffer()
        b.writeString("event: \(e.name)\ndata: ")
        b.writeBytes(e.json)
        b.writeString("\n\n")
        return b
    }
}
