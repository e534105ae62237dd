/// Whether a follower shows a fleet state it received: a pure decision, tested with plain values.
///
/// Invariant: a follower shows only states of its group's primary (`fleet.primary`, when set)
/// whose `seq` a real primary can have reached: `seq` is at most `maxSeq`, and it is ahead of
/// the shown one by at most `jumpBase + jumpPerSecond × seconds since the shown one was taken`
/// (a primary applies each change with one fsync'd write, far fewer than 1 000 a second).
public enum FleetStateRule {
    /// The largest `seq` a state may carry: 2^40, 35 years of 1 000 changes a second.
    public static let maxSeq = 1 << 40
    /// How far a state may be ahead of the one shown, whatever the time since.
    public static let jumpBase = 10_000
    /// How much further it may be ahead per second since the shown state was taken.
    public static let jumpPerSecond = 1_000

    public enum Verdict: Equatable, Sendable {
        /// Newer: show it.
        case show
        /// Not newer than the one shown: keep what is shown (its ids are still answered).
        case older
        /// Forged or from a kiosk that is not the group's primary: ignored, ids included.
        case refused(String)
    }

    /// What is shown now: its `seq`, the primary that published it (nil: none or unknown) and
    /// the seconds since it was taken (nil: unknown, e.g. a record saved by an older kioskd).
    public struct Shown: Equatable, Sendable {
        public var seq: Int
        public var primary: String?
        public var secondsAgo: Double?
        public init(seq: Int, primary: String?, secondsAgo: Double?) {
            self.seq = seq; self.primary = primary; self.secondsAgo = secondsAgo
        }
    }

    /// The verdict on `s` given the configured primary (`expected`, nil: any) and what is shown.
    public static func judge(_ s: FleetCounterState, expected: String?, shown: Shown) -> Verdict {
        judge(seq: s.seq, primary: s.primary, expected: expected, shown: shown)
    }

    /// The verdict on a state (a counter's or a game clock's) with `seq` published by `primary`.
    public static func judge(seq: Int, primary: String?, expected: String?, shown: Shown) -> Verdict {
        if let expected {
            guard let p = primary else {
                return .refused("the state names no primary; fleet.primary is '\(expected)'")
            }
            guard p == expected else {
                return .refused("the state was published by '\(p)', not by the group's primary '\(expected)' (fleet.primary)")
            }
        }
        guard seq >= 0, seq <= maxSeq else {
            return .refused("its seq \(seq) is outside 0…\(maxSeq) (2^40), more than a primary can reach")
        }
        // The configured primary's state replaces one that came from elsewhere (an older kioskd,
        // a forged state kept before fleet.primary was set), whatever their seqs.
        if expected != nil, shown.primary != primary { return .show }
        guard seq > shown.seq else { return .older }
        if let ago = shown.secondsAgo {
            let seconds = max(0, ago)
            let allowed = Double(jumpBase) + Double(jumpPerSecond) * seconds
            if Double(seq - shown.seq) > allowed {
                return .refused("its seq jumps from \(shown.seq) to \(seq), more than the \(Int(allowed)) changes a primary can have applied in the "
                    + "\(Int(seconds)) s since seq \(shown.seq) was shown (\(jumpBase) + \(jumpPerSecond) a second)")
            }
        }
        return .show
    }
}

/// What a primary knows of other primaries in its group: a pure value on monotonic time.
///
/// Invariant: while another kiosk's state (naming a primary other than this one) was seen in the
/// last `holdSeconds`, this primary acknowledges no shared change. Two primaries both republish
/// their states every `holdSeconds / 3` while they see each other, so they keep each other
/// stopped until one of them is no longer a primary; the other resumes `holdSeconds` later.
public struct PrimaryConflict: Sendable, Equatable {
    public static let holdSeconds: Int64 = 30
    /// Other primary's id → when its state was last seen (monotonic ns).
    public private(set) var lastSeen: [String: Int64] = [:]
    public init() {}

    public mutating func saw(_ id: String, atNs: Int64) { lastSeen[id] = atNs }

    /// The other primaries seen in the last `holdSeconds`, sorted; empty: this one is alone.
    public func others(atNs: Int64) -> [String] {
        lastSeen.filter { atNs - $0.value < Self.holdSeconds * 1_000_000_000 }.keys.sorted()
    }

    /// Forgets primaries not seen in the last `holdSeconds`.
    public mutating func expire(atNs: Int64) {
        lastSeen = lastSeen.filter { atNs - $0.value < Self.holdSeconds * 1_000_000_000 }
    }
}
