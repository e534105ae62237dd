/// State keys and their file names.
public enum StateKey {
    /// One key from several names: "." between them, and inside each name "%" written as "%25"
    /// and "." as "%2E". Different lists of names never give the same key, and names without
    /// "." or "%" read as written ("counter", "score", "HOME" → "counter.score.HOME").
    public static func join(_ names: [String]) -> String {
        names.map { name in
            var out = ""
            for ch in name.unicodeScalars {
                switch ch {
                case "%": out += "%25"
                case ".": out += "%2E"
                default: out.unicodeScalars.append(ch)
                }
            }
            return out
        }.joined(separator: ".")
    }

    /// The file name for `key`: ASCII letters, digits, `.`, `_` and `-` as they are (a leading `.`
    /// excepted), every other byte of its UTF-8 as `%XX`, then `.state`. `%` itself is always
    /// written `%25`, so the name can be read back to exactly one key: different keys never share
    /// a file, and no key's file is another key's `.bak`, `.tmp` or aside copy (those do not end
    /// in `.state`).
    public static func fileName(for key: String) -> String {
        var out = ""
        for b in key.utf8 {
            let c = Character(Unicode.Scalar(b))
            if c.isASCII && (c.isLetter || c.isNumber || c == "_" || c == "-" || c == ".") && !(out.isEmpty && c == ".") {
                out.append(c)
            } else {
                let hex = Array("0123456789ABCDEF")
                out += "%\(hex[Int(b >> 4)])\(hex[Int(b & 15)])"
            }
        }
        return out + ".state"
    }

    /// The longest file name a key may have: the file system's 255 bytes less the longest suffix
    /// added to it (`.bak.corrupt-YYYYMMDDTHHMMSSZ`).
    public static let maxFileNameBytes = 255 - 29

    /// Why `key` cannot be stored, or nil.
    public static func problem(_ key: String) -> String? {
        let n = fileName(for: key).utf8.count
        return n > maxFileNameBytes ? "its state file name would be \(n) bytes long, more than the \(maxFileNameBytes) allowed" : nil
    }
}
