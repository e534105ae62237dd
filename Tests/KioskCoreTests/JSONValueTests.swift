import Foundation
import KioskCore
import Testing

/// `JSONValue`: read with `JSONDecoder`, written with `JSONEncoder`, in place of
/// `JSONSerialization` (full Foundation). The tests still link full Foundation, so they compare
/// with `JSONSerialization` directly.
struct JSONValueTests {
    private func text(_ v: JSONValue, pretty: Bool = false) throws -> String { String(decoding: try v.bytes(pretty: pretty), as: UTF8.self) }
    private func parse(_ s: String) throws -> JSONValue { try JSONValue.parse(Array(s.utf8)) }

    @Test func scalarsAndContainers() throws {
        #expect(try parse("null") == .null)
        #expect(try parse(" true ") == .bool(true))
        #expect(try parse("false") == .bool(false))
        #expect(try parse(#""x""#) == .string("x"))
        #expect(try parse("[1, \"a\", null, [], {}]") == [1, "a", nil, [], [:]])
        #expect(try parse(#"{"a": {"b": [true]}}"#) == ["a": ["b": [true]]])
        #expect(try parse(#"{"a": 1}"#)["a"] == 1)
        #expect(try parse("[1]")["a"] == nil)
    }

    /// Whole numbers within Int64 are integers, read exactly; the rest are doubles.
    @Test func numbers() throws {
        #expect(try parse("1") == .integer(1))
        #expect(try parse("-7") == .integer(-7))
        #expect(try parse("1.0") == .integer(1))  // JSONDecoder does not say how it was spelt
        #expect(try parse("1e3") == .integer(1000))
        #expect(try parse("1.5") == .double(1.5))
        #expect(try parse("0.1") == .double(0.1))
        #expect(try parse("9007199254740993") == .integer(9_007_199_254_740_993))  // not rounded through a Double
        #expect(try parse("9223372036854775807") == .integer(Int64.max))
        #expect(try parse("-9223372036854775808") == .integer(Int64.min))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try parse("12345678901234567890123") == .double(1.2345678901234568e22))
        guard case .double(let z) = try parse("-0") else { Issue.record("-0 is not a double"); return }
        #expect(z == 0 && z.sign == .minus)
        #expect(try text(parse("-0")) == "-0")
        #expect(try parse("0") == .integer(0))
        #expect(try text([1, 1.5, 60.0, 1e20, 1e-7, -0.0, 0.30000000000000004]) == "[1,1.5,60,1e+20,1e-07,-0,0.30000000000000004]")
        #expect(throws: (any Error).self) { try JSONValue.double(.nan).bytes() }
        #expect(throws: JSONParseError.self) { try parse("1e999") }
    }

    @Test func stringsAndEscapes() throws {
        #expect(try parse(#""a\"b\\c\/d\n\t\r\b\f""#) == .string("a\"b\\c/d\n\t\r\u{8}\u{C}"))
        #expect(try parse(#""\u00e9\ud83d\ude00""#) == .string("é😀"))  // a surrogate pair
        #expect(throws: JSONParseError.self) { try parse(#""\ud800""#) }  // a lone surrogate
        #expect(throws: JSONParseError.self) { try parse(#""\udc00\ud800""#) }
        #expect(throws: JSONParseError.self) { try parse("\"a\u{1}b\"") }  // unescaped control character
        // Control characters escaped on output, `/` and other characters as they are.
        #expect(try text(.string("\u{0}\u{1F}\u{7F}/é😀\u{2028}\"\\\n")) == "\"\\u0000\\u001f\u{7F}/é😀\u{2028}\\\"\\\\\\n\"")
    }

    @Test func roundTrips() throws {
        let samples = [
            #"{"a":[1,2.5,"x",null,true,false,{"b":{}}],"c":"/path"}"#, "[]", "{}", #""s""#, "3", "null",
            #"{"z":1,"a":2,"m":[{"y":"é","b":"\u0001"}]}"#,
        ]
        for s in samples {
            let v = try parse(s)
            #expect(try JSONValue.parse(v.bytes()) == v, "\(s)")
            #expect(try JSONValue.parse(v.bytes(pretty: true)) == v, "\(s)")
        }
        let swiftValues: [String: Any] = ["s": "x", "i": 3, "d": 1.5, "b": true, "a": [1, "two"], "o": ["k": Optional<Int>.none as Any]]
        let v = try #require(JSONValue(any: swiftValues))
        #expect(v == ["s": "x", "i": 3, "d": 1.5, "b": true, "a": [1, "two"], "o": ["k": nil]])
        #expect(JSONValue(any: v.anyValue) == v)
        #expect((v.anyValue as? [String: Any])?["i"] as? Int == 3)
        #expect(JSONValue(any: [Date()]) == nil)
        // Every integer type the answers hold (a status's frame count is a UInt64).
        let integers: [Any] = [Int8(-8), Int16(16), Int32(-32), Int64.min, UInt8(8), UInt16(16), UInt32(32), UInt(7), UInt64(64), UInt64.max]
        #expect(JSONValue(any: integers) == [-8, 16, -32, .integer(Int64.min), 8, 16, 32, 7, 64, .double(1.8446744073709552e19)])
    }

