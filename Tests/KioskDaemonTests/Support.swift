import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import Logging

/// A fresh temporary directory for one test.
func tempDir(_ tag: String = #function) -> String {
    // Short: the control socket inside must stay within a Unix socket path's 103 bytes.
    let clean = String(tag.filter { $0.isLetter || $0.isNumber }.prefix(20))
    let d = "\(NSTemporaryDirectory())kt-\(clean)-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    try! FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

/// Writes `text` to `dir/name` and returns the path.
@discardableResult
func write(_ text: String, _ dir: String, _ name: String = "kioskd.toml") -> String {
    let p = "\(dir)/\(name)"
    try! text.write(toFile: p, atomically: false, encoding: .utf8)
    return p
}

/// The message of the config error thrown by `body`, or nil.
func configError(_ body: () throws -> Void) -> String? {
    do { try body(); return nil } catch let e as KioskError { return e.message } catch { return "\(error)" }
}

/// Loads a config file written to a temporary directory.
func loadConfig(_ text: String, dir: String? = nil, env: [String: String] = [:]) throws -> DaemonConfig {
    let d = dir ?? tempDir()
    let path = write(text, d)
    return try DaemonConfig.load(path: path, environment: env)
}

let quietLogger: Logger = {
    var l = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    l.logLevel = .critical
    return l
}()
