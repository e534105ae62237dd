/// The one writer of the small warning drawn in a screen's corner ("state not saved · offline"):
/// each source sets or clears its own text under its key; what is drawn is every text set, in
/// the keys' order, joined by " · " (nil: nothing set), handed to `show` only when it changes.
/// On the render loop.
public final class CornerWarnings {
    /// A source of a corner warning, ordered as drawn.
    public struct Key: Hashable, Comparable, Sendable {
        public let rank: Int
        public let name: String
        public init(rank: Int, name: String) {
            self.rank = rank
            self.name = name
        }
        public static func < (a: Key, b: Key) -> Bool { (a.rank, a.name) < (b.rank, b.name) }

        /// The state store cannot keep what is changed ("state not saved").
        public static let state = Key(rank: 0, name: "state")
        /// The fleet's broker is out of reach ("offline").
        public static let fleetOffline = Key(rank: 10, name: "fleet.offline")
        /// Another primary in the fleet group ("two primaries").
        public static let fleetPrimaries = Key(rank: 11, name: "fleet.primaries")
    }

    private var texts: [Key: String] = [:]
    private let show: (String?) -> Void
    /// What is drawn now.
    public private(set) var text: String?

    /// `show` draws the merged text (every output's corner).
    public init(show: @escaping (String?) -> Void) { self.show = show }

    /// Sets (or clears, with nil) the text of `key`.
    public func set(_ key: Key, _ text: String?) {
        texts[key] = text
        let merged = texts.keys.sorted().compactMap { texts[$0] }.joined(separator: " · ")
        let now: String? = merged.isEmpty ? nil : merged
        guard now != self.text else { return }
        self.text = now
        show(now)
    }

    /// The text of `key` (nil: not set).
    public func text(of key: Key) -> String? { texts[key] }
}
