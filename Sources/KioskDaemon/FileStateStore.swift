import Foundation
import KioskCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Durable state in a directory: one small file per key, each change on disk before `save` returns.
///
/// A file holds a header line `kioskd-state 1 <length> <fnv1a64>` and the value, so a truncated
/// or damaged file is recognised. `save` writes `<key>.state.tmp`, `fsync`s it, renames the
/// current file to `<key>.state.bak` (the previous good copy), renames the temp file into place
/// and `fsync`s the directory. At start a file that fails its check is reported, moved aside as
/// `<key>.state.corrupt-<timestamp>`, and the `.bak` copy is used; when there is no good copy
/// either, the error is logged and `load` returns nil (the scene's documented default).
public final class FileStateStore: StateStore {
    public let directory: String
    private let logger: Logger
    private var cache: [String: String?] = [:]
    /// Every file-system step in order ("write x", "fsync x", "rename x y", "fsync-dir d"), for tests.
    public var trace: ((String) -> Void)?
    /// Problems found while loading (file and what was wrong), newest last; also logged.
    public private(set) var problems: [String] = []

    /// Opens (and creates, mode 0750) the state directory.
    public init(directory: String, logger: Logger) throws {
        self.directory = directory
        self.logger = logger
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o750])
        } catch {
            throw KioskError.state("cannot create the state directory \(directory): \(ConfigFile.describe(error))")
        }
        guard access(directory, W_OK) == 0 else {
            throw KioskError.state("the state directory \(directory) is not writable by this user (uid \(getuid())): \(String(cString: strerror(errno)))")
        }
    }

    /// The file name for `key`: letters, digits, `.`, `_` and `-` as they are, other bytes as `%XX`.
    public static func fileName(for key: String) -> String {
        var out = ""
        for b in key.utf8 {
            let c = Character(Unicode.Scalar(b))
            if c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-" || c == ".") && !(out.isEmpty && c == ".") {
                out.append(c)
            } else {
                out += String(format: "%%%02X", b)
            }
        }
        return out + ".state"
    }

    public func path(for key: String) -> String { "\(directory)/\(FileStateStore.fileName(for: key))" }

    // MARK: format

    /// FNV-1a, 64 bit: detects truncation and damage (not tampering).
    static func checksum(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return h
    }

    static func encode(_ value: String) -> [UInt8] {
        let v = Array(value.utf8)
        return Array("kioskd-state 1 \(v.count) \(String(checksum(v), radix: 16))\n".utf8) + v
    }

    enum DecodeError: Error, CustomStringConvertible {
        case badHeader, truncated(expected: Int, got: Int), checksum, notUTF8
        var description: String {
            switch self {
            case .badHeader: return "the header line is missing or damaged"
            case .truncated(let e, let g): return "truncated: header promises \(e) bytes, file holds \(g)"
            case .checksum: return "the checksum does not match the value"
            case .notUTF8: return "the value is not UTF-8 text"
            }
        }
    }

    static func decode(_ bytes: [UInt8]) throws -> String {
        guard let nl = bytes.firstIndex(of: 0x0A), nl < 200 else { throw DecodeError.badHeader }
        let header = String(decoding: bytes[..<nl], as: UTF8.self).split(separator: " ")
        guard header.count == 4, header[0] == "kioskd-state", header[1] == "1",
              let len = Int(header[2]), len >= 0, let sum = UInt64(header[3], radix: 16) else { throw DecodeError.badHeader }
        let body = Array(bytes[(nl + 1)...])
        guard body.count == len else { throw DecodeError.truncated(expected: len, got: body.count) }
        guard checksum(body) == sum else { throw DecodeError.checksum }
        guard let s = String(validatingUTF8: body.map { CChar(bitPattern: $0) } + [0]) else { throw DecodeError.notUTF8 }
        return s
    }

    // MARK: load

    private func readFile(_ path: String) -> [UInt8]? {
        guard let d = FileManager.default.contents(atPath: path) else { return nil }
        return [UInt8](d)
    }

    /// Reads `path`; nil when it does not exist. A damaged file is reported and moved aside.
    private func readChecked(_ path: String) -> String?? {
        guard let bytes = readFile(path) else { return .none }
        do {
            return .some(try FileStateStore.decode(bytes))
        } catch {
            let aside = "\(path).corrupt-\(Self.timestamp())"
            let moved = rename(path, aside) == 0
            let msg = "state file \(path) is damaged (\(error)); " + (moved ? "moved aside to \(aside)" : "could not move it aside: \(String(cString: strerror(errno)))")
            problems.append(msg)
            logger.error("\(msg)", metadata: ["state.file": "\(path)"])
            return .some(nil)
        }
    }

    static func timestamp() -> String {
        var t = time(nil)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", tmv.tm_year + 1900, tmv.tm_mon + 1, tmv.tm_mday, tmv.tm_hour, tmv.tm_min, tmv.tm_sec)
    }

    public func load(_ key: String) -> String? {
        if let c = cache[key] { return c }
        let p = path(for: key)
        unlink(p + ".tmp") // an unacknowledged write interrupted by a crash
        var value: String?
        switch readChecked(p) {
        case .some(.some(let v)):
            value = v
        case .some(.none), .none:
            let current = FileManager.default.fileExists(atPath: p)
            switch readChecked(p + ".bak") {
            case .some(.some(let v)):
                value = v
                let why = current ? "" : (problems.last?.contains(p) == true ? "the current file was damaged" : "the current file is missing (interrupted save)")
                logger.warning("state '\(key)': using the previous good copy \(p).bak\(why.isEmpty ? "" : " (\(why))")",
                               metadata: ["state.file": "\(p).bak"])
                // Put the good copy back in place so the next start finds it.
                if (try? writeDurably(Self.encode(v), to: p, keepBackup: false)) == nil {
                    logger.error("cannot restore \(p) from its backup", metadata: ["state.file": "\(p)"])
                }
            case .some(.none):
                logger.error("state '\(key)': no good copy left (\(p) and \(p).bak damaged); the scene starts from its default",
                             metadata: ["state.file": "\(p)"])
            case .none:
                if problems.contains(where: { $0.contains(p) }) {
                    logger.error("state '\(key)': \(p) was damaged and there is no backup; the scene starts from its default",
                                 metadata: ["state.file": "\(p)"])
                }
            }
        }
        cache[key] = .some(value)
        return value
    }

    // MARK: save

    public func save(_ key: String, _ value: String) throws {
        if let c = cache[key], c == value { return }
        try writeDurably(Self.encode(value), to: path(for: key), keepBackup: true)
        cache[key] = .some(value)
    }

    /// Removes a key (and its backup).
    public func remove(_ key: String) throws {
        let p = path(for: key)
        unlink(p)
        unlink(p + ".bak")
        try fsyncDirectory()
        cache[key] = .some(nil)
    }

    /// temp file → fsync → (current → .bak) → rename into place → fsync directory.
    private func writeDurably(_ bytes: [UInt8], to p: String, keepBackup: Bool) throws {
        let tmp = p + ".tmp"
        do {
            let fd = try syscall("open(\(tmp))") { open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o640) }
            defer { close(fd) }
            trace?("write \(tmp)")
            var off = 0
            while off < bytes.count {
                let n = try bytes.withUnsafeBytes { buf in
                    try syscall("write(\(tmp))") { write(fd, buf.baseAddress! + off, buf.count - off) }
                }
                off += n
            }
            trace?("fsync \(tmp)")
            try syscall("fsync(\(tmp))") { fsync(fd) }
        }
        if keepBackup && access(p, F_OK) == 0 {
            trace?("rename \(p) \(p).bak")
            try syscall("rename(\(p), \(p).bak)") { rename(p, p + ".bak") }
        }
        trace?("rename \(tmp) \(p)")
        try syscall("rename(\(tmp), \(p))") { rename(tmp, p) }
        try fsyncDirectory()
    }

    private func fsyncDirectory() throws {
        let dfd = try syscall("open(\(directory))") { open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { close(dfd) }
        trace?("fsync-dir \(directory)")
        try syscall("fsync(\(directory))") { fsync(dfd) }
    }
}
