import FoundationEssentials
import KioskControl
import KioskCore

/// One change of a shared counter, sent to the group's primary on
/// `kioskd/group/GROUP/counter/NAME/cmd` (QoS 1).
public struct FleetCommand: Codable, Sendable, Equatable {
    public enum Op: String, Codable, Sendable, Equatable { case inc, dec, set, reset }
    public var op: Op
    public var value: Int?
    /// Unique per change: the primary applies each id once.
    public var id: String
    public init(op: Op, value: Int? = nil, id: String) { self.op = op; self.value = value; self.id = id }
}

/// A shared counter's state, published by the primary on `kioskd/group/GROUP/counter/NAME`
/// (retained, QoS 1) after every command it applied.
public struct FleetCounterState: Codable, Sendable, Equatable {
    public var value: Int
    /// Grows by one with every applied command; followers show the highest.
    public var seq: Int
    /// Ids of commands this state contains: the latest applied ones and a redelivered one.
    public var ids: [String]
    /// Commands the primary refused (id → the reason); they changed nothing.
    public var refused: [String: String]?
    /// The kiosk id of the primary that published it (followers with `fleet.primary` show only
    /// its states; a primary that sees another's stops acknowledging). Nil from older kioskd.
    public var primary: String?
    public init(value: Int, seq: Int, ids: [String], refused: [String: String]? = nil, primary: String? = nil) {
        self.value = value; self.seq = seq; self.ids = ids; self.refused = refused; self.primary = primary
    }
}

/// The answer to a change made on a follower that the primary has not confirmed in time
/// (HTTP 202): the change is queued and resent until the primary confirms it.
public struct FleetPendingAnswer: Codable, Sendable, Equatable {
    public var ok = false
    public var pending = true
    public var counter: String
    public var id: String
    public var message: String
}

/// What the fleet needs of MQTT: QoS 1 publish, subscribe, and the connection's ups and downs.
/// `MQTTClient` in the daemon; a fake in tests.
public protocol FleetTransport: AnyObject {
    var isConnected: Bool { get }
    /// `handler` is called with true on every connect and false on every loss.
    func onConnectionChange(_ handler: @escaping (Bool) -> Void)
    /// Publishes at QoS 1 (sent now, or queued while disconnected). Returns why it was refused, nil when taken.
    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) -> String?
    /// `retained`: the broker's retained message, delivered because of the subscription (not a
    /// publish made while subscribed).
    func subscribe(_ filter: String, _ handler: @escaping (_ topic: String, _ payload: [UInt8], _ retained: Bool) -> Void)
}

extension FleetCommand {
    /// The command asking for `edit` (the group's wire form of a change).
    public init(_ edit: CounterEdit, id: String) {
        self.init(op: edit.fleetOp, value: { if case .set(let v) = edit { return v } else { return nil } }(), id: id)
    }

    /// The edit the command asks for; a `set` without a value is refused (naming the counter).
    public func edit(counter: String) throws -> CounterEdit {
        switch op {
        case .inc: return .increment
        case .dec: return .decrement
        case .reset: return .reset
        case .set:
            guard let value else { throw KioskError.control("counter '\(counter)': \"set\" needs a \"value\"") }
            return .set(value)
        }
    }
}

extension CounterEdit {
    /// The operation of the group's command for this edit.
    var fleetOp: FleetCommand.Op {
        switch self {
        case .increment: return .inc
        case .decrement: return .dec
        case .reset: return .reset
        case .set: return .set
        }
    }
}
