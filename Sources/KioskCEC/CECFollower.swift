import KioskCore

/// What kioskd does with a message the TV (or another device) sent to it, as a follower on its
/// adapter (CEC_MODE_FOLLOWER): the kernel answers the core messages itself (versions, physical
/// address, vendor id, OSD name) and hands over the rest, which a follower must answer.
public enum CECFollowerAction: Sendable, Equatable {
    /// A remote key went down, repeated or came up: the evdev key code and its new state.
    case key(code: UInt16, state: KeyState)
    /// A remote key this output maps to nothing (`uiCommand`): ignored (logged at debug level).
    case unmappedKey(uiCommand: UInt8)
    /// An answer to send (Report Power Status, or Feature Abort for what kioskd does not do).
    case reply(CECMessage)
    /// Nothing to do (broadcasts, Feature Abort, a release with no key held).
    case none
}

/// A follower's answers and the remote key held, for one adapter. Pure: the CEC link feeds it the
/// messages it receives.
public struct CECFollower: Sendable {
    public var keys: CECRemoteKeyMap
    /// The key held down (its code), from its `<User Control Pressed>` to the `<User Control Released>`.
    private var held: (uiCommand: UInt8, code: UInt16?)?

    public init(keys: CECRemoteKeyMap) { self.keys = keys }

    /// `<Feature Abort>` reason "unrecognized opcode".
    static let abortUnrecognized: UInt8 = 0

    /// What to do with `message` received at logical address `own`, the panel being lit or
    /// blanked. A new key pressed while another is held lets the old one go first.
    public mutating func receive(_ message: CECMessage, own: CECLogicalAddress?, lit: Bool) -> [CECFollowerAction] {
        guard let opcode = message.opcode, let from = message.initiator, let to = message.destination,
              to != .broadcast else { return [.none] }
        if let key = CECRemoteKey(message) {
            switch key {
            case .pressed(let ui):
                if let h = held, h.uiCommand == ui { return h.code.map { [.key(code: $0, state: .repeated)] } ?? [.none] }
                var out = release()
                let code = keys.keyCode(uiCommand: ui)
                held = (ui, code)
                out.append(code.map { .key(code: $0, state: .pressed) } ?? .unmappedKey(uiCommand: ui))
                return out
            case .released:
                let out = release()
                return out.isEmpty ? [.none] : out
            }
        }
        switch opcode {
        case CECOpcode.featureAbort.rawValue:
            return [.none]
        case CECOpcode.giveDevicePowerStatus.rawValue:
            guard let own else { return [.none] }
            return [.reply(CECMessage(from: own, to: from, .reportPowerStatus, [lit ? 0 : 1]))]
        default:
            // A follower answers what it does not do (the kernel no longer does it for us).
            guard let own else { return [.none] }
            return [.reply(CECMessage(from: own, to: from, .featureAbort, [opcode, Self.abortUnrecognized]))]
        }
    }

    /// Lets the held key go (also when the link loses its adapter).
    public mutating func release() -> [CECFollowerAction] {
        defer { held = nil }
        guard let code = held?.code else { return [] }
        return [.key(code: code, state: .released)]
    }
}
