#if canImport(Glibc)
import Glibc
#endif
import CKioskUInput
import KioskCore

/// A keyboard with every key from KEY_ESC to KEY_MICMUTE, so udev tags it ID_INPUT_KEYBOARD.
final class Keyboard {
    let device: UInputDevice

    init(name: String) throws {
        device = try UInputDevice(name: name)
        try device.enable(event: EV_SYN)
        try device.enable(event: EV_KEY)
        for code in KEY_ESC...KEY_MICMUTE { try device.enable(key: code) }
        try device.create(product: 0x7003)
    }

    /// Presses and releases `code`, each in its own frame, holding it `holdMs`.
    func tap(_ code: UInt16, holdMs: Int) throws {
        try device.emit(EV_KEY, Int32(code), 1)
        try device.sync()
        sleepMs(holdMs)
        try device.emit(EV_KEY, Int32(code), 0)
        try device.sync()
    }
}

/// A key spec "KEY_UP", "UP" or "KEY_UP*3" (pressed three times).
func parseKeySpec(_ s: String) throws -> (code: UInt16, count: Int) {
    let parts = s.split(separator: "*", maxSplits: 1)
    guard let name = parts.first, let code = KeyCode.code(named: String(name)) else {
        throw KioskError.config("unknown key '\(s)' (expected a name from linux/input-event-codes.h, e.g. KEY_UP or KEY_UP*3)")
    }
    var count = 1
    if parts.count == 2 {
        guard let n = Int(parts[1]), n > 0, n <= 1000 else { throw KioskError.config("key '\(s)': repeat count must be 1…1000") }
        count = n
    }
    return (code, count)
}
