import CKioskVersionShim

/// kioskd's version (the file VERSION, compiled in: `CKioskVersion`, read through
/// `CKioskVersionShim`), reported by `kioskd --version` and `kioskctl status`, and written into
/// the state directory (`StateVersion`) so that an older kioskd does not read state a newer one wrote.
public enum KioskVersion {
    public static let current = String(cString: kiosk_version_shim())

    /// Orders versions as dpkg does for the usual forms ("0.1.0", "0.2.0~rc1", "1.0.0-2"): digit
    /// runs compare as numbers, other runs as text, `~` sorts before everything (even the end).
    public static func compare(_ a: String, _ b: String) -> Int {
        let x = parts(a), y = parts(b)
        for i in 0..<max(x.count, y.count) {
            let p = i < x.count ? x[i] : nil, q = i < y.count ? y[i] : nil
            if p == q { continue }
            return order(p, q)
        }
        return 0
    }

    private enum Part: Equatable { case number(UInt64), text(String), tilde }

    private static func isDigit(_ c: Unicode.Scalar) -> Bool { c.value >= 0x30 && c.value <= 0x39 }

    private static func parts(_ v: String) -> [Part] {
        var out: [Part] = []
        var i = v.unicodeScalars.startIndex
        let s = v.unicodeScalars
        while i < s.endIndex {
            if s[i] == "~" { out.append(.tilde); i = s.index(after: i); continue }
            let digit = isDigit(s[i])
            var j = i
            while j < s.endIndex, s[j] != "~", isDigit(s[j]) == digit { j = s.index(after: j) }
            let run = String(s[i..<j])
            if digit {
                out.append(.number(UInt64(run) ?? .max))
            } else if !run.allSatisfy({ $0 == "." || $0 == "-" || $0 == "+" }) || out.isEmpty {
                out.append(.text(run.filter { $0 != "." && $0 != "-" }))
            }
            i = j
        }
        return out
    }

    /// nil is the end of a version: before any number or text, after `~`.
    private static func order(_ p: Part?, _ q: Part?) -> Int {
        switch (p, q) {
        case (.tilde?, .tilde?): return 0
        case (.tilde?, _): return -1
        case (_, .tilde?): return 1
        case (nil, _): return -1
        case (_, nil): return 1
        case (.number(let a)?, .number(let b)?): return a < b ? -1 : (a > b ? 1 : 0)
        case (.number?, .text?): return -1
        case (.text?, .number?): return 1
        case (.text(let a)?, .text(let b)?): return a < b ? -1 : (a > b ? 1 : 0)
        }
    }
}
