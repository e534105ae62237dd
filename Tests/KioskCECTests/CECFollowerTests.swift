import KioskCore
import Testing
@testable import KioskCEC

// What kioskd, a follower at Playback 1 (4), does with what the TV (0) sends it: messages as
// `cec-ctl --trace` shows them; keys checked by their evdev names (KeyCode), not the map's numbers.
@Suite struct CECFollowerTests {
    static let me = CECLogicalAddress(4)
    static func key(_ name: String) -> UInt16 { KeyCode.code(named: name)! }

    @Test func aRemoteKeyGoesDownRepeatsAndComesUp() {
        var f = CECFollower(keys: CECRemoteKeyMap())
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x01]), own: Self.me, lit: true) == [.key(code: Self.key("KEY_UP"), state: .pressed)])
        // The TV repeats Pressed while the key is held.
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x01]), own: Self.me, lit: true) == [.key(code: Self.key("KEY_UP"), state: .repeated)])
        #expect(f.receive(CECMessage(bytes: [0x04, 0x45]), own: Self.me, lit: true) == [.key(code: Self.key("KEY_UP"), state: .released)])
        // A release with nothing held does nothing.
        #expect(f.receive(CECMessage(bytes: [0x04, 0x45]), own: Self.me, lit: true) == [.none])
    }

    @Test func anotherKeyPressedLetsTheHeldOneGo() {
        var f = CECFollower(keys: CECRemoteKeyMap())
        _ = f.receive(CECMessage(bytes: [0x04, 0x44, 0x02]), own: Self.me, lit: true)
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x25]), own: Self.me, lit: true)
                == [.key(code: Self.key("KEY_DOWN"), state: .released), .key(code: Self.key("KEY_5"), state: .pressed)])
        #expect(f.release() == [.key(code: Self.key("KEY_5"), state: .released)])
        #expect(f.release() == [])
    }

    @Test func keysNotMappedAreIgnoredAndTheConfigRemaps() {
        let overrides: [UInt8: UInt16?] = [0x01: Self.key("KEY_KP_PLUS"), 0x02: Optional<UInt16>.none, 0x44: Self.key("KEY_P")]
        var f = CECFollower(keys: CECRemoteKeyMap(overrides: overrides))
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x01]), own: Self.me, lit: true) == [.key(code: Self.key("KEY_KP_PLUS"), state: .pressed)])
        // Down bound to nothing, volume up (0x41) mapped by nobody: ignored, the held key let go.
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x02]), own: Self.me, lit: true)
                == [.key(code: Self.key("KEY_KP_PLUS"), state: .released), .unmappedKey(uiCommand: 0x02)])
        #expect(f.receive(CECMessage(bytes: [0x04, 0x45]), own: Self.me, lit: true) == [.none])
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x41]), own: Self.me, lit: true) == [.unmappedKey(uiCommand: 0x41)])
        #expect(f.receive(CECMessage(bytes: [0x04, 0x44, 0x44]), own: Self.me, lit: true) == [.key(code: Self.key("KEY_P"), state: .pressed)])
        // remote_keys = false: nothing is a key.
        var off = CECFollower(keys: CECRemoteKeyMap(enabled: false))
        #expect(off.receive(CECMessage(bytes: [0x04, 0x44, 0x01]), own: Self.me, lit: true) == [.unmappedKey(uiCommand: 0x01)])
    }

    @Test func questionsAreAnsweredAndTheRestFeatureAborted() {
        var f = CECFollower(keys: CECRemoteKeyMap())
        // Give Device Power Status: Report Power Status, on while lit, standby while blanked.
        #expect(f.receive(CECMessage(bytes: [0x04, 0x8F]), own: Self.me, lit: true) == [.reply(CECMessage(bytes: [0x40, 0x90, 0x00]))])
        #expect(f.receive(CECMessage(bytes: [0x04, 0x8F]), own: Self.me, lit: false) == [.reply(CECMessage(bytes: [0x40, 0x90, 0x01]))])
        // Give Deck Status (0x1A) is not ours: Feature Abort, unrecognized opcode (0).
        #expect(f.receive(CECMessage(bytes: [0x04, 0x1A, 0x01]), own: Self.me, lit: true) == [.reply(CECMessage(bytes: [0x40, 0x00, 0x1A, 0x00]))])
        // Never a Feature Abort for a Feature Abort, nor for a broadcast (Standby to all), nor without an address.
        #expect(f.receive(CECMessage(bytes: [0x04, 0x00, 0x8F, 0x00]), own: Self.me, lit: true) == [.none])
        #expect(f.receive(CECMessage(bytes: [0x0F, 0x36]), own: Self.me, lit: true) == [.none])
        #expect(f.receive(CECMessage(bytes: [0x04, 0x1A, 0x01]), own: nil, lit: true) == [.none])
        #expect(f.receive(CECMessage(bytes: [0x04]), own: Self.me, lit: true) == [.none])
    }

    @Test func remoteKeyNamesAreCecCtls() {
        #expect(CECRemoteKeyName.uiCommand(named: "up") == 0x01)
        #expect(CECRemoteKeyName.uiCommand(named: "Channel_Up") == 0x30)
        #expect(CECRemoteKeyName.uiCommand(named: "7") == 0x27)
        #expect(CECRemoteKeyName.uiCommand(named: "upp") == nil)
        // Every name is one key, and every key `CECKeyMap` maps has a name.
        #expect(Set(CECRemoteKeyName.all.map(\.uiCommand)).count == CECRemoteKeyName.all.count)
        for ui in UInt8(0)...0x7F where CECKeyMap.keyCode(uiCommand: ui) != nil {
            #expect(CECRemoteKeyName.all.contains { $0.uiCommand == ui }, "0x\(String(ui, radix: 16))")
        }
    }
}
