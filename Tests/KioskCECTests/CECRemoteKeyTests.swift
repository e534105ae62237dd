import KioskCore
import Testing
@testable import KioskCEC

// The messages are written as `cec-ctl --trace` shows a TV (logical address 0) sending them to
// Playback device 1 (4); the keys expected are found by name in the evdev table (KeyCode), not
// by the map's numbers.
@Suite struct CECRemoteKeyTests {
    @Test func userControlPressedAndReleasedAreRead() {
        #expect(CECRemoteKey(CECMessage(bytes: [0x04, 0x44, 0x01])) == .pressed(uiCommand: 0x01))
        #expect(CECRemoteKey(CECMessage(bytes: [0x04, 0x44, 0x29])) == .pressed(uiCommand: 0x29))
        #expect(CECRemoteKey(CECMessage(bytes: [0x04, 0x45])) == .released)
        // Pressed without its UI command, other messages, a bare header (a poll): not a key.
        #expect(CECRemoteKey(CECMessage(bytes: [0x04, 0x44])) == nil)
        #expect(CECRemoteKey(CECMessage(bytes: [0x04, 0x90, 0x00])) == nil)
        #expect(CECRemoteKey(CECMessage(bytes: [0x04])) == nil)
    }

    @Test func theRemotesKeysAreTheKeyboards() throws {
        let named: [(UInt8, String)] = [
            (0x00, "KEY_ENTER"), (0x01, "KEY_UP"), (0x02, "KEY_DOWN"), (0x03, "KEY_LEFT"), (0x04, "KEY_RIGHT"),
            (0x0D, "KEY_ESC"), (0x20, "KEY_0"), (0x21, "KEY_1"), (0x25, "KEY_5"), (0x29, "KEY_9"),
            (0x30, "KEY_PAGEUP"), (0x31, "KEY_PAGEDOWN"),
            (0x71, "KEY_BLUE"), (0x72, "KEY_RED"), (0x73, "KEY_GREEN"), (0x74, "KEY_YELLOW"),
        ]
        for (command, name) in named {
            let code = try #require(KeyCode.code(named: name))
            #expect(CECKeyMap.keyCode(uiCommand: command) == code, "UI command 0x\(String(command, radix: 16)) → \(name)")
        }
        // Power, volume, mute, play and the codes between the digits and the channel keys stay the TV's.
        for command: UInt8 in [0x40, 0x41, 0x42, 0x43, 0x44, 0x6B, 0x2A, 0x2F, 0x09, 0xFF] {
            #expect(CECKeyMap.keyCode(uiCommand: command) == nil, "0x\(String(command, radix: 16))")
        }
    }
}
