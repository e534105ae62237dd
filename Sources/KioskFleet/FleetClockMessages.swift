import FoundationEssentials
import KioskComponent
import KioskControl
import KioskCore

/// A game clock's state, published by the primary on `kioskd/group/GROUP/clock/SCENE`
/// (retained, QoS 1) after every change it kept, on every connect and when its system clock's
/// synchronisation changes. Judged by followers as counter states are (`FleetStateRule`).
public struct FleetClockState: Codable, Sendable, Equatable {
    /// The kiosk id of the primary that published it.
    public var primary: String?
    /// Grows by one with every kept change; followers show the highest.
    public var seq: Int
    /// Ids of the latest commands this state contains (a follower's change is confirmed by it).
    public var ids: [String]
    /// Commands the primary refused (id → the reason); they changed nothing.
    public var refused: [String: String]?
    /// Whether the primary's system clock is synchronised (false: its realtime instants may be
    /// wrong, and followers show a warning in place of the time).
    public var synced: Bool
    /// The clock: followers read its realtime instants only ("running since T with R left").
    public var clock: GameClockRecord
    public init(primary: String?, seq: Int, ids: [String], refused: [String: String]? = nil, synced: Bool, clock: GameClockRecord) {
        self.primary = primary; self.seq = seq; self.ids = ids; self.refused = refused; self.synced = synced; self.clock = clock
    }
}

/// One change of a game clock sent to the group's primary on
/// `kioskd/group/GROUP/clock/SCENE/cmd` (QoS 1): the words of `kioskctl clock`.
public struct FleetClockCommand: Codable, Sendable, Equatable {
    public var id: String
    public var intent: [String]
    public init(id: String, intent: [String]) { self.id = id; self.intent = intent }
}

/// The fleet's game clocks: what each kiosk knows of them. On the loop.
final class FleetClockBook {
    /// What is kept per clock (state key `fleet.GROUP.clock.SCENE`): the seq of the state shown
    /// (primary: published), the latest command ids it contains (primary), and on a follower the
    /// primary whose state it is and when it was taken (realtime ns).
    struct Kept: Codable, Equatable {
        var seq = 0
        var ids: [String] = []
        var primary: String?
        var takenNs: Int64?
    }
    /// The ids a primary remembers (and lists in each state) per clock.
    static let idLimit = 64

    var clocks: SharedClocks?
    var kept: [String: Kept] = [:]
    /// (Follower) the primary's last record shown per clock, and whether its clock was synchronised.
    var records: [String: GameClockRecord] = [:]
    var primarySynced: [String: Bool] = [:]

    struct Pending {
        var scene: String
        var command: FleetClockCommand
        var reply: ((ControlResponse) -> Void)?
        var timer: TimerID?
        var sentNs: Int64?
    }
    /// (Follower) changes sent to the primary and not yet confirmed, and their order.
    var pending: [String: Pending] = [:]
    var order: [String] = []
    var retryTimer: TimerID?
    var serial = 0
    /// Refused states: when one was last logged (monotonic ns) and how many since.
    var refusalLog: (atNs: Int64, suppressed: Int)?
}
