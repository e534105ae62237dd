import KioskCore

/// Finds the line on which every key, table and array element of a TOML document was written.
///
/// TOMLKit is the one TOML parser: every value kioskd uses comes from its tree. It cannot say
/// where a value was written: toml++ keeps a source region on each node (`node::source()`), but
/// TOMLKit's C bridge (CTOML) passes positions on only for parse errors (`TOMLParseError.source`),
/// not for nodes. So this locator walks the source text once and maps each key path to a line:
/// it follows `[table]` and `[[array]]` headers, dotted and quoted keys (decoding a quoted key's
/// escapes, so its path matches TOMLKit's key), and steps over values (ConfigLocatorValues.swift)
/// only to find where the next key starts. It computes no values and reports no syntax errors
/// of its own: a path it misses falls back to its parent's line.
///
/// Paths are written like `ConfigTable.path`: `display.rotation`, `scene.score.counter[1].name`.
///
/// The same pass guards the parser, which runs after it: it stops at the first path nested
/// deeper than `depthLimit` (tables, dotted keys, array elements and inline tables count
/// together), notes the first `\u0000` escape in a basic string or quoted key, and stops at the
/// few inputs toml++ asserts on rather than reporting (`badHeader`, `badValue`).
public struct ConfigLocator: Sendable {
    /// Line (1-based) of each path.
    public private(set) var lines: [String: Int] = [:]
    /// The first path nested deeper than the limit: its line and its first components.
    public private(set) var tooDeep: (line: Int, path: String)?
    /// The first `\u0000` escape: its line, the path of its key or value, and whether the key holds it.
    public private(set) var nulEscape: (line: Int, path: String, inKey: Bool)?
    /// A table header with no key after its `[` or `[[` (toml++ asserts on it rather than
    /// reporting it): line, column and the character found.
    public private(set) var badHeader: (line: Int, column: Int, found: String)?
    /// A value toml++ asserts on rather than reporting: a date followed by `T` and no time
    /// (`1979-05-27T"x`), an array element starting with `}`. What was expected, line, column and
    /// the character found.
    public private(set) var badValue: (expected: String, line: Int, column: Int, found: String)?

    public init(source: String, depthLimit: Int = 64) {
        self.init(bytes: Array(source.utf8), depthLimit: depthLimit)
    }

    public init(bytes: [UInt8], depthLimit: Int = 64) {
        var s = Scanner(bytes, depthLimit: depthLimit)
        s.scanDocument()
        lines = s.lines
        tooDeep = s.tooDeep
        nulEscape = s.nulEscape
        badHeader = s.badHeader
        badValue = s.badValue
    }

