import Foundation
import KioskTesting
import KioskCore
import KioskPosix
import Logging
import NIOConcurrencyHelpers
import Testing

/// A mosquitto broker of the test's own on a free loopback port, stopped at deinit. Processes
/// are started with posix_spawn with no signal blocked (the test process blocks SIGTERM for the
/// daemon's signal handling, and a child would inherit that) and reaped with waitpid.
final class MQTTTestBroker {
    let port: Int
    let dir: String
    private var pid: pid_t = 0

    init() throws {
        port = try Loopback.freePort()
        var template = Array("/tmp/k-mqttd-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw Posix.error("mkdtemp", errno: errno) }
        dir = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    static var available: Bool { FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto") }

    /// Starts mosquitto and waits (bounded) until it accepts TCP connections.
    /// `extra`: more mosquitto.conf lines (limits a test needs).
    func start(extra: String = "") throws {
        let conf = "listener \(port) 127.0.0.1\npersistence false\nuser root\nlog_dest stderr\nallow_anonymous true\n" + extra
        let path = "\(dir)/mosquitto.conf"
        try conf.write(toFile: path, atomically: true, encoding: .utf8)
        pid = try spawn("/usr/sbin/mosquitto", ["-c", path], output: "\(dir)/broker.log")
        let deadline = nowNanos() + 5_000_000_000
        while !Loopback.accepts(port) {
            guard nowNanos() < deadline else { throw KioskError(.system, "mosquitto did not listen on \(port)") }
            usleep(5_000) // bounded polling of the condition "port accepts"
        }
    }

    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGKILL)
        var st: Int32 = 0
        while waitpid(pid, &st, 0) < 0 && errno == EINTR {}
        pid = 0
    }

    /// Publishes with mosquitto_pub (QoS 1; `retain`; `nil` payload: an empty message).
    func publish(_ topic: String, _ payload: String?, retain: Bool = false) throws {
        var args = ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", topic]
        if retain { args.append("-r") }
        if let payload { args += ["-m", payload] } else { args.append("-n") }
        let (status, out) = try runTool("/usr/bin/mosquitto_pub", args, dir: dir)
        guard status == 0 else { throw KioskError(.system, "mosquitto_pub \(args.joined(separator: " ")) exited with \(status): \(out)") }
    }

    /// The retained message on `topic` (mosquitto_sub), nil when there is none.
    func retained(_ topic: String) throws -> String? {
        let (status, out) = try runTool("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-C", "1", "-W", "1", "--retained-only"], dir: dir)
        guard status == 0 else { return nil }
        var text = out
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}

/// Starts `path` with stdout and stderr to `output`, no signal blocked or ignored; returns the pid.
func spawn(_ path: String, _ args: [String], output: String) throws -> pid_t {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    closeInheritedDescriptors(&actions)
    var attr = posix_spawnattr_t()
    posix_spawnattr_init(&attr)
    defer { posix_spawnattr_destroy(&attr) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attr, &none)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigdefault(&attr, &all)
    posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    var cArgs: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
    defer { for p in cArgs { free(p) } }
    var pid: pid_t = 0
    let rc = posix_spawn(&pid, path, &actions, &attr, &cArgs, environ)
    guard rc == 0 else { throw Posix.error("posix_spawn", path: path, errno: rc) }
    return pid
}

private let toolCounter = NIOLockedValueBox(0)

/// Runs a tool to the end; returns its exit status and its output (stdout and stderr).
func runTool(_ path: String, _ args: [String], dir: String) throws -> (Int32, String) {
    let n = toolCounter.withLockedValue { $0 += 1; return $0 }
    let out = "\(dir)/tool-\(n).out"
    let pid = try spawn(path, args, output: out)
    var st: Int32 = 0
    while waitpid(pid, &st, 0) < 0 && errno == EINTR {}
    defer { unlink(out) }
    let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
    return ((st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f), text)
}

/// Runs `loop` until `condition` holds or `seconds` pass; returns whether it held.
@discardableResult
func pump(_ loop: EventLoop, seconds: Double = 5, _ condition: () -> Bool) throws -> Bool {
    let deadline = nowNanos() + Int64(seconds * 1e9)
    while !condition() {
        if nowNanos() >= deadline { return false }
        try loop.runOnce(timeoutMs: 10)
    }
    return true
}


