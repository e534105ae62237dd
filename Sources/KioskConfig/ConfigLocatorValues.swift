import KioskCore

/// How the locator steps over values: strings (one-line and multi-line, basic and literal),
/// arrays and inline tables (whose elements and keys get lines), and scalars up to their
/// delimiter. Nothing here computes a value; TOMLKit does that. The checks on the way are the
/// inputs toml++ asserts on instead of reporting (`dateWithoutTime`, `dateSpaceLoneDigit`, an
/// array element starting with `}`) and the `\u0000` escapes its C strings would cut short.
extension ConfigLocator.Scanner {
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
