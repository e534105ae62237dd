import CKioskLazy
import Foundation
import Testing
import KioskTesting

/// systemd's notification protocol without libsystemd (CKioskLazy/notify.c): what `sd_notify`
/// and `sd_watchdog_enabled` do for kioskd, checked against a socket standing in for systemd's.
@Suite struct NotifyProtocolTests {
    @Test func aStateIsOneDatagramToTheSocketPath() {
        let d = tempDir()
        let socket = NotifySocket(path: "\(d)/notify.sock")
        #expect(kiosk_notify_to(socket.path, "READY=1") == 1)
        #expect(kiosk_notify_to(socket.path, "STATUS=scene clock") == 1)
        #expect(socket.collect(seconds: 0.3).map(\.1) == ["READY=1", "STATUS=scene clock"])
    }

    @Test func anAtNamesTheAbstractNamespace() throws {
        let name = "kioskd-notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = [UInt8(0)] + Array(name.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in bytes.enumerated() { $0[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        try #require(bound == 0, "bind: errno \(errno)")
        #expect(kiosk_notify_to("@" + name, "WATCHDOG=1") == 1)
        var buf = [UInt8](repeating: 0, count: 64)
        let n = recv(fd, &buf, buf.count, Int32(MSG_DONTWAIT))
        #expect(n == 10 && String(decoding: buf[0..<max(n, 0)], as: UTF8.self) == "WATCHDOG=1")
    }

    @Test func noSocketNothingSentAndErrorsAreNegativeErrnos() {
        #expect(kiosk_notify_to(nil, "READY=1") == 0)
        #expect(kiosk_notify_to("", "READY=1") == 0)
        #expect(kiosk_notify_to("vsock:2:1234", "READY=1") == -EAFNOSUPPORT)
        #expect(kiosk_notify_to("\(tempDir())/nobody-listens.sock", "READY=1") == -ENOENT)
        #expect(kiosk_notify_to("/" + String(repeating: "x", count: 200), "READY=1") == -EINVAL)
    }

    @Test func theWatchdogIntervalIsReadAsSystemdSetsIt() {
        var usec: UInt64 = 0
        #expect(kiosk_watchdog_parse(nil, nil, 42, &usec) == 0)
        #expect(kiosk_watchdog_parse("400000", nil, 42, &usec) == 1 && usec == 400_000)
        usec = 0
        #expect(kiosk_watchdog_parse("30000000", "42", 42, &usec) == 1 && usec == 30_000_000)
        // For another process (WATCHDOG_PID is the main process, kioskd forked by a wrapper).
        usec = 0
        #expect(kiosk_watchdog_parse("400000", "43", 42, &usec) == 0 && usec == 0)
        for bad in ["", "0", "-5", "12x", " 12", "99999999999999999999999"] {
            #expect(kiosk_watchdog_parse(bad, nil, 42, &usec) == -EINVAL, "WATCHDOG_USEC=\(bad)")
        }
        #expect(kiosk_watchdog_parse("400000", "pid", 42, &usec) == -EINVAL)
    }
}
