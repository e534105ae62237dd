import Foundation
import KioskConfig
import KioskDaemon

/// Config TOML text → `DaemonConfig`, through the same entry point as the daemon
/// (`DaemonConfig.load(path:)` on a file), with a theme folder holding one theme file.
enum ConfigTarget {
    static let dir: String = {
        var template = Array("/tmp/kiosk-fuzz-config-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed: errno \(errno)") }
        let d = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        try? FileManager.default.createDirectory(atPath: "\(d)/themes", withIntermediateDirectories: true)
        try? "base = \"dark\"\n[palette]\nprimary = \"#112233\"\n".write(toFile: "\(d)/themes/t.toml", atomically: false, encoding: .utf8)
        return d
    }()
    static let path = "\(dir)/kioskd.toml"

    static func run(_ data: UnsafeRawBufferPointer) {
        guard FileManager.default.createFile(atPath: path, contents: Data(data)) else { fatalError("cannot write \(path)") }
        do {
            let c = try DaemonConfig.load(path: path, environment: [:])
            _ = c.scenes.count
        } catch {
            _ = "\(error)"
        }
    }
}
