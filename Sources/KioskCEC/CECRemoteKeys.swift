/// A TV remote's key as CEC carries it (HDMI 1.4b CEC, "Remote Control Pass Through"): the TV
/// sends `<User Control Pressed>` with a UI command code while a key is down and `<User Control
/// Released>` when it is let go. Pure values: the CEC link reads them from the adapter (follower
/// mode, CEC_RECEIVE) and `CECFollower` decides what each message does.
public enum CECRemoteKey: Sendable, Equatable {
    /// `<User Control Pressed>` (0x44) and its UI command code (0x01 Up, 0x20 the digit 0, …).
    case pressed(uiCommand: UInt8)
    /// `<User Control Released>` (0x45): the key held is let go.
    case released

    /// From a received message; nil for any other message, and for a `<User Control Pressed>`
    /// without its operand.
    public init?(_ message: CECMessage) {
        switch message.opcode {
        case CECOpcode.userControlPressed.rawValue:
            guard message.bytes.count >= 3 else { return nil }
            self = .pressed(uiCommand: message.bytes[2])
        case CECOpcode.userControlReleased.rawValue:
            self = .released
        default:
            return nil
        }
    }
}

/// Which keyboard key a remote's UI command stands for, so that scenes and `[input]` keymaps
/// take the remote's keys as the keyboard's: arrows as the arrow keys, Select as Enter, Back
/// (Exit) as Esc, the digits as the digit row, Channel up/down as Page Up/Down and the four
/// coloured keys as KEY_RED…KEY_BLUE (evdev codes, linux/input-event-codes.h).
public enum CECKeyMap {
    /// The evdev key code for a UI command code; nil for the commands kioskd does not map
    /// (playback, volume, power and the rest, which stay the TV's).
    public static func keyCode(uiCommand: UInt8) -> UInt16? {
        switch uiCommand {
        case 0x00: return 28 // Select → KEY_ENTER
        case 0x01: return 103 // Up → KEY_UP
        case 0x02: return 108 // Down → KEY_DOWN
        case 0x03: return 105 // Left → KEY_LEFT
        case 0x04: return 106 // Right → KEY_RIGHT
        case 0x0D: return 1 // Exit (Back) → KEY_ESC
        case 0x20: return 11 // 0 → KEY_0
        case 0x21...0x29: return UInt16(uiCommand - 0x21) + 2 // 1…9 → KEY_1 (2) … KEY_9 (10)
        case 0x30: return 104 // Channel Up → KEY_PAGEUP
        case 0x31: return 109 // Channel Down → KEY_PAGEDOWN
        case 0x71: return 401 // F1 (Blue) → KEY_BLUE
        case 0x72: return 398 // F2 (Red) → KEY_RED
        case 0x73: return 399 // F3 (Green) → KEY_GREEN
        case 0x74: return 400 // F4 (Yellow) → KEY_YELLOW
        default: return nil
        }
    }
}
