import Foundation
import KioskDaemon

/// Config TOML text → `DaemonConfig`, through the same entry point as the daemon
/// (`DaemonConfig.load(path:)` on a file), with a theme folder holding one theme file.
enum ConfigTarget {
    static let dir: String = {
        var template = Array("/tmp/kiosk-fuzz-config-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed: errno \(errno)") }
        let d = String(cString: template)
        try? FileManager.default.createDirectory(atPath: "\(d)/themes", withIntermediateDirectories: true)
        try? "base = \"dark\"\n[palette]\nprimary = \"#112233\"\n".write(toFile: "\(d)/themes/t.toml", atomically: false, encoding: .utf8)
        return d
    }()
    static let path = "\(dir)/kioskd.toml"

    /// Optional guard (KIOSK_FUZZ_MAX_NESTING=N): skip inputs with a line holding more than N of
    /// `.`, `[` and `{` (deep nesting that overflows the stack in the config conversion).
    static let maxNesting: Int? = ProcessInfo.processInfo.environment["KIOSK_FUZZ_MAX_NESTING"].flatMap { Int($0) }

    static func tooDeep(_ data: UnsafeRawBufferPointer, limit: Int) -> Bool {
        var n = 0
        for b in data {
            if b == 0x0A { n = 0; continue }
            if b == 0x2E || b == 0x5B || b == 0x7B { n += 1; if n > limit { return true } }
        }
        return false
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        if let m = maxNesting, tooDeep(data, limit: m) { return }
        guard FileManager.default.createFile(atPath: path, contents: Data(data)) else { fatalError("cannot write \(path)") }
        do {
            let c = try DaemonConfig.load(path: path, environment: [:])
            _ = c.scenes.count
        } catch {
            _ = "\(error)"
        }
    }
}
