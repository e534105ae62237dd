/// Recognises another client connecting with the same client id: a pure value on monotonic time.
///
/// A broker that gets a second CONNECT with a client id already connected closes the older
/// connection (MQTT 3.1.1 §3.1.4; MQTT 5 says so with DISCONNECT reason 0x8E "session taken
/// over"). Two such clients take turns: each connection is lost within moments of its CONNACK.
/// Invariant: after `threshold` connections in a row each lost less than `shortSessionNs` after
/// it was accepted, a takeover is suspected (reported once per spell) and the next connect waits
/// `backoffInitial × 2^(short connections − 1)`, at most `backoffMax`. The spell ends with a
/// connection that lasts `shortSessionNs` (before the suspicion) or, once suspected, longer than
/// the other client's longest retry delay plus `shortSessionNs`: a duplicate backing off the
/// same way would have taken the session back by then.
public struct TakeoverDetector: Sendable, Equatable {
    public static let shortSessionNs: Int64 = 5_000_000_000
    public static let threshold = 3
    /// Connections in a row lost within `shortSessionNs` of their CONNACK.
    public private(set) var shortInARow = 0
    public private(set) var suspected = false
    public init() {}

    /// A connection accepted at `connectedNs` was lost at `lostNs`; `longestRetryNs` is the
    /// longest delay between connects (`backoffMax`). Returns true when this loss starts a
    /// suspected takeover (the moment to log it, once).
    public mutating func lost(connectedNs: Int64, lostNs: Int64, longestRetryNs: Int64) -> Bool {
        let short = suspected ? Swift.max(Self.shortSessionNs, longestRetryNs + Self.shortSessionNs) : Self.shortSessionNs
        guard lostNs - connectedNs < short else {
            shortInARow = 0
            suspected = false
            return false
        }
        shortInARow += 1
        guard shortInARow >= Self.threshold, !suspected else { return false }
        suspected = true
        return true
    }

    /// The delay before the next connect after a lost connection (before jitter): the initial
    /// backoff doubled per short connection in a row, at most `max`.
    public func delay(initial: Int64, max: Int64) -> Int64 {
        var d = initial
        for _ in 0..<Swift.max(0, Swift.min(shortInARow - 1, 62)) { d = d > max / 2 ? max : d * 2 }
        return Swift.min(d, max)
    }
}
