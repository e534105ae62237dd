import Glibc
import Testing
import CLibInput
import CKioskInputShims

/// Messages libinput logged through the C formatting handler, with the user data they came with.
nonisolated(unsafe) private var logged: [(user: UnsafeMutableRawPointer?, priority: libinput_log_priority, message: String)] = []

@Suite(.serialized) struct LibInputLogTests {
    /// libinput's own printf-style message (a path context asked for a device that does not
    /// exist) reaches Swift formatted: the path argument substituted, no trailing newline, with
    /// the context's user data.
    @Test func libinputsOwnMessageArrivesFormattedWithTheUserData() throws {
        logged = []
        var interface = libinput_interface(
            open_restricted: { path, flags, _ in
                let fd = open(path!, flags)
                return fd < 0 ? -errno : fd
            },
            close_restricted: { fd, _ in close(fd) })
        let marker = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)
        defer { marker.deallocate() }
        let li = try #require(libinput_path_create_context(&interface, marker))
        defer { libinput_unref(li) }
        kiosk_libinput_set_log_sink(li, { user, priority, message in
            logged.append((user, priority, String(cString: message!)))
        })
        libinput_log_set_priority(li, LIBINPUT_LOG_PRIORITY_ERROR)
        let path = "/nonexistent-kioskd-test/event\(getpid())"
        #expect(libinput_path_add_device(li, path) == nil)
        let errors = logged.filter { $0.priority == LIBINPUT_LOG_PRIORITY_ERROR }
        #expect(!errors.isEmpty, "libinput logged no error for \(path)")
        #expect(errors.allSatisfy { $0.user == marker })
        #expect(errors.contains { $0.message.contains(path) }, "no message names \(path): \(errors.map(\.message))")
        #expect(errors.allSatisfy { !$0.message.hasSuffix("\n") && !$0.message.contains("%s") })
    }
}
