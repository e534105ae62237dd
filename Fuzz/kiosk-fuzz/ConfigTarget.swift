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

    /// Optional guard (KIOSK_FUZZ_SKIP_KNOWN=1): skip inputs with a table header whose first
    /// character cannot start a key (`[= 0`), which fails an assertion in toml++'s parse_key()
    /// and aborts (Fuzz/crashes/config); without it every run stops there within seconds.
    static let skipKnown = ProcessInfo.processInfo.environment["KIOSK_FUZZ_SKIP_KNOWN"] == "1"

    static func hasBadTableHeader(_ data: UnsafeRawBufferPointer) -> Bool {
        var lineStart = true
        var i = 0
        while i < data.count {
            let b = data[i]
            if b == 0x0A { lineStart = true; i += 1; continue }
            if lineStart && (b == 0x20 || b == 0x09) { i += 1; continue }
            if lineStart && b == 0x5B {
                var j = i + 1
                while j < data.count && (data[j] == 0x5B || data[j] == 0x20 || data[j] == 0x09) { j += 1 }
                if j < data.count {
                    let c = data[j]
                    let keyStart = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                        || c == 0x5F || c == 0x2D || c == 0x22 || c == 0x27 || c == 0x5D || c >= 0x80
                    if !keyStart { return true }
                }
            }
            lineStart = false
            i += 1
        }
        return false
    }

    static func run(_ data: UnsafeRawBufferPointer) {
        if let m = maxNesting, tooDeep(data, limit: m) { return }
        if skipKnown, hasBadTableHeader(data) { return }
        guard FileManager.default.createFile(atPath: path, contents: Data(data)) else { fatalError("cannot write \(path)") }
        do {
            let c = try DaemonConfig.load(path: path, environment: [:])
            _ = c.scenes.count
        } catch {
            _ = "\(error)"
        }
    }
}
