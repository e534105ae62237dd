/// Trimming as `trimmingCharacters(in:)` did with `CharacterSet`, which only full Foundation has
/// (kioskd links FoundationEssentials alone; BENCHMARKS.md, "Package size").
extension StringProtocol {
    /// Without white space and line breaks at either end (`.whitespacesAndNewlines`: every
    /// Unicode white space, e.g. " ", "\t", "\n", "\r", U+00A0, U+2028).
    public func trimmingWhitespace() -> String {
        trimming { $0.properties.isWhitespace }
    }

    /// Without spaces and tabs at either end (`.whitespaces`: Unicode's horizontal white space,
    /// line breaks kept).
    public func trimmingSpaces() -> String {
        trimming { $0.properties.isWhitespace && !TextTrim.isLineBreak($0) }
    }

    /// Without the scalars `drop` names at either end.
    public func trimming(_ drop: (Unicode.Scalar) -> Bool) -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !drop($0) })!
        var kept = String.UnicodeScalarView()
        kept.append(contentsOf: scalars[first...last])
        return String(kept)
    }
}

enum TextTrim {
    /// Line breaks as `CharacterSet.newlines`: U+000A–U+000D, U+0085, U+2028, U+2029.
    static func isLineBreak(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return true
        default: return false
        }
    }
}
