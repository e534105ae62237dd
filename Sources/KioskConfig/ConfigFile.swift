import FoundationEssentials
import Glibc
import KioskCore
import KioskPosix
import TOMLKit

/// Reads TOML files into `ConfigTable` trees whose every key knows its file and line.
///
/// Whatever the bytes, loading ends in a tree or a `KioskError.config` naming the file, the line
/// (and column where it helps) and what was expected; it never crashes. Before the text reaches
/// the TOML parser it is checked for NUL bytes, invalid UTF-8, its size, nesting deeper than
/// `maxDepth` and `\u0000` escapes; the converted tree is checked again (depth, NULs, string sizes).
public enum ConfigFile {
    /// Largest config or theme file.
    public static let maxFileBytes = 1 << 20
    /// Deepest path (tables, dotted keys, array elements and inline tables together).
    public static let maxDepth = 64
    /// Longest string value, in bytes (PATH_MAX).
    public static let maxStringBytes = 4096

    /// Reads and parses `path`. Errors name the file (and line:column for syntax errors).
    public static func load(path: String) throws -> ConfigTable {
        try parse(bytes: try readBytes(path: path), file: path)
    }

    /// The bytes of `path`, at most `maxFileBytes`; errors name the path and the failed call.
    static func readBytes(path: String) throws -> [UInt8] {
        func fail(_ what: String) -> KioskError { .config("\(path): cannot read the config file: \(what)") }
        /// A failed call as a config error (the file cannot be used), keeping errno.
        @discardableResult
        func sys<T: BinaryInteger>(_ call: String, _ body: () -> T) throws -> T {
            do { return try Posix.call(call, path: path, body) } catch let e as KioskError {
                throw KioskError(.config, "\(path): cannot read the config file: \(e.message)", errno: e.errno)
            }
        }
        let fd = try sys("open") { open(path, O_RDONLY | O_CLOEXEC) }
        defer { close(fd) }
        var st = stat()
        try sys("fstat") { fstat(fd, &st) }
        if (st.st_mode & S_IFMT) == S_IFDIR { throw fail("it is a directory, expected a file") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try sys("read") { chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) } }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > maxFileBytes {
                let size = (st.st_mode & S_IFMT) == S_IFREG ? max(Int(st.st_size), bytes.count) : bytes.count
                throw KioskError.config("\(path): the file is \((st.st_mode & S_IFMT) == S_IFREG ? "" : "more than ")\(size) bytes; a config file may have at most \(maxFileBytes) bytes")
            }
        }
        return bytes
    }

    /// Parses TOML `text` (with `TOMLTable(string:)`, toml++) into a `ConfigTable` named `file`.
    public static func parse(_ text: String, file: String) throws -> ConfigTable {
        try parse(bytes: Array(text.utf8), file: file)
    }

    /// Checks and parses the bytes of a TOML document named `file`.
    public static func parse(bytes: [UInt8], file: String) throws -> ConfigTable {
        if bytes.count > maxFileBytes {
            throw KioskError.config("\(file): the file is \(bytes.count) bytes; a config file may have at most \(maxFileBytes) bytes")
        }
        if let nul = bytes.firstIndex(of: 0) {
            let (l, c) = position(of: nul, in: bytes)
            throw KioskError.config("\(file):\(l):\(c): the file contains a NUL byte; a config file is UTF-8 text without NUL bytes")
        }
        if let bad = firstInvalidUTF8(bytes) {
            let (l, c) = position(of: bad, in: bytes)
            throw KioskError.config("\(file):\(l):\(c): not valid UTF-8 (byte 0x\(TextFormat.hex(bytes[bad], width: 2))); a config file is UTF-8 text")
        }
        // Depth and NUL escapes first: the parser and the conversion below recurse per level.
        let locator = ConfigLocator(bytes: bytes, depthLimit: maxDepth)
        if let bad = locator.badValue {
            throw KioskError.config("\(file):\(bad.line):\(bad.column): TOML syntax error: expected \(bad.expected), saw \(bad.found)")
        }
        if let bad = locator.badHeader {
            throw KioskError.config("\(file):\(bad.line):\(bad.column): TOML syntax error: expected a key (bare or quoted) in the table header, saw \(bad.found)")
        }
        if let deep = locator.tooDeep {
            throw KioskError.config("\(file):\(deep.line): key '\(ConfigTable.printable(deep.path))': nested more than \(maxDepth) levels (tables, dotted keys, arrays and inline tables count together)")
        }
        if let nul = locator.nulEscape {
            throw KioskError.config("\(file):\(nul.line): key '\(ConfigTable.printable(nul.path))': contains a NUL character (\\u0000); config \(nul.inKey ? "keys" : "strings") cannot hold NUL")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let toml: TOMLTable
        do {
            toml = try TOMLTable(string: text)
        } catch let e as TOMLParseError {
            let p = e.source.begin
            throw KioskError.config("\(file):\(p.line):\(p.column): TOML syntax error: \(e.description)")
        }
        return try convert(toml, path: "", depth: 0, file: file, locator: locator, line: 0)
    }

    /// 1-based line and column (in characters) of byte `index`.
    static func position(of index: Int, in bytes: [UInt8]) -> (Int, Int) {
        var line = 1, column = 1
        for b in bytes[..<index] {
            if b == 0x0A { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }

    /// The offset of the first byte that does not start or continue a well-formed UTF-8
    /// sequence (no overlong forms, no surrogates, nothing above U+10FFFF); nil when all are.
    static func firstInvalidUTF8(_ b: [UInt8]) -> Int? {
        var i = 0
        let n = b.count
        while i < n {
            let c = b[i]
            if c < 0x80 { i += 1; continue }
            let len: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch c {
            case 0xC2...0xDF: len = 2
            case 0xE0: len = 3; lo = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: len = 3
            case 0xED: len = 3; hi = 0x9F
            case 0xF0: len = 4; lo = 0x90
            case 0xF1...0xF3: len = 4
            case 0xF4: len = 4; hi = 0x8F
            default: return i
            }
            guard i + len <= n else { return i }
            if b[i + 1] < lo || b[i + 1] > hi { return i }
            for k in 2..<len where b[i + k] & 0xC0 != 0x80 { return i }
            i += len
        }
        return nil
    }

    private static func location(_ path: String, _ file: String, _ locator: ConfigLocator, fallback: Int) -> SourceLocation {
        SourceLocation(file: file, line: locator.line(of: path) ?? fallback)
    }

    private static func tooDeep(_ path: String, _ loc: SourceLocation) -> KioskError {
        KioskError.config("\(loc): key '\(ConfigTable.printable(path))': nested more than \(maxDepth) levels (tables, dotted keys, arrays and inline tables count together)")
    }

    private static func convert(_ t: TOMLTable, path: String, depth: Int, file: String, locator: ConfigLocator, line: Int) throws -> ConfigTable {
        let table = ConfigTable(path: path, location: SourceLocation(file: file, line: line))
        var items: [(String, ConfigNode)] = []
        for key in t.keys {
            guard let v = t[key] else { continue }
            let childPath = ConfigLocator.join(path, key)
            let loc = location(childPath, file, locator, fallback: line)
            if key.utf8.contains(0) {
                throw KioskError.config("\(loc): key '\(ConfigTable.printable(childPath))': contains a NUL character (\\u0000); config keys cannot hold NUL")
            }
            items.append((key, try node(v, path: childPath, depth: depth + 1, file: file, locator: locator, loc: loc)))
        }
        // toml++ keeps keys sorted; report them in the order they were written.
        items.sort { $0.1.location.line < $1.1.location.line }
        for (k, n) in items { table.set(k, n) }
        return table
    }

    private static func node(_ v: TOMLValueConvertible, path: String, depth: Int, file: String, locator: ConfigLocator,
                             loc: SourceLocation) throws -> ConfigNode {
        if depth > maxDepth { throw tooDeep(path, loc) }
        switch v.type {
        case .string:
            let s = v.string ?? ""
            if s.utf8.contains(0) {
                throw KioskError.config("\(loc): key '\(ConfigTable.printable(path))': contains a NUL character (\\u0000); config strings cannot hold NUL")
            }
            if s.utf8.count > maxStringBytes {
                throw KioskError.config("\(loc): key '\(ConfigTable.printable(path))': a string of \(s.utf8.count) bytes is too long; config strings have at most \(maxStringBytes) bytes")
            }
            return ConfigNode(.string(s), at: loc)
        case .int: return ConfigNode(.int(v.int ?? 0), at: loc)
        case .double: return ConfigNode(.double(v.double ?? 0), at: loc)
        case .bool: return ConfigNode(.bool(v.bool ?? false), at: loc)
        case .table:
            let t = try convert(v.table!, path: path, depth: depth, file: file, locator: locator, line: loc.line)
            return ConfigNode(.table(t), at: loc)
        case .array:
            var out: [ConfigNode] = []
            for (i, e) in v.array!.enumerated() {
                let p = "\(path)[\(i)]"
                out.append(try node(e, path: p, depth: depth + 1, file: file, locator: locator,
                                    loc: location(p, file, locator, fallback: loc.line)))
            }
            return ConfigNode(.array(out), at: loc)
        case .date, .time, .dateTime:
            throw KioskError.config("\(loc): key '\(ConfigTable.printable(path))': dates and times are not used by kioskd; write the value as a string (e.g. \"23:00\")")
        }
    }
}
