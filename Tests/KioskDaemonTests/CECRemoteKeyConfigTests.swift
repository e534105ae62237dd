import KioskCEC
import KioskConfig
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskTesting
import Testing

/// `[display.cec]` / `[output.cec]` `remote_keys` and `keys`: which keyboard key each TV remote
/// key stands for, with errors naming file:line:key.
@Suite struct CECRemoteKeyConfigTests {
    static let head = "[display]\nbackend = \"headless\"\n"
    static let clock = "[scene.clock]\nkind = \"clock\"\n"
    static func key(_ name: String) -> UInt16 { KeyCode.code(named: name)! }

    @Test func theRemoteActsAsTheKeyboardByDefault() throws {
        let c = try loadConfig(Self.head + "[display.cec]\nadapter = \"/dev/cec1\"\n" + Self.clock)
        let keys = c.outputs[0].cecKeys(c.display)
        #expect(keys.enabled && keys.keyCode(uiCommand: 0x01) == Self.key("KEY_UP") && keys.keyCode(uiCommand: 0x44) == nil)
    }

    @Test func keysAreRemappedPerOutputAndTurnedOff() throws {
        let c = try loadConfig(Self.head + """
        [display.cec]
        adapter = "auto"
        [display.cec.keys]
        up = "KEY_KP_PLUS"
        down = "none"
        play = "p"
        [[output]]
        connector = "HDMI-A-1"
        [[output]]
        connector = "HDMI-A-2"
        [output.cec]
        adapter = "/dev/cec1"
        remote_keys = false
        """ + "\n" + Self.clock)
        let first = c.outputs[0].cecKeys(c.display), second = c.outputs[1].cecKeys(c.display)
        #expect(first.keyCode(uiCommand: 0x01) == Self.key("KEY_KP_PLUS"))
        #expect(first.keyCode(uiCommand: 0x02) == nil, "down bound to none")
        #expect(first.keyCode(uiCommand: 0x44) == Self.key("KEY_P"), "play bound to KEY_P")
        #expect(first.keyCode(uiCommand: 0x03) == Self.key("KEY_LEFT"), "the rest as CECKeyMap")
        #expect(!second.enabled && second.keyCode(uiCommand: 0x01) == nil)
    }

    @Test func unknownNamesNameFileLineAndKey() {
        let d = tempDir()
        let remote = configError {
            _ = try loadConfig(Self.head + "[display.cec]\nadapter = \"/dev/cec1\"\n[display.cec.keys]\nupp = \"KEY_UP\"\n" + Self.clock, dir: d)
        }
        #expect(remote == "\(d)/kioskd.toml:6: key 'display.cec.keys.upp': unknown remote key \"upp\" (known: \(CECRemoteKeyName.known))")
        let key = configError {
            _ = try loadConfig(Self.head + "[display.cec]\nadapter = \"/dev/cec1\"\n[display.cec.keys]\nup = \"KEY_UPP\"\n" + Self.clock, dir: d)
        }
        #expect(key == "\(d)/kioskd.toml:6: key 'display.cec.keys.up': unknown key name \"KEY_UPP\" (evdev names like KEY_UP, KEY_KP_PLUS or KEY_R, or \"none\")")
        let flag = configError {
            _ = try loadConfig(Self.head + "[display.cec]\nadapter = \"/dev/cec1\"\nremote_keys = \"yes\"\n" + Self.clock, dir: d)
        }
        #expect(flag?.hasPrefix("\(d)/kioskd.toml:5: key 'display.cec.remote_keys':") == true, "\(flag ?? "")")
        let stray = configError {
            _ = try loadConfig(Self.head + "[display.cec]\nadapter = \"/dev/cec1\"\nremote_key = true\n" + Self.clock, dir: d)
        }
        #expect(stray?.contains("key 'display.cec.remote_key': unknown key") == true, "\(stray ?? "")")
    }
}
