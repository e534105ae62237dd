import KioskCore

/// Finds the line on which every key, table and array element of a TOML document was written.
///
/// TOMLKit (toml++) parses the values but does not expose node positions, so this scanner walks
/// the source text once: it tracks `[table]` and `[[array]]` headers, dotted and quoted keys,
/// inline tables, multi-line arrays and strings, and records a line for each path. It computes no
/// values and reports no syntax errors: the document has already been parsed by TOMLKit, and a
/// path the scanner misses falls back to its parent's line.
///
/// Paths are written like `ConfigTable.path`: `display.rotation`, `scene.score.counter[1].name`.
///
/// The scanner also guards what comes after it: it stops at the first path nested deeper than
/// `depthLimit` (tables, dotted keys, array elements and inline tables count together) and
/// notes the first `\u0000` escape in a basic string or quoted key, so that neither reaches the
/// TOML parser or the recursive conversion.
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

    private struct Scanner {
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

        /// Line, column and the character at `i` (for errors).
        func here() -> (line: Int, column: Int, found: String) {
            var start = i
            while start > 0 && b[start - 1] != UInt8(ascii: "\n") { start -= 1 }
            let column = 1 + b[start..<i].filter { $0 & 0xC0 != 0x80 }.count
            let found = atEnd ? "end of file" : peek == UInt8(ascii: "\n") ? "end of line"
                : "'\(ConfigTable.printable(String(decoding: b[i..<min(b.count, i + 4)], as: UTF8.self).unicodeScalars.first.map { String($0) } ?? ""))'"
            return (line, column, found)
        }

        /// `YYYY-MM-DD` then `T` or `t` not followed by a digit: toml++ asserts that a time follows.
        mutating func dateWithoutTime() -> Bool {
            func digit(_ k: Int) -> Bool { k < b.count && b[k] >= 0x30 && b[k] <= 0x39 }
            let pattern = [true, true, true, true, false, true, true, false, true, true]
            for (k, isDigit) in pattern.enumerated() {
                if isDigit ? !digit(i + k) : (i + k >= b.count || b[i + k] != UInt8(ascii: "-")) { return false }
            }
            guard i + 10 < b.count, b[i + 10] == UInt8(ascii: "T") || b[i + 10] == UInt8(ascii: "t"), !digit(i + 11) else { return false }
            i += 11
            refuseValue("a time (HH:MM:SS) after the date's 'T'")
            return true
        }

        /// Ten characters shaped like a date (`-` fourth and seventh, `_` not counted, as toml++
        /// counts them), a space and a digit not followed by another digit: toml++ rescans for a
        /// time after the space and asserts when the digit ends the value (`0989-05-2e 7`). No
        /// valid TOML has a value, a space and a lone digit, so the rule refuses nothing good.
        mutating func dateSpaceLoneDigit() -> Bool {
            var firsts: [UInt8] = []
            var k = i
            while k < b.count && firsts.count <= 10 {
                let c = b[k]
                if c == UInt8(ascii: " ") || c == UInt8(ascii: "\t") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r")
                    || c == 0x0B || c == 0x0C || c == UInt8(ascii: ",") || c == UInt8(ascii: "]")
                    || c == UInt8(ascii: "}") || c == UInt8(ascii: "#") { break }
                // One entry per character: UTF-8 continuation bytes and '_' are not counted.
                if c & 0xC0 != 0x80 && c != UInt8(ascii: "_") { firsts.append(c) }
                k += 1
            }
            func digit(_ at: Int) -> Bool { at < b.count && b[at] >= 0x30 && b[at] <= 0x39 }
            guard firsts.count == 10, firsts[4] == UInt8(ascii: "-"), firsts[7] == UInt8(ascii: "-"),
                  k + 1 < b.count, b[k] == UInt8(ascii: " "), digit(k + 1), !digit(k + 2) else { return false }
            i = k + 2
            refuseValue("a time (HH:MM:SS) after the date and its space")
            return true
        }

        /// Stops the scan at a value toml++ would assert on.
        mutating func refuseValue(_ expected: String) {
            let h = here()
            badValue = (expected, h.line, h.column, h.found)
            i = b.count
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
                    case UInt8(ascii: "u"), UInt8(ascii: "U"):
                        // \uXXXX, \UXXXXXXXX: the scalar's UTF-8 (as the TOML parser reads it).
                        let n = e == UInt8(ascii: "u") ? 4 : 8
                        var v: UInt32 = 0
                        var digits = 0
                        advance()
                        while digits < n && !atEnd, let h = hexValue(peek) {
                            v = v &* 16 &+ h
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

        func hexValue(_ c: UInt8) -> UInt32? {
            switch c {
            case 0x30...0x39: return UInt32(c - 0x30)
            case 0x41...0x46: return UInt32(c - 0x41 + 10)
            case 0x61...0x66: return UInt32(c - 0x61 + 10)
            default: return nil
            }
        }

        /// True when `b[at]` (just after a backslash) starts `u0000` or `U00000000`.
        func isNulEscape(at j: Int) -> Bool {
            guard j < b.count else { return false }
            let n: Int
            switch b[j] {
            case UInt8(ascii: "u"): n = 4
            case UInt8(ascii: "U"): n = 8
            default: return false
            }
            guard j + n < b.count else { return false }
            return b[(j + 1)...(j + n)].allSatisfy { $0 == UInt8(ascii: "0") }
        }

        /// One value; arrays and inline tables record their elements' lines under `comps`.
        mutating func scanValue(_ comps: [String]) {
            let c = peek
            let l = line
            if c == UInt8(ascii: "[") {
                advance()
                var index = 0
                while !atEnd {
                    skipSpace(newlines: true)
                    if peek == UInt8(ascii: "]") { advance(); return }
                    if peek == UInt8(ascii: ",") { advance(); continue }
                    if peek == UInt8(ascii: "}") { refuseValue("a value or ']' in the array"); return }
                    let elem = comps + ["[\(index)]"]
                    guard checkDepth(elem, line) else { return }
                    record(ConfigLocator.path(elem[...]), line)
                    let before = i
                    scanValue(elem)
                    if i == before && !atEnd { advance() }
                    index += 1
                }
            } else if c == UInt8(ascii: "{") {
                advance()
                while !atEnd {
                    skipSpace(newlines: true)
                    if peek == UInt8(ascii: "}") { advance(); return }
                    if peek == UInt8(ascii: ",") { advance(); continue }
                    let before = i
                    scanKeyValue(in: comps)
                    if i == before && !atEnd { advance() }
                }
            } else if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
                if scanString(c) { noteNul(comps, l, inKey: false) }
            } else {
                // Number, boolean, date: up to a delimiter.
                if dateWithoutTime() || dateSpaceLoneDigit() { return }
                while !atEnd {
                    let d = peek
                    if d == UInt8(ascii: ",") || d == UInt8(ascii: "]") || d == UInt8(ascii: "}")
                        || d == UInt8(ascii: "\n") || d == UInt8(ascii: "#") { break }
                    advance()
                }
            }
        }

        /// Skips a string; true when a basic string held a `\u0000` escape.
        @discardableResult
        mutating func scanString(_ q: UInt8) -> Bool {
            var nul = false
            let triple = i + 2 < b.count && b[i + 1] == q && b[i + 2] == q
            if triple {
                advance(); advance(); advance()
                while !atEnd {
                    if q == UInt8(ascii: "\"") && peek == UInt8(ascii: "\\") {
                        if isNulEscape(at: i + 1) { nul = true }
                        advance(); if !atEnd { advance() }; continue
                    }
                    if peek == q && i + 2 < b.count && b[i + 1] == q && b[i + 2] == q {
                        advance(); advance(); advance()
                        // Up to two more quotes may belong to the content.
                        while !atEnd && peek == q { advance() }
                        return nul
                    }
                    advance()
                }
            } else {
                advance()
                while !atEnd && peek != q && peek != UInt8(ascii: "\n") {
                    if q == UInt8(ascii: "\"") && peek == UInt8(ascii: "\\") {
                        if isNulEscape(at: i + 1) { nul = true }
                        advance(); if atEnd { break }
                    }
                    advance()
                }
                if !atEnd && peek == q { advance() }
            }
            return nul
        }
    }
}
