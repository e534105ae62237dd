import Testing
import Foundation
@testable import KioskCore

/// `TextFormat` gives what `String(format:)` gave for the formats kioskd used.
@Suite struct TextFormatTests {
    @Test func integersAsPrintfDoes() {
        for (v, w) in [(0, 2), (7, 2), (42, 2), (123, 2), (-5, 3), (2026, 4), (9, 4)] {
            #expect(TextFormat.zeroPadded(v, width: w) == String(format: "%0\(w)d", v))
        }
        for (v, w) in [(0, 2), (0xAB, 2), (0x1F600, 4), (0x5, 4), (255, 2)] {
            #expect(TextFormat.hex(v, width: w) == String(format: "%0\(w)X", v))
            #expect(TextFormat.hex(v, width: w, uppercase: false) == String(format: "%0\(w)x", v))
        }
        #expect(TextFormat.hex(UInt8(0xE9), width: 2) == "E9")
    }

    /// Every byte: a hex digit's value as `Int(_:radix: 16)` reads that one character, nil otherwise.
    @Test func hexDigitsAsRadix16Reads() {
        for b in UInt8.min...UInt8.max {
            let expected = b < 0x80 ? Int(String(UnicodeScalar(b)), radix: 16).map(UInt8.init) : nil
            #expect(TextFormat.hexDigit(b) == expected, "byte \(b)")
        }
    }

    @Test func decimals() {
        #expect(TextFormat.fixed(1.234, digits: 2) == "1.23")
        #expect(TextFormat.fixed(1.235001, digits: 2) == "1.24")
        #expect(TextFormat.fixed(0, digits: 2) == "0.00")
        #expect(TextFormat.fixed(-3.5, digits: 1) == "-3.5")
        #expect(TextFormat.fixed(-0.001, digits: 2) == "0.00")
        #expect(TextFormat.fixed(12.9, digits: 0) == "13")
        #expect(TextFormat.fixed(1000.05, digits: 3) == "1000.050")
        #expect(TextFormat.fixed(.nan, digits: 2) == "nan")
    }

    @Test func utcTimes() {
        #expect(TextFormat.utc(1_764_360_062) == "2025-11-28T20:01:02Z")
        #expect(TextFormat.utc(1_764_360_062, compact: true) == "20251128T200102Z")
        #expect(TextFormat.utc(0) == "1970-01-01T00:00:00Z")
        #expect(TextFormat.utc(1_764_360_062, milliseconds: 45) == "2025-11-28T20:01:02.045Z")
        let f = ISO8601DateFormatter()
        for t: Int64 in [86_399, 951_782_400, 4_102_444_799] {
            #expect(TextFormat.utc(t) == f.string(from: Date(timeIntervalSince1970: TimeInterval(t))))
        }
    }
}
