#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskTesting
import KioskCore
import KioskMQTT
import KioskPosix
import Logging
import XCTest

/// A mosquitto broker of the test's own on a free loopback port, stopped at deinit.
final class Broker {
    let port: Int
    let dir: String
    private var process: SpawnedProcess?
    private let passwordFile: String?
    /// TLS listener: (ca, cert, key) file paths.
    var tls: (ca: String, cert: String, key: String)?

    /// `users`: name → password; when given, anonymous logins are refused.
    init(port: Int? = nil, users: [String: String] = [:]) throws {
        self.port = try port ?? Loopback.freePort()
        var template = Array("/tmp/k-mqtt-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw Posix.error("mkdtemp", errno: errno) }
        dir = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if users.isEmpty {
            passwordFile = nil
        } else {
            let pw = "\(dir)/passwd"
            for (user, password) in users {
                let create = FileManager.default.fileExists(atPath: pw) ? [] : ["-c"]
                try runTool("/usr/bin/mosquitto_passwd", create + ["-b", pw, user, password])
            }
            passwordFile = pw
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Starts mosquitto and waits (bounded) until it accepts TCP connections.
    func start() throws {
        var conf = "listener \(port) 127.0.0.1\npersistence false\nuser root\nlog_dest stderr\n"
        if let tls {
            conf += "cafile \(tls.ca)\ncertfile \(tls.cert)\nkeyfile \(tls.key)\n"
        }
        if let pw = passwordFile {
            conf += "allow_anonymous false\npassword_file \(pw)\n"
        } else {
            conf += "allow_anonymous true\n"
        }
        let path = "\(dir)/mosquitto.conf"
        try conf.write(toFile: path, atomically: true, encoding: .utf8)
        let p = try SpawnedProcess("/usr/sbin/mosquitto", ["-c", path], stderr: .file("\(dir)/broker.log"))
        process = p
        let deadline = nowNanos() + 5_000_000_000
        while !Loopback.accepts(port) {
            guard p.isRunning else { throw KioskError(.system, "mosquitto exited: \(log)") }
            guard nowNanos() < deadline else { throw KioskError(.system, "mosquitto did not listen on \(port) within 5 s: \(log)") }
            usleep(5_000) // bounded polling of the condition "port accepts"
        }
    }

    var log: String { (try? String(contentsOfFile: "\(dir)/broker.log", encoding: .utf8)) ?? "" }

    func stop() {
        guard let p = process else { return }
        process = nil
        p.signal(SIGTERM)
        p.wait()
    }

    func kill() {
        guard let p = process else { return }
        process = nil
        p.signal(SIGKILL)
        p.wait()
    }
}

/// Runs a tool to the end; returns its output (stdout and stderr); throws unless it exits with 0.
@discardableResult
func runTool(_ path: String, _ args: [String]) throws -> String {
    let p = try SpawnedProcess(path, args, stdout: .pipe, stderr: .stdout)
    let text = p.output()
    p.wait()
    guard p.exitStatus == 0 else {
        throw KioskError(.system, "\(path) \(args.joined(separator: " ")) exited with \(p.exitStatus): \(text)")
    }
    return text
}

/// Runs the loop until `condition` holds or `seconds` pass; returns whether it held.
@discardableResult
func runUntil(_ loop: EventLoop, seconds: Double = 5, _ condition: () -> Bool) throws -> Bool {
    let deadline = nowNanos() + Int64(seconds * 1e9)
    while !condition() {
        if nowNanos() >= deadline { return false }
        try loop.runOnce(timeoutMs: 10)
    }
    return true
}

/// Runs the loop for `seconds` (for asserting that something does NOT happen meanwhile).
func runFor(_ loop: EventLoop, seconds: Double) throws {
    let deadline = nowNanos() + Int64(seconds * 1e9)
    while nowNanos() < deadline { try loop.runOnce(timeoutMs: 10) }
}

func testConfig(port: Int, id: String, host: String = "127.0.0.1") -> MQTTConfig {
    var c = MQTTConfig(host: host, port: port, id: id)
    c.backoffInitial = 20_000_000
    c.backoffMax = 200_000_000
    c.keepalive = 5
    return c
}

/// Number of open file descriptors of this process.
func openFDCount() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Resident set size in KiB.
func residentKiB() -> Int {
    guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
    let f = s.split(separator: " ")
    return (Int(f[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
}

/// A CA and a server certificate for 127.0.0.1 signed by it (openssl, EC P-256), in `dir`.
func makeCertificates(in dir: String, name: String = "ca") throws -> (ca: String, cert: String, key: String) {
    let ossl = "/usr/bin/openssl"
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    try runTool(ossl, ["req", "-x509"] + ec + ["-keyout", "\(dir)/\(name).key", "-out", "\(dir)/\(name).pem", "-days", "2", "-subj", "/CN=kioskd test \(name)"])
    try runTool(ossl, ["req"] + ec + ["-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=127.0.0.1"])
    try "subjectAltName=IP:127.0.0.1\n".write(toFile: "\(dir)/ext.cnf", atomically: true, encoding: .utf8)
    try runTool(ossl, ["x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/\(name).pem", "-CAkey", "\(dir)/\(name).key",
                       "-CAcreateserial", "-out", "\(dir)/server.pem", "-days", "2", "-extfile", "\(dir)/ext.cnf"])
    return ("\(dir)/\(name).pem", "\(dir)/server.pem", "\(dir)/server.key")
}
