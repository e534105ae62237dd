/// Finds the line on which every key, table and array element of a TOML document was written.
///
/// TOMLKit (toml++) parses the values but does not expose node positions, so this scanner walks
/// the source text once: it tracks `[table]` and `[[array]]` headers, dotted and quoted keys,
/// inline tables, multi-line arrays and strings, and records a line for each path. It computes no
/// values and reports no syntax errors: the document has already been parsed by TOMLKit, and a
/// path the scanner misses falls back to its parent's line.
///
/// Paths are written like `ConfigTable.path`: `display.rotation`, `scene.score.counter[1].name`.
public struct ConfigLocator: Sendable {
    /// Line (1-based) of each path.
    public private(set) var lines: [String: Int] = [:]

    public init(source: String) {
        var s = Scanner(Array(source.utf8))
        s.scanDocument()
        lines = s.lines
    }

    /// The line of `path`, or of its nearest ancestor that was found; nil when none was.
    public func line(of path: String) -> Int? {
        var p = path
        while true {
            if let l = lines[p] { return l }
            guard let cut = ConfigLocator.parentCut(p) else { return nil }
            p = String(p[..<cut])
        }
    }

    private static func parentCut(_ p: String) -> String.Index? {
        guard !p.isEmpty else { return nil }
        if p.hasSuffix("]"), let open = p.lastIndex(of: "[") { return open }
        return p.lastIndex(of: ".")
    }

    /// Joins path components the way `ConfigTable` names its tables.
    static func join(_ parent: String, _ key: String) -> String { parent.isEmpty ? key : "\(parent).\(key)" }

    private struct Scanner {
        let b: [UInt8]
        var i = 0
        var line = 1
        var lines: [String: Int] = [:]
        /// How many `[[x]]` elements each array-of-tables path has seen.
        var arrayCounts: [String: Int] = [:]

        init(_ b: [UInt8]) { self.b = b }

        var atEnd: Bool { i >= b.count }
        var peek: UInt8 { i < b.count ? b[i] : 0 }

        mutating func advance() {
            if b[i] == UInt8(ascii: "\n") { line += 1 }
            i += 1
        }

        mutating func record(_ path: String, _ l: Int) {
            if lines[path] == nil { lines[path] = l }
        }

        /// Skips spaces, tabs, and (when `newlines`) line breaks and comments.
        mutating func skipSpace(newlines: Bool) {
            while !atEnd {
                let c = peek
                if c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\r") { advance() }
                else if c == UInt8(ascii: "#") { while !atEnd && peek != UInt8(ascii: "\n") { advance() } }
                else if newlines && c == UInt8(ascii: "\n") { advance() }
                else { break }
            }
        }

        mutating func skipToLineEnd() {
            while !atEnd && peek != UInt8(ascii: "\n") { advance() }
        }

        mutating func scanDocument() {
            var table = ""
            while !atEnd {
                skipSpace(newlines: true)
                if atEnd { break }
                if peek == UInt8(ascii: "[") {
                    let l = line
                    advance()
                    let isArray = peek == UInt8(ascii: "[")
                    if isArray { advance() }
                    let keys = scanKey()
                    var path = ""
                    for (n, k) in keys.enumerated() {
                        path = ConfigLocator.join(path, k)
                        // An intermediate table that is an array of tables refers to its latest element.
                        if n < keys.count - 1, let c = arrayCounts[path] { path += "[\(c - 1)]" }
                        record(path, l)
                    }
                    if isArray {
                        let c = arrayCounts[path, default: 0]
                        arrayCounts[path] = c + 1
                        path += "[\(c)]"
                        record(path, l)
                    }
                    table = path
                    skipToLineEnd()
                } else {
                    scanKeyValue(in: table)
                    skipToLineEnd()
                }
            }
        }

