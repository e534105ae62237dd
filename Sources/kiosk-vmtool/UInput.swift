#if canImport(Glibc)
import Glibc
#endif
import CKioskUInput
import KioskCore
import KioskPosix

/// A virtual input device made through /dev/uinput (test devices inside the VM).
///
/// Wraps the uinput ioctls (`UI_SET_*BIT`, `UI_DEV_SETUP`, `UI_ABS_SETUP`, `UI_DEV_CREATE`,
/// `UI_DEV_DESTROY`) via the C shims in CKioskUInput, and `write()` of `struct input_event`.
/// `destroy()` removes the device (as an unplug would) and closes /dev/uinput; `deinit` does
/// the same when `destroy()` was not called.
final class UInputDevice {
    /// /dev/uinput until `destroy()`.
    private var uinput: Descriptor?
    /// The open /dev/uinput (-1 after `destroy()`: every ioctl then fails with EBADF).
    private var fd: Int32 { uinput?.raw ?? -1 }
    let name: String
    private(set) var created = false

    init(name: String) throws {
        self.name = name
        uinput = try Descriptor.open("/dev/uinput", O_WRONLY | O_NONBLOCK)
    }

    deinit { destroy() }

    func enable(event type: Int32) throws { try Posix.call("UI_SET_EVBIT \(type)") { kiosk_uinput_set_evbit(fd, type) } }
    func enable(key code: Int32) throws { try Posix.call("UI_SET_KEYBIT \(code)") { kiosk_uinput_set_keybit(fd, code) } }
    func enable(property p: Int32) throws { try Posix.call("UI_SET_PROPBIT \(p)") { kiosk_uinput_set_propbit(fd, p) } }
    func enable(abs code: Int32, min: Int32, max: Int32, resolution: Int32) throws {
        try Posix.call("UI_SET_ABSBIT \(code)") { kiosk_uinput_set_absbit(fd, code) }
        try Posix.call("UI_ABS_SETUP \(code)") { kiosk_uinput_abs_setup(fd, UInt16(code), min, max, resolution) }
    }

    /// UI_DEV_SETUP + UI_DEV_CREATE.
    func create(bustype: UInt16 = 0x03, vendor: UInt16 = 0x1209, product: UInt16) throws {
        try Posix.call("UI_DEV_SETUP") { kiosk_uinput_dev_setup(fd, name, bustype, vendor, product) }
        try Posix.call("UI_DEV_CREATE") { kiosk_uinput_dev_create(fd) }
        created = true
    }

    /// The sysfs name (e.g. "input7") and the event node (e.g. "/dev/input/event3") of the device.
    func nodes() throws -> (sysname: String, event: String?) {
        var buf = [CChar](repeating: 0, count: 64)
        try Posix.call("UI_GET_SYSNAME") { kiosk_uinput_get_sysname(fd, &buf, buf.count) }
        let sys = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var event: String?
        if let dir = opendir("/sys/devices/virtual/input/\(sys)") {
            while let ent = readdir(dir) {
                let n = withUnsafeBytes(of: ent.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
                if n.hasPrefix("event") { event = "/dev/input/" + n }
            }
            closedir(dir)
        }
        return (sys, event)
    }

    func emit(_ type: Int32, _ code: Int32, _ value: Int32) throws {
        try Posix.call("write(uinput event \(type)/\(code))") { kiosk_uinput_emit(fd, UInt16(type), UInt16(code), value) }
    }

    func sync() throws { try emit(EV_SYN, SYN_REPORT, 0) }

    /// UI_DEV_DESTROY and close: the device disappears at once, whatever is pressed or touching.
    func destroy() {
        guard uinput != nil else { return }
        if created { _ = kiosk_uinput_dev_destroy(fd) }
        uinput = nil
    }
}

func sleepMs(_ ms: Int) {
    guard ms > 0 else { return }
    var ts = timespec(tv_sec: ms / 1000, tv_nsec: (ms % 1000) * 1_000_000)
    var rem = timespec()
    while nanosleep(&ts, &rem) != 0 && errno == EINTR { ts = rem }
}
