/// The few HDMI-CEC messages kioskd sends and reads (HDMI 1.4b, supplement 1, "CEC"), as bytes:
/// a header byte (initiator << 4 | destination) followed by the opcode and its operands.
/// Pure values: the adapter code (`CECAdapter`) hands these bytes to CEC_TRANSMIT.
public enum CECOpcode: UInt8, Sendable {
    case featureAbort = 0x00
    case imageViewOn = 0x04
    case standby = 0x36
    case userControlPressed = 0x44
    case userControlReleased = 0x45
    case activeSource = 0x82
    case giveDevicePowerStatus = 0x8F
    case reportPowerStatus = 0x90
}

/// A CEC logical address (0…15).
public struct CECLogicalAddress: Sendable, Equatable, Hashable {
    public let raw: UInt8
    public init(_ raw: UInt8) {
        precondition(raw < 16, "a CEC logical address is 0…15, not \(raw)")
        self.raw = raw
    }
    public static let tv = CECLogicalAddress(0)
    /// As initiator: a device without a claimed address; as destination: every device.
    public static let unregistered = CECLogicalAddress(15)
    public static let broadcast = CECLogicalAddress(15)
}

/// A physical address `a.b.c.d` (the HDMI path from the TV); `f.f.f.f` (0xffff) when there is
/// none, as when a TV in standby drops hot-plug.
public struct CECPhysicalAddress: Sendable, Equatable, CustomStringConvertible {
    public let raw: UInt16
    public init(_ raw: UInt16) { self.raw = raw }
    public static let invalid = CECPhysicalAddress(0xFFFF)
    public var isValid: Bool { raw != 0xFFFF }
    /// "1.0.0.0", "f.f.f.f".
    public var description: String {
        [12, 8, 4, 0].map { String((raw >> UInt16($0)) & 0xF, radix: 16) }.joined(separator: ".")
    }
}

/// A TV's answer to Give Device Power Status (the Report Power Status operand), or `unknown`.
public enum CECPowerStatus: String, Sendable, Equatable, Codable {
    case on, standby
    case toOn = "to-on"
    case toStandby = "to-standby"
    case unknown

    /// The operand of Report Power Status: 0 on, 1 standby, 2 in transition standby → on,
    /// 3 in transition on → standby; anything else is `unknown`.
    public init(operand: UInt8) {
        switch operand {
        case 0: self = .on
        case 1: self = .standby
        case 2: self = .toOn
        case 3: self = .toStandby
        default: self = .unknown
        }
    }
}

/// One CEC message's bytes.
public struct CECMessage: Sendable, Equatable {
    public var bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }

    public init(from: CECLogicalAddress, to: CECLogicalAddress, _ opcode: CECOpcode, _ operands: [UInt8] = []) {
        bytes = [from.raw << 4 | to.raw, opcode.rawValue] + operands
    }

    public var initiator: CECLogicalAddress? { bytes.first.map { CECLogicalAddress($0 >> 4) } }
    public var destination: CECLogicalAddress? { bytes.first.map { CECLogicalAddress($0 & 0xF) } }
    public var opcode: UInt8? { bytes.count > 1 ? bytes[1] : nil }

    /// `<Standby>` to the TV: it goes into standby.
    public static func standby(from: CECLogicalAddress) -> CECMessage { CECMessage(from: from, to: .tv, .standby) }
    /// `<Image View On>` to the TV: it leaves standby and shows its current input. Allowed from
    /// Unregistered (15), so a TV that dropped hot-plug in standby can still be woken.
    public static func imageViewOn(from: CECLogicalAddress) -> CECMessage { CECMessage(from: from, to: .tv, .imageViewOn) }
    /// `<Active Source>` broadcast with our physical address: the TV switches to our input.
    public static func activeSource(from: CECLogicalAddress, physical: CECPhysicalAddress) -> CECMessage {
        CECMessage(from: from, to: .broadcast, .activeSource, [UInt8(physical.raw >> 8), UInt8(physical.raw & 0xFF)])
    }
    /// `<Give Device Power Status>` to the TV; it answers `<Report Power Status>`.
    public static func giveDevicePowerStatus(from: CECLogicalAddress) -> CECMessage {
        CECMessage(from: from, to: .tv, .giveDevicePowerStatus)
    }

    /// The power status in a `<Report Power Status>` message; nil for any other message or a
    /// message too short to hold it.
    public var reportedPowerStatus: CECPowerStatus? {
        guard bytes.count >= 3, bytes[1] == CECOpcode.reportPowerStatus.rawValue else { return nil }
        return CECPowerStatus(operand: bytes[2])
    }

    /// The opcode refused in a `<Feature Abort>` and its reason; nil for any other message.
    public var featureAbort: (opcode: UInt8, reason: UInt8)? {
        guard bytes.count >= 4, bytes[1] == CECOpcode.featureAbort.rawValue else { return nil }
        return (bytes[2], bytes[3])
    }
}

/// What one CEC_TRANSMIT gave back: the kernel's transmit and receive status bits and the reply.
public struct CECTransmitResult: Sendable, Equatable {
    /// CEC_TX_STATUS_* bits.
    public var txStatus: UInt8
    /// CEC_RX_STATUS_* bits (when a reply was waited for).
    public var rxStatus: UInt8
    public var reply: CECMessage?
    public init(txStatus: UInt8, rxStatus: UInt8, reply: CECMessage?) {
        self.txStatus = txStatus; self.rxStatus = rxStatus; self.reply = reply
    }

