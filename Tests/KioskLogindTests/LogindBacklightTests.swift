import KioskTestTraits
import Testing
import Glibc
import Foundation
import CSdBus

@testable import KioskLogind
import KioskPosix
import KioskTesting
import KioskCore

/// A private dbus-daemon for one test (no system bus on test machines): started with its own
/// socket in a temporary folder, stopped by pid at the end.
private final class PrivateBus {
    let process: SpawnedProcess
    let dir: String
    let address: String

    init() throws {
        var template = Array("/tmp/k-wall-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        dir = String(cString: p!)
        let printed = "\(dir)/address"
        process = try SpawnedProcess("/usr/bin/dbus-daemon", ["--session", "--nofork", "--print-address=1", "--address=unix:path=\(dir)/bus"],
                                     stdout: .file(printed), stderr: .inherit)
        // The address is printed once the daemon listens (a bounded wait for that line).
        var text = ""
        for _ in 0..<3000 where !text.contains("\n") && process.isRunning {
            usleep(10_000)
            text = (try? String(contentsOfFile: printed, encoding: .utf8)) ?? ""
        }
        address = text.split(separator: "\n").first.map(String.init) ?? ""
    }

    deinit {
        process.signal(SIGKILL)
        process.wait()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

/// Stands in for logind: owns org.freedesktop.login1 and answers Session.SetBrightness on
/// /org/freedesktop/login1/session/auto, recording each call.
private final class FakeLogind {
    var bus: OpaquePointer?
    var calls: [String] = []
    var refuse = false
    private var watch: EventLoop.WatchID?
    private let loop: EventLoop

    init(address: String, loop: EventLoop) throws {
        self.loop = loop
        precondition(sd_bus_new(&bus) >= 0)
        precondition(sd_bus_set_address(bus, address) >= 0)
        precondition(sd_bus_set_bus_client(bus, 1) >= 0)
        let r = sd_bus_start(bus)
        guard r >= 0 else { throw Posix.error("sd_bus_start", errno: -r) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        precondition(sd_bus_add_object(bus, nil, "/org/freedesktop/login1/session/auto", { m, userdata, retError in
            let fake = Unmanaged<FakeLogind>.fromOpaque(userdata!).takeUnretainedValue()
            return fake.handle(m, retError)
        }, me) >= 0)
        let n = sd_bus_request_name(bus, "org.freedesktop.login1", 0)
        guard n >= 0 else { throw Posix.error("sd_bus_request_name", errno: -n) }
        watch = try loop.watch(fd: sd_bus_get_fd(bus)) { [weak self] in self?.process() }
    }

    deinit {
        if let watch { loop.unwatch(watch) }
        sd_bus_flush_close_unref(bus)
    }

    func process() {
        while sd_bus_process(bus, nil) > 0 {}
    }

    private func handle(_ m: OpaquePointer?, _ retError: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        guard let member = sd_bus_message_get_member(m).map({ String(cString: $0) }),
              let iface = sd_bus_message_get_interface(m).map({ String(cString: $0) }) else { return 0 }
        var subsystem: UnsafePointer<CChar>?
        var name: UnsafePointer<CChar>?
        var value: UInt32 = 0
        guard sd_bus_message_read_basic(m, CChar(UInt8(ascii: "s")), &subsystem) >= 0,
              sd_bus_message_read_basic(m, CChar(UInt8(ascii: "s")), &name) >= 0,
              sd_bus_message_read_basic(m, CChar(UInt8(ascii: "u")), &value) >= 0 else { return -EINVAL }
        calls.append("\(iface).\(member)(\(String(cString: subsystem!)), \(String(cString: name!)), \(value))")
        if refuse {
            // sd_bus_error_set copies both strings: Swift's C strings for the call live only
            // during the call, and `_set_const` would keep pointers to them.
            sd_bus_error_set(retError, "org.freedesktop.DBus.Error.AccessDenied", "Not in control of the session")
            return -EACCES
        }
        var reply: OpaquePointer?
        guard sd_bus_message_new_method_return(m, &reply) >= 0 else { return -ENOMEM }
        defer { sd_bus_message_unref(reply) }
        return sd_bus_send(bus, reply, nil) >= 0 ? 1 : -EIO
    }
}

@Suite(.ownThreads) struct LogindBacklightTests {
    private func runUntil(_ loop: EventLoop, _ done: () -> Bool) throws {
        let start = nowNanos(.monotonic)
        while !done() && nowNanos(.monotonic) - start < 10_000_000_000 { try loop.runOnce(timeoutMs: 1000) }
    }

    @Test func setBrightnessReachesTheSessionObject() throws {
        let bus = try PrivateBus()
        #expect(bus.address.hasPrefix("unix:"))
        let loop = try EventLoop()
        let logind = try FakeLogind(address: bus.address, loop: loop)
        let writer = try LogindBacklightWriter(deviceName: "intel_backlight", loop: loop, busAddress: bus.address)
        #expect(writer.method == "logind")
        try writer.write(raw: 48000)
        try writer.write(raw: 1)
        try runUntil(loop) { writer.replies == 2 }
        #expect(logind.calls == [
            "org.freedesktop.login1.Session.SetBrightness(backlight, intel_backlight, 48000)",
            "org.freedesktop.login1.Session.SetBrightness(backlight, intel_backlight, 1)",
        ])
        #expect(writer.lastError == nil)
    }

    @Test func refusedCallIsReportedWithTheFix() throws {
        let bus = try PrivateBus()
        let loop = try EventLoop()
        let logind = try FakeLogind(address: bus.address, loop: loop)
        logind.refuse = true
        let writer = try LogindBacklightWriter(deviceName: "panel", loop: loop, busAddress: bus.address)
        var reported: [KioskError] = []
        writer.onError = { reported.append($0) }
        try writer.write(raw: 7)
        try runUntil(loop) { writer.replies == 1 }
        #expect(reported.count == 1)
        #expect(reported.first?.message == "logind SetBrightness(backlight, panel) on /org/freedesktop/login1/session/auto failed:"
            + " org.freedesktop.DBus.Error.AccessDenied: Not in control of the session"
            + " (kioskd is not the session's owner in the foreground; use the sysfs udev rule instead)")
        #expect(reported.first?.errno == EACCES)
    }

    @Test func unreachableBusIsAnErrorNamingTheAddress() throws {
        let loop = try EventLoop()
        #expect {
            _ = try LogindBacklightWriter(deviceName: "panel", loop: loop, busAddress: "unix:path=/nonexistent/k-wall-bus")
        } throws: { e in
            (e as? KioskError)?.message.hasPrefix("sd_bus_start unix:path=/nonexistent/k-wall-bus failed: No such file or directory") == true
        }
    }

}

