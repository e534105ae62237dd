import FoundationEssentials
import Glibc
import KioskControl
import NIOCore

/// Every limit of the control interface in one place (documented in docs/control.md, "Guarantees
/// and limits"). `ConnectionLimitHandler`, `RequestTimeoutHandler` and `HTTPGuard` take their
/// values from here, so both HTTP listeners (the control socket and the web page,
/// `GuardedHTTP1Channel`) get them.
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