    /// The bytes JSONSerialization wrote for representative answers (keys sorted; the keys here
    /// sort the same by bytes as by Foundation's collation), compact and pretty.
    @Test func sameBytesAsJSONSerialization() throws {
        let answers: [[String: Any]] = [
            ["blanked": false, "fps": 60.0, "frame_gap_ms": 16.7, "frame_gap_ms_max": 120, "frame_ms_p99": 3.25, "frames": 12345,
             "output": "HDMI-A-1", "scene": "score", "theme": "dark", "time_synced": true, "uptime_s": 3600, "warnings": ["a/b", "c"],
             "screens": [["name": "HDMI-A-1", "connected": true, "blanked": false, "showing": true, "mode": "1920x1080@60",
                          "backlight_percent": 80.5]]],
            ["display.blank.schedule": ["22:00-07:00"], "scene.score.counter[0].label": "LIONS \"1\"", "scene.score.digits": 3, "x": 1.5,
             "y": true, "theme": NSNull()],
            ["device": ["identifiers": ["kioskd_hall"], "name": "kioskd hall", "manufacturer": "kioskd"], "origin": ["name": "kioskd"],
             "availability": [["topic": "kioskd/hall/availability", "payload_available": "online"]], "qos": 1,
             "components": ["scene": ["options": ["clock", "score"], "command_topic": "kioskd/hall/scene/set", "min": -5, "step": 1],
                            "empty": [String: Any](), "none": [Any]()]],
        ]
        for a in answers {
            let v = try #require(JSONValue(any: a.mapValues { $0 is NSNull ? JSONValue.null : $0 }))
            for pretty in [false, true] {
                var opts: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
                if pretty { opts.insert(.prettyPrinted) }
                let old = try JSONSerialization.data(withJSONObject: a, options: opts)
                #expect(try v.bytes(pretty: pretty) == Array(old), "\(String(decoding: old, as: UTF8.self))")
            }
            // And what JSONSerialization reads back from the new bytes is the same object.
            let back = try JSONSerialization.jsonObject(with: Data(try v.bytes())) as? NSDictionary
            #expect(back == (a as NSDictionary))
        }
    }

    /// JSONDecoder refuses nesting deeper than 512 (as JSONSerialization did) without building
    /// anything; 512 levels are read.
    @Test func depth() throws {
        let deep = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        var v = try parse(deep)
        var levels = 0
        while case .array(let a) = v, let first = a.first { v = first; levels += 1 }
        #expect(levels == JSONValue.maxDepth - 1)
        #expect(throws: JSONParseError.self) { try parse("[" + deep + "]") }
        let huge = String(repeating: "[", count: 40_000) + String(repeating: "]", count: 40_000)
        #expect(throws: JSONParseError.self) { try parse(huge) }
    }

    @Test func malformed() throws {
        for bad in ["", " ", "{bad", "[1,", #"{"a":}"#, #"{"a" 1}"#, "[1] x", "nul", "01", "[-]", "[1.]", "+1", ".5", "NaN", #""\x""#] {
            #expect(throws: JSONParseError.self, "\(bad)") { try parse(bad) }
        }
        #expect(throws: JSONParseError("not valid JSON (RFC 8259)")) { try parse("{bad") }
        // A trailing comma is taken, as JSONSerialization took it; of duplicate keys JSONDecoder
        // takes the first (JSONSerialization took the last; RFC 8259 leaves it open).
        #expect(try parse("[1,]") == [1])
        #expect(try parse(#"{"a":1,"b":3,"a":2}"#) == ["a": 1, "b": 3])
    }

    @Test func described() throws {
        #expect(try parse("null").described == "null")
        #expect(try parse("true").described == "a boolean (true)")
        #expect(try parse("3").described == "a number (3)")
        #expect(try parse("1.5").described == "a number (1.5)")
        #expect(try parse("1e300").described == "a number (1e+300)")
        #expect(try parse(#""x""#).described == #"a string ("x")"#)
        #expect(try parse("[1]").described == "an array")
        #expect(try parse("{}").described == "an object")
    }

    /// RFC 3986 unreserved characters stay; every other UTF-8 byte is `%XX`.
    @Test func pathSegments() {
        #expect(PathSegment.percentEncoded("HOME-1_a.b~") == "HOME-1_a.b~")
        #expect(PathSegment.percentEncoded("a b/c?d#e%f+g") == "a%20b%2Fc%3Fd%23e%25f%2Bg")
        #expect(PathSegment.percentEncoded("Anna's phone é") == "Anna%27s%20phone%20%C3%A9")
        #expect(PathSegment.percentEncoded("😀") == "%F0%9F%98%80")
        for s in ["a b/c", "é😀", "x%2Fy", "+:@!", ""] {
            #expect(PathSegment.percentDecoded(PathSegment.percentEncoded(s)) == s)
            #expect(PathSegment.percentEncoded(s).removingPercentEncoding == s)
        }
        // Decoding as Foundation's `removingPercentEncoding` does, invalid sequences included.
        for s in ["plain", "a%20b", "%e2%82%ac", "a+b", "%", "%4", "%zz", "x%C3", "%C3%A9%", "%2f%2F", "100%25"] {
            #expect(PathSegment.percentDecoded(s) == s.removingPercentEncoding, "\(s)")
        }
    }
}
