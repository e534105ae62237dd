import Foundation
import KioskTesting
import KioskCore
import KioskPosix
import Logging
import NIOConcurrencyHelpers
import Testing

/// A mosquitto broker of the test's own on a free loopback port, stopped at deinit. Processes
/// are started with `SpawnedProcess` (no signal blocked, descriptors 0–2 only).
final class MQTTTestBroker {
    let port: Int
    let dir: String
    private var process: SpawnedProcess?

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
        process = try SpawnedProcess("/usr/sbin/mosquitto", ["-c", path], stdout: .file("\(dir)/broker.log"), stderr: .stdout)
        let deadline = nowNanos() + 5_000_000_000
        while !Loopback.accepts(port) {
            guard nowNanos() < deadline else { throw KioskError(.system, "mosquitto did not listen on \(port)") }
            usleep(5_000) // bounded polling of the condition "port accepts"
        }
    }

    func stop() {
        guard let p = process else { return }
        p.signal(SIGKILL)
        p.wait()
        process = nil
    }

    /// Publishes with mosquitto_pub (QoS 1; `retain`; `nil` payload: an empty message).
    func publish(_ topic: String, _ payload: String?, retain: Bool = false) throws {
        var args = ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", topic]
        if retain { args.append("-r") }
        if let payload { args += ["-m", payload] } else { args.append("-n") }
        let (status, out) = try runTool("/usr/bin/mosquitto_pub", args)
        guard status == 0 else { throw KioskError(.system, "mosquitto_pub \(args.joined(separator: " ")) exited with \(status): \(out)") }
    }

    /// The retained message on `topic` (mosquitto_sub), nil when there is none.
    func retained(_ topic: String) throws -> String? {
        let (status, out) = try runTool("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-C", "1", "-W", "1", "--retained-only"])
        guard status == 0 else { return nil }
        var text = out
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }
}

/// Runs a tool to the end; returns its exit status and its output (stdout and stderr).
func runTool(_ path: String, _ args: [String]) throws -> (Int32, String) {
    let p = try SpawnedProcess(path, args, stdout: .pipe, stderr: .stdout)
    let out = p.output()
    p.wait()
    return (p.exitStatus, out)
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