    // <linux/cec.h>
    public static let txOK: UInt8 = 1 << 0
    public static let txArbitrationLost: UInt8 = 1 << 1
    public static let txNack: UInt8 = 1 << 2
    public static let txLowDrive: UInt8 = 1 << 3
    public static let txError: UInt8 = 1 << 4
    public static let txMaxRetries: UInt8 = 1 << 5
    public static let txAborted: UInt8 = 1 << 6
    public static let txTimeout: UInt8 = 1 << 7
    public static let rxOK: UInt8 = 1 << 0
    public static let rxTimeout: UInt8 = 1 << 1
    public static let rxFeatureAbort: UInt8 = 1 << 2
    public static let rxAborted: UInt8 = 1 << 3

    /// Whether the message reached its destination (the kernel saw it acknowledged).
    public var delivered: Bool { txStatus & Self.txOK != 0 }

    /// Why a message was not delivered, in words; nil when it was.
    public var transmitProblem: String? {
        if delivered { return nil }
        if txStatus & Self.txNack != 0 { return "not acknowledged" }
        if txStatus & Self.txArbitrationLost != 0 { return "the bus was busy (arbitration lost)" }
        if txStatus & Self.txLowDrive != 0 { return "the bus was pulled low" }
        if txStatus & Self.txTimeout != 0 { return "the transmit timed out" }
        if txStatus & Self.txAborted != 0 { return "the transmit was aborted" }
        return "transmit status 0x\(String(txStatus, radix: 16))"
    }
}

/// What asking the TV for its power status found: its status, or why there is none.
public struct CECPowerQuery: Sendable, Equatable {
    public var power: CECPowerStatus
    /// Nil when the TV answered.
    public var error: String?
    public init(power: CECPowerStatus, error: String?) { self.power = power; self.error = error }

    /// The message every kind of silence is reported with.
    public static let noAnswer = "cec: no answer from the TV"

    /// Reads the result of `<Give Device Power Status>` sent to the TV: not acknowledged, no
    /// reply in time, or a `<Feature Abort>` are all "no answer from the TV" (with the detail).
    public init(_ r: CECTransmitResult) {
        if let problem = r.transmitProblem {
            self.init(power: .unknown, error: "\(Self.noAnswer) (Give Device Power Status \(problem))")
        } else if r.rxStatus & CECTransmitResult.rxFeatureAbort != 0 || r.reply?.featureAbort != nil {
            self.init(power: .unknown, error: "\(Self.noAnswer) (it refused Give Device Power Status: Feature Abort)")
        } else if r.rxStatus & CECTransmitResult.rxOK != 0, let p = r.reply?.reportedPowerStatus {
            self.init(power: p, error: nil)
        } else if r.rxStatus & CECTransmitResult.rxTimeout != 0 {
            self.init(power: .unknown, error: "\(Self.noAnswer) (no Report Power Status in time)")
        } else {
            self.init(power: .unknown, error: "\(Self.noAnswer) (receive status 0x\(String(r.rxStatus, radix: 16)))")
        }
    }
}

/// What CEC_ADAP_G_CONNECTOR_INFO says an adapter is linked to.
public enum CECConnector: Sendable, Equatable {
    /// No connector (CEC_CONNECTOR_TYPE_NO_CONNECTOR), or a kernel without the call.
    case none
    /// A DRM connector: the card number (`/dev/dri/cardN`) and the connector's object id.
    case drm(card: UInt32, connectorId: UInt32)
    /// A connector type kioskd does not know.
    case other(UInt32)

    /// From the call's `type`, `card_no` and `connector_id`.
    public init(type: UInt32, card: UInt32, connectorId: UInt32) {
        switch type {
        case 0: self = .none
        case 1: self = .drm(card: card, connectorId: connectorId)
        default: self = .other(type)
        }
    }
}

/// `adapter = "auto"`: the adapter whose connector info names the output's DRM card and connector.
public enum CECAutoMatch {
    /// The path of the one adapter among `adapters` (path and connector info, in any order)
    /// linked to connector `connectorId` of card `card`; nil when none is (or the output has no
    /// connector yet). Two adapters on one connector cannot happen in the kernel; the first in
    /// path order is taken.
    public static func adapter(for card: UInt32, connectorId: UInt32, among adapters: [(path: String, connector: CECConnector)]) -> String? {
        adapters.sorted { cecOrder($0.path, $1.path) }.first { $0.connector == .drm(card: card, connectorId: connectorId) }?.path
    }

    /// `/dev/cec2` before `/dev/cec10`.
    static func cecOrder(_ a: String, _ b: String) -> Bool {
        let na = Int(a.reversed().prefix { $0.isNumber }.reversed().map(String.init).joined()) ?? -1
        let nb = Int(b.reversed().prefix { $0.isNumber }.reversed().map(String.init).joined()) ?? -1
        return na != nb ? na < nb : a < b
    }

    /// The card number of a DRM device path (`/dev/dri/card1` → 1; a by-path link is resolved
    /// by the caller); nil for anything else.
    public static func cardNumber(ofDevicePath path: String) -> UInt32? {
        guard let name = path.split(separator: "/").last, name.hasPrefix("card") else { return nil }
        return UInt32(name.dropFirst(4))
    }
}
