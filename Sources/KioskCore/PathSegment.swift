/// Percent-encoding of one path segment (RFC 3986): every byte of the UTF-8 text outside the
/// unreserved set (`A-Z a-z 0-9 - . _ ~`) as `%XX`, so `/`, `?`, `#`, `%` and spaces in a
/// counter's or device's name stay within its segment.
public enum PathSegment {
    public static func percentEncoded(_ text: String) -> String {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(b)
            default:
                out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` with every `%XX` made its byte again (`+` stays `+`); nil when a `%` is not
    /// followed by two hex digits or the bytes are not UTF-8 (as Foundation's
    /// `removingPercentEncoding`).
    public static func percentDecoded(_ text: some StringProtocol) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.contains(UInt8(ascii: "%")) else { return String(text) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let hi = TextFormat.hexDigit(bytes[i + 1]), let lo = TextFormat.hexDigit(bytes[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