    /// A path from its components (`["scene", "x", "[0]"]` → `scene.x[0]`).
    static func path(_ comps: ArraySlice<String>) -> String {
        var p = ""
        for c in comps { p = c.hasPrefix("[") ? p + c : join(p, c) }
        return p
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

    struct Scanner {
        let b: [UInt8]
        let depthLimit: Int
        var i = 0
        var line = 1
        var lines: [String: Int] = [:]
        /// How many `[[x]]` elements each array-of-tables path has seen.
        var arrayCounts: [String: Int] = [:]
        var tooDeep: (line: Int, path: String)?
        var nulEscape: (line: Int, path: String, inKey: Bool)?
        var badHeader: (line: Int, column: Int, found: String)?
        var badValue: (expected: String, line: Int, column: Int, found: String)?
        /// Set by `scanQuotedKey` when the key held a `\u0000` escape.
        var keyHadNul = false

        init(_ b: [UInt8], depthLimit: Int) { self.b = b; self.depthLimit = depthLimit }

        var atEnd: Bool { i >= b.count }
        var peek: UInt8 { i < b.count ? b[i] : 0 }

        mutating func advance() {
            if b[i] == UInt8(ascii: "\n") { line += 1 }
            i += 1
        }

        mutating func record(_ path: String, _ l: Int) {
            if lines[path] == nil { lines[path] = l }
        }

        /// Stops the scan at a path deeper than the limit (nothing deeper is looked at).
        mutating func checkDepth(_ comps: [String], _ l: Int) -> Bool {
            guard comps.count > depthLimit else { return true }
            tooDeep = (l, ConfigLocator.path(comps.prefix(8)) + "…")
            i = b.count
            return false
        }

        mutating func noteNul(_ comps: [String], _ l: Int, inKey: Bool) {
            if nulEscape == nil { nulEscape = (l, ConfigLocator.path(comps[...]), inKey) }
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
            var table: [String] = []
            // A UTF-8 byte order mark is skipped (as toml++ does), so the first line is seen as written.
            if b.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
            while !atEnd {
                skipSpace(newlines: true)
                if atEnd { break }
                if peek == UInt8(ascii: "[") {
                    let l = line
                    advance()
                    let isArray = peek == UInt8(ascii: "[")
                    if isArray { advance() }
                    while !atEnd && (peek == UInt8(ascii: " ") || peek == UInt8(ascii: "\t")) { advance() }
                    let c = peek
                    if !atEnd && !isBare(c) && c != UInt8(ascii: "\"") && c != UInt8(ascii: "'") && c != UInt8(ascii: "]") {
                        badHeader = here()
                        i = b.count
                        return
                    }
                    keyHadNul = false
                    let keys = scanKey()
                    var comps: [String] = []
                    for (n, k) in keys.enumerated() {
                        comps.append(k)
                        // An intermediate table that is an array of tables refers to its latest element.
                        if n < keys.count - 1, let c = arrayCounts[ConfigLocator.path(comps[...])] { comps.append("[\(c - 1)]") }
                        guard checkDepth(comps, l) else { return }
                        record(ConfigLocator.path(comps[...]), l)
                    }
                    if keyHadNul { noteNul(comps, l, inKey: true) }
                    if isArray {
                        let path = ConfigLocator.path(comps[...])
                        let c = arrayCounts[path, default: 0]
                        arrayCounts[path] = c + 1
                        comps.append("[\(c)]")
                        guard checkDepth(comps, l) else { return }
                        record(ConfigLocator.path(comps[...]), l)
                    }
                    table = comps
                    skipToLineEnd()
                } else {
                    scanKeyValue(in: table)
                    skipToLineEnd()
                }
            }
        }

        /// `key = value` inside table `parent`.
        mutating func scanKeyValue(in parent: [String]) {
            let l = line
            keyHadNul = false
            let keys = scanKey()
            guard !keys.isEmpty else { skipToLineEnd(); return }
            var comps = parent
            for k in keys {
                comps.append(k)
                guard checkDepth(comps, l) else { return }
                record(ConfigLocator.path(comps[...]), l)
            }
            if keyHadNul { noteNul(comps, l, inKey: true) }
            skipSpace(newlines: false)
            guard peek == UInt8(ascii: "=") else { return }
            advance()
            skipSpace(newlines: false)
            scanValue(comps)
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
                    if isNulEscape(at: i) { keyHadNul = true }
                    switch e {
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "e"): out.append(0x1B)
                    case UInt8(ascii: "u"), UInt8(ascii: "U"):
                        // \uXXXX, \UXXXXXXXX: the scalar's UTF-8 (as the TOML parser reads it).
                        let n = e == UInt8(ascii: "u") ? 4 : 8
                        var v: UInt32 = 0
                        var digits = 0
                        advance()
                        while digits < n && !atEnd, let h = TextFormat.hexDigit(peek) {
                            v = v &* 16 &+ UInt32(h)
                            digits += 1
                            advance()
                        }
                        out.append(contentsOf: Array(String(Unicode.Scalar(v).map(Character.init) ?? "\u{FFFD}").utf8))
                        continue
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
    }
}
