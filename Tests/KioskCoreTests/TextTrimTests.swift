import Foundation
import KioskCore
import Testing

/// `trimmingWhitespace`/`trimmingSpaces` give what Foundation's `trimmingCharacters(in:)` gives
/// (the tests still link full Foundation, so they compare with it directly).
struct TextTrimTests {
    static let samples = [
        "", " ", "\t\n", " a b ", "\u{00A0}x\u{2028}", "\r\nline\r\n", "\u{3000}全角\u{3000}",
        "\u{85}y\u{2029}", "no-trim", " \u{200B}zero-width\u{200B} ", "\u{1F600} ", "\u{0B}\u{0C}v",
        "\u{FEFF}bom\u{FEFF}", "\u{180E}mvs", "\u{2009}thin\u{202F}", "\u{1680}ogham",
    ]

    @Test(arguments: samples)
    func matchesFoundation(_ s: String) {
        #expect(s.trimmingWhitespace() == s.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(s.trimmingSpaces() == s.trimmingCharacters(in: .whitespaces))
    }

    @Test func substringsAndOwnSets() {
        let s = "[::1]"
        #expect(s.trimming { $0 == "[" || $0 == "]" } == "::1")
        #expect(s.dropFirst().trimmingWhitespace() == "::1]")
        #expect("----".trimming { $0 == "-" } == "")
    }
}