@Suite(.ownThreads) struct BacklightSetupTests {
    /// root/sys/class/backlight/panel with max_brightness 255.
    private func fakeTree() throws -> String {
        var template = Array("/tmp/k-wall-XXXXXX".utf8CString)
        let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let root = String(cString: p!)
        let dir = root + "/sys/class/backlight/panel"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try "raw\n".write(toFile: dir + "/type", atomically: false, encoding: .utf8)
        try "255\n".write(toFile: dir + "/max_brightness", atomically: false, encoding: .utf8)
        try "255\n".write(toFile: dir + "/brightness", atomically: false, encoding: .utf8)
        return root
    }

    @Test func withoutASessionSysfsIsWritten() throws {
        let root = try fakeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let loop = try EventLoop()
        let r = try #require(try BacklightSetup.open(.auto, loop: loop, root: root, hasSession: false))
        #expect(r.backlight.writer.method == "sysfs")
        #expect(r.note == "backlight panel (raw, max 255) via sysfs: no logind session; writing \(root)/sys/class/backlight/panel/brightness directly (needs the udev rule and group video unless root)")
        try r.backlight.set(percent: 40)
        #expect(try String(contentsOfFile: root + "/sys/class/backlight/panel/brightness", encoding: .utf8) == "102\n")
        #expect(try BacklightSetup.open(.none, loop: loop, root: root, hasSession: false) == nil)
    }

    @Test func withASessionLogindIsUsed() throws {
        let root = try fakeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let bus = try PrivateBus()
        let loop = try EventLoop()
        let logind = try FakeLogind(address: bus.address, loop: loop)
        let r = try #require(try BacklightSetup.open(.named("panel"), loop: loop, root: root, hasSession: true, busAddress: bus.address))
        #expect(r.backlight.writer.method == "logind")
        #expect(r.note == "backlight panel (raw, max 255) via logind: through the logind session")
        try r.backlight.set(percent: 40)
        let writer = try #require(r.backlight.writer as? LogindBacklightWriter)
        let start = nowNanos(.monotonic)
        while writer.replies < 1 && nowNanos(.monotonic) - start < 10_000_000_000 { try loop.runOnce(timeoutMs: 1000) }
        #expect(logind.calls == ["org.freedesktop.login1.Session.SetBrightness(backlight, panel, 102)"])
        // sysfs untouched: logind writes it on the session's behalf.
        #expect(try String(contentsOfFile: root + "/sys/class/backlight/panel/brightness", encoding: .utf8) == "255\n")
    }

    @Test func unreachableBusFallsBackToSysfsAndSaysWhy() throws {
        let root = try fakeTree()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let loop = try EventLoop()
        let r = try #require(try BacklightSetup.open(.auto, loop: loop, root: root, hasSession: true, busAddress: "unix:path=/nonexistent/k-wall-bus"))
        #expect(r.backlight.writer.method == "sysfs")
        #expect(r.note.hasPrefix("backlight panel (raw, max 255) via sysfs: the system bus is not reachable (sd_bus_start unix:path=/nonexistent/k-wall-bus failed: No such file or directory (errno 2)); writing "))
    }
}
