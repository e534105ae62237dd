#if canImport(Glibc)
import Glibc
#endif

/// Numbers and UTC times as text, what `String(format:)` and `ISO8601DateFormatter` gave: kioskd
/// links FoundationEssentials only, which has neither (BENCHMARKS.md, "Package size").
public enum TextFormat {
    /// `value` in decimal, at least `width` characters with zeros in front ("%0*d": a minus sign
    /// comes before the zeros and counts in the width).
    public static func zeroPadded<T: BinaryInteger>(_ value: T, width: Int) -> String {
        let digits = String(value.magnitude)
        let sign = value < 0 ? "-" : ""
        return sign + String(repeating: "0", count: max(0, width - sign.count - digits.count)) + digits
    }

    /// `value` in hexadecimal with at least `width` digits ("%0*X", or "%0*x" when not `uppercase`).
    public static func hex<T: BinaryInteger>(_ value: T, width: Int, uppercase: Bool = true) -> String {
        let digits = String(value.magnitude, radix: 16, uppercase: uppercase)
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }

    /// The value of one hexadecimal digit written as an ASCII byte (`0-9`, `A-F`, `a-f`); nil for
    /// any other byte.
    public static func hexDigit(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        default: return nil
        }
    }

    /// `value` rounded to `digits` decimals ("%.*f"; halves away from zero).
    public static func fixed(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        var scale = 1.0
        for _ in 0..<max(0, digits) { scale *= 10 }
        let scaled = (value.magnitude * scale).rounded(.toNearestOrAwayFromZero)
        guard scaled < 9.0e18 else { return "\(value)" }
        let n = UInt64(scaled)
        let whole = n / UInt64(scale)
        let sign = value < 0 && n > 0 ? "-" : ""
        guard digits > 0 else { return sign + String(whole) }
        return sign + String(whole) + "." + zeroPadded(n % UInt64(scale), width: digits)
    }

    /// The UTC time `unixSeconds` as "2026-11-28T20:01:02Z" ("…:02.345Z" with `milliseconds`), or
    /// "20261128T200102Z" when `compact` (file names).
    public static func utc(_ unixSeconds: Int64, milliseconds: Int? = nil, compact: Bool = false) -> String {
        var t = time_t(unixSeconds)
        var v = tm()
        gmtime_r(&t, &v)
        let p = { (n: Int32, w: Int) in zeroPadded(n, width: w) }
        let (d, c, tsep) = compact ? ("", "", "T") : ("-", ":", "T")
        return p(v.tm_year + 1900, 4) + d + p(v.tm_mon + 1, 2) + d + p(v.tm_mday, 2) + tsep
            + p(v.tm_hour, 2) + c + p(v.tm_min, 2) + c + p(v.tm_sec, 2)
            + (milliseconds.map { "." + zeroPadded($0, width: 3) } ?? "") + "Z"
    }
}