        /// `key = value` inside table `parent`.
        mutating func scanKeyValue(in parent: String) {
            let l = line
            let keys = scanKey()
            guard !keys.isEmpty else { skipToLineEnd(); return }
            var path = parent
            for k in keys {
                path = ConfigLocator.join(path, k)
                record(path, l)
            }
            skipSpace(newlines: false)
            guard peek == UInt8(ascii: "=") else { return }
            advance()
            skipSpace(newlines: false)
            scanValue(path)
        }

        /// A dotted key: bare, "basic" or 'literal' parts.
        mutating func scanKey() -> [String] {
            var parts: [String] = []
            while !atEnd {
                skipSpace(newlines: false)
                let c = peek
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                    parts.append(scanQuotedKey(c))
                } else if isBare(c) {
                    let start = i
                    while !atEnd && isBare(peek) { advance() }
                    parts.append(String(decoding: b[start..<i], as: UTF8.self))
                } else {
                    break
                }
                skipSpace(newlines: false)
                if peek == UInt8(ascii: ".") { advance() } else { break }
            }
            return parts
        }

        func isBare(_ c: UInt8) -> Bool {
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
        }

        mutating func scanQuotedKey(_ q: UInt8) -> String {
            advance()
            var out: [UInt8] = []
            while !atEnd && peek != q && peek != UInt8(ascii: "\n") {
                if q == UInt8(ascii: "\"") && peek == UInt8(ascii: "\\") {
                    advance()
                    if atEnd { break }
                    let e = peek
                    switch e {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    default: out.append(e)
                    }
                    advance()
                    continue
                }
                out.append(peek)
                advance()
            }
            if !atEnd && peek == q { advance() }
            return String(decoding: out, as: UTF8.self)
        }

        /// One value; arrays and inline tables record their elements' lines under `path`.
        mutating func scanValue(_ path: String) {
            let c = peek
            if c == UInt8(ascii: "[") {
                advance()
                var index = 0
                while !atEnd {
                    skipSpace(newlines: true)
                    if peek == UInt8(ascii: "]") { advance(); return }
                    if peek == UInt8(ascii: ",") { advance(); continue }
                    let elem = "\(path)[\(index)]"
                    record(elem, line)
                    let before = i
                    scanValue(elem)
                    if i == before { advance() }
                    index += 1
                }
            } else if c == UInt8(ascii: "{") {
                advance()
                while !atEnd {
                    skipSpace(newlines: true)
                    if peek == UInt8(ascii: "}") { advance(); return }
                    if peek == UInt8(ascii: ",") { advance(); continue }
                    let before = i
                    scanKeyValue(in: path)
                    if i == before { advance() }
                }
            } else if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                scanString(c)
            } else {
                // Number, boolean, date: up to a delimiter.
                while !atEnd {
                    let d = peek
                    if d == UInt8(ascii: ",") || d == UInt8(ascii: "]") || d == UInt8(ascii: "}")
                        || d == UInt8(ascii: "\n") || d == UInt8(ascii: "#") { break }
                    advance()
                }
            }
        }

        mutating func scanString(_ q: UInt8) {
            let triple = i + 2 < b.count && b[i + 1] == q && b[i + 2] == q
            if triple {
                advance(); advance(); advance()
                while !atEnd {
                    if q == UInt8(ascii: "\"") && peek == UInt8(ascii: "\\") { advance(); if !atEnd { advance() }; continue }
                    if peek == q && i + 2 < b.count && b[i + 1] == q && b[i + 2] == q {
                        advance(); advance(); advance()
                        // Up to two more quotes may belong to the content.
                        while !atEnd && peek == q { advance() }
                        return
                    }
                    advance()
                }
            } else {
                advance()
                while !atEnd && peek != q && peek != UInt8(ascii: "\n") {
                    if q == UInt8(ascii: "\"") && peek == UInt8(ascii: "\\") { advance(); if atEnd { break } }
                    advance()
                }
                if !atEnd && peek == q { advance() }
            }
        }
    }
}
