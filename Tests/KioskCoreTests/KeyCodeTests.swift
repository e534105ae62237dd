import Testing
@testable import KioskCore

@Suite struct KeyCodeTests {
    @Test func namesWithAndWithoutPrefixAndAnyCase() {
        // Values from linux/input-event-codes.h.
        #expect(KeyCode.code(named: "KEY_UP") == 103)
        #expect(KeyCode.code(named: "UP") == 103)
        #expect(KeyCode.code(named: "up") == 103)
        #expect(KeyCode.code(named: " KEY_DOWN ") == 108)
        #expect(KeyCode.code(named: "KEY_LEFT") == 105)
        #expect(KeyCode.code(named: "KEY_RIGHT") == 106)
        #expect(KeyCode.code(named: "KEY_ESC") == 1)
        #expect(KeyCode.code(named: "KEY_ENTER") == 28)
        #expect(KeyCode.code(named: "KEY_SPACE") == 57)
        #expect(KeyCode.code(named: "KEY_BACKSPACE") == 14)
        #expect(KeyCode.code(named: "KEY_TAB") == 15)
        #expect(KeyCode.code(named: "KEY_R") == 19)
        #expect(KeyCode.code(named: "KEY_A") == 30)
        #expect(KeyCode.code(named: "KEY_Z") == 44)
        #expect(KeyCode.code(named: "KEY_1") == 2)
        #expect(KeyCode.code(named: "KEY_0") == 11)
        #expect(KeyCode.code(named: "KEY_F1") == 59)
        #expect(KeyCode.code(named: "KEY_F10") == 68)
        #expect(KeyCode.code(named: "KEY_F11") == 87)
        #expect(KeyCode.code(named: "KEY_F12") == 88)
        #expect(KeyCode.code(named: "KEY_PAGEUP") == 104)
        #expect(KeyCode.code(named: "KEY_PAGEDOWN") == 109)
        #expect(KeyCode.code(named: "KEY_HOME") == 102)
        #expect(KeyCode.code(named: "KEY_END") == 107)
        #expect(KeyCode.code(named: "KEY_VOLUMEUP") == 115)
        #expect(KeyCode.code(named: "KEY_VOLUMEDOWN") == 114)
        #expect(KeyCode.code(named: "KEY_POWER") == 116)
        #expect(KeyCode.code(named: "KEY_MENU") == 139)
    }

    @Test func keypadNamesInBothSpellings() {
        #expect(KeyCode.code(named: "KEY_KPPLUS") == 78)
        #expect(KeyCode.code(named: "KEY_KP_PLUS") == 78)
        #expect(KeyCode.code(named: "KP_MINUS") == 74)
        #expect(KeyCode.code(named: "KEY_KP_ENTER") == 96)
        #expect(KeyCode.code(named: "KEY_KP0") == 82)
        #expect(KeyCode.code(named: "KEY_KP_7") == 71)
    }

    @Test func aliasesResolveToTheirTarget() {
        // KEY_SCREENLOCK is defined as KEY_COFFEE (152), KEY_HANGUEL as KEY_HANGEUL (122).
        #expect(KeyCode.code(named: "KEY_SCREENLOCK") == 152)
        #expect(KeyCode.code(named: "KEY_HANGUEL") == 122)
        #expect(KeyCode.name(of: 152) == "KEY_COFFEE")
    }

    @Test func unknownNamesAreNil() {
        #expect(KeyCode.code(named: "KEY_NOPE") == nil)
        #expect(KeyCode.code(named: "") == nil)
        #expect(KeyCode.code(named: "KEY_") == nil)
        #expect(KeyCode.code(named: "KEY_MAX") == nil)
        #expect(KeyCode.code(named: "BTN_LEFT") == nil)
        #expect(KeyCode.name(of: 0) == nil)
        #expect(KeyCode.name(of: 0xFFFF) == nil)
    }

    @Test func namesRoundTrip() {
        let all = KeyCode.all
        #expect(all.count > 400)
        for (name, code) in all {
            #expect(KeyCode.code(named: name) == code, "\(name)")
            #expect(KeyCode.name(of: code) == name, "\(code)")
        }
        #expect(KeyCode.name(of: 103) == "KEY_UP")
    }
}
