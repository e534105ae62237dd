/// When the MQTT client connects again after a failed or lost connection: a value with no clock,
/// socket or random source of its own, so that the rule is tested exactly (the client supplies
/// the count, the takeover detector and the random fraction, and arms the timer).
public struct ReconnectBackoff: Sendable, Equatable {
    /// The first delay (ns).
    public let initial: Int64
    /// The longest delay (ns), also the pace after the broker refused the login.
    public let max: Int64

    public init(initial: Int64, max: Int64) {
        self.initial = initial
        self.max = max
    }

    /// The delay (ns) before the next attempt. After a refusal: `max`. After connections lost
    /// right after their CONNACK (`takeover.shortInARow > 0`, another client with this id):
    /// the takeover's own growing delay, since a quick reconnect would take the session back at
    /// once. Otherwise `initial` doubled for each of the `failures` in a row after the first, up
    /// to `max`. Each delay but the refusal's is made shorter by `fraction` (0 ..< 1, random) of
    /// a fifth, so that a fleet does not reconnect in step; each still exceeds the previous one
    /// until the ceiling.
    public func delay(failures: Int, refused: Bool, takeover: TakeoverDetector, fraction: Double) -> Int64 {
        if refused { return max }
        let nominal: Int64
        if takeover.shortInARow > 0 {
            nominal = takeover.delay(initial: initial, max: max)
        } else {
            var d = initial
            for _ in 0..<Swift.min(Swift.max(failures - 1, 0), 62) {
                d = d > max / 2 ? max : d * 2
            }
            nominal = Swift.min(d, max)
        }
        return nominal - Int64(Double(nominal) * 0.2 * fraction)
    }
}
