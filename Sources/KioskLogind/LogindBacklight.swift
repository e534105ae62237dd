#if canImport(Glibc)
import Glibc
#endif
import CKioskLazy
import CSdBus
import KioskCore
import KioskPosix

/// Sets the backlight through logind: `org.freedesktop.login1.Session.SetBrightness("backlight",
/// NAME, value)` on the caller's session, which logind allows to the session's owner without any
/// write access to sysfs. Needs kioskd to run in a logind session (a user service with a seat, or
/// PAMName= in its unit). Calls are asynchronous: the bus descriptor is watched on the
/// `KioskLoop`, replies are processed there, and a refused call reaches `onError` (logged by the caller).
public final class LogindBacklightWriter: BacklightWriter {
    public var method: String { "logind" }
    public let deviceName: String
    private let sessionPath: String
    private var bus: OpaquePointer?
    private let loop: any KioskLoop
    private var loopWatch: WatchID?
    /// Called on the loop's thread with an error reply ("SetBrightness on session auto failed: …").
    public var onError: ((KioskError) -> Void)?
    /// Replies received so far (successes and errors), for status and tests.
    public private(set) var replies = 0
    /// The last error reply, if any.
    public private(set) var lastError: KioskError?

    /// Whether this process belongs to a logind session (`sd_pid_get_session`); false without libsystemd.
    public static func hasSession() -> Bool {
        guard kiosk_lazy_load(Int32(KIOSK_LIB_SYSTEMD)) == nil else { return false }
        var s: UnsafeMutablePointer<CChar>?
        let r = sd_pid_get_session(0, &s)
        free(s)
        return r >= 0
    }

    /// - Parameters:
    ///   - busAddress: nil for the system bus; a D-Bus address ("unix:path=…") for tests.
    ///   - sessionPath: the session object; "auto" is the caller's own session.
    public init(deviceName: String, loop: any KioskLoop, busAddress: String? = nil,
                sessionPath: String = "/org/freedesktop/login1/session/auto") throws {
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_SYSTEMD)) { throw KioskError(.system, String(cString: e)) }
        self.deviceName = deviceName
        self.loop = loop
        self.sessionPath = sessionPath
        var b: OpaquePointer?
        if let busAddress {
            try Self.check(sd_bus_new(&b), "sd_bus_new")
            do {
                try Self.check(sd_bus_set_address(b, busAddress), "sd_bus_set_address \(busAddress)")
                try Self.check(sd_bus_set_bus_client(b, 1), "sd_bus_set_bus_client")
                try Self.check(sd_bus_start(b), "sd_bus_start \(busAddress)")
            } catch {
                sd_bus_unref(b)
                throw error
            }
        } else {
            try Self.check(sd_bus_open_system(&b), "sd_bus_open_system")
        }
        bus = b
        let fd = sd_bus_get_fd(b)
        do {
            try Self.check(fd, "sd_bus_get_fd")
            loopWatch = try loop.watch(fd: fd) { [weak self] in self?.process() }
        } catch {
            sd_bus_flush_close_unref(b)
            bus = nil
            throw error
        }
    }

    deinit {
        if let w = loopWatch { loop.unwatch(w) }
        if let bus { sd_bus_flush_close_unref(bus) }
    }

    static func check(_ r: Int32, _ what: String) throws {
        if r < 0 { throw Posix.error(what, errno: -r) }
    }

    /// Sends SetBrightness; returns once the call is written (the reply is handled on the loop).
    public func write(raw: Int) throws {
        guard let bus else { throw KioskError(.system, "logind backlight: the bus is closed") }
        var m: OpaquePointer?
        try Self.check(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.login1", sessionPath,
                                                      "org.freedesktop.login1.Session", "SetBrightness"),
                       "sd_bus_message_new_method_call SetBrightness")
        defer { sd_bus_message_unref(m) }
        try Self.check(sd_bus_message_append_basic(m, CChar(UInt8(ascii: "s")), "backlight"), "sd_bus_message_append_basic")
        try deviceName.withCString { name in
            try Self.check(sd_bus_message_append_basic(m, CChar(UInt8(ascii: "s")), name), "sd_bus_message_append_basic")
        }
        var value = UInt32(clamping: raw)
        try Self.check(sd_bus_message_append_basic(m, CChar(UInt8(ascii: "u")), &value), "sd_bus_message_append_basic")
        let me = Unmanaged.passUnretained(self).toOpaque()
        try Self.check(sd_bus_call_async(bus, nil, m, { reply, userdata, _ in
            guard let userdata else { return 0 }
            Unmanaged<LogindBacklightWriter>.fromOpaque(userdata).takeUnretainedValue().handleReply(reply)
            return 0
        }, me, 0), "sd_bus_call_async SetBrightness")
        _ = sd_bus_flush(bus)
    }

    private func handleReply(_ reply: OpaquePointer?) {
        replies += 1
        guard let reply, sd_bus_message_is_method_error(reply, nil) != 0, let e = sd_bus_message_get_error(reply) else { return }
        let name = e.pointee.name.map { String(cString: $0) } ?? "unknown error"
        let message = e.pointee.message.map { String(cString: $0) } ?? ""
        let err = KioskError(.system, "logind SetBrightness(backlight, \(deviceName)) on \(sessionPath) failed: \(name): \(message)"
            + (name == "org.freedesktop.DBus.Error.AccessDenied" || name.hasSuffix("NotInControl")
               ? " (kioskd is not the session's owner in the foreground; use the sysfs udev rule instead)" : ""),
            errno: sd_bus_message_get_errno(reply))
        lastError = err
        onError?(err)
    }

    /// Handles whatever the bus has (replies); called by the loop when the descriptor is readable.
    public func process() {
        guard let bus else { return }
        while true {
            let r = sd_bus_process(bus, nil)
            if r <= 0 { break }
        }
    }
}
