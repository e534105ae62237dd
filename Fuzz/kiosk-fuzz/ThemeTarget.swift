import Foundation
import KioskConfig
import KioskDaemon

/// Theme file → `Theme` (`ThemeLoader.loadFile`).
enum ThemeTarget {
    static let path: String = {
        var template = Array("/tmp/kiosk-fuzz-theme-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { fatalError("mkdtemp failed: errno \(errno)") }
        return "\(String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))/fuzz.toml"
    }()

    static func run(_ data: UnsafeRawBufferPointer) {
        guard FileManager.default.createFile(atPath: path, contents: Data(data)) else { fatalError("cannot write \(path)") }
        do {
            let t = try ThemeLoader.loadFile(path: path, name: "fuzz")
            _ = t.name
        } catch {
            _ = "\(error)"
        }
    }
}
