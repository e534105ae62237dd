import Foundation
import KioskControl
@testable import KioskDaemon
import KioskTestTraits
import Testing

/// The control socket's answers byte for byte, as the NIOHTTP1 server before the move to the
/// shared Hummingbird stack wrote them (recorded from it): status line with the request's
/// version and the standard reason phrase, exactly Content-Type, Content-Length and Connection,
/// `Content-Length: 0` for HEAD, and whether the connection is kept or closed afterwards.
@Suite(.ownThreads, .serialized) struct ControlWireTests {
    static func head(_ status: String, _ body: String, close: Bool, version: String = "1.1", length: Int? = nil) -> String {
        "HTTP/\(version) \(status)\r\nContent-Type: application/json\r\nContent-Length: \(length ?? body.utf8.count)\r\n"
            + "Connection: \(close ? "close" : "keep-alive")\r\n\r\n" + body
    }
    static let inc = "POST /counter/HOME/inc HTTP/1.1\r\nHost: k\r\nContent-Length: 0\r\n\r\n"
    static let tooLarge = #"{"error":"request body too large: at most 65536 bytes"}"# + "\n"
    static let badMethod = #"{"error":"malformed HTTP request: invalid method"}"# + "\n"

    /// (request bytes, the whole answer, whether the server closed the connection), in order on one daemon.
    static let cases: [(String, String, RawConn.End)] = [
        (inc, head("200 OK", #"{"counter":"HOME","ok":true,"value":1}"# + "\n", close: false), .timeout),
        ("HEAD /counter/HOME HTTP/1.1\r\nHost: k\r\n\r\n", head("200 OK", "", close: false, length: 0), .timeout),
        ("POST /counter/NOPE/inc HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
         head("404 Not Found", #"{"error":"unknown counter 'NOPE'; counters: HOME, AWAY","field":"name"}"# + "\n", close: false), .timeout),
        ("POST /counter/HOME/set HTTP/1.1\r\nContent-Length: 13\r\n\r\n{\"value\":\"x\"}",
         head("400 Bad Request", #"{"error":"field 'value' must be an integer, got a string (\"x\")","field":"value"}"# + "\n", close: false), .timeout),
        // Answered at once; the connection waits for the rest of the body to throw it away.
        ("POST /scene HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n{}", head("413 Payload Too Large", tooLarge, close: true), .timeout),
        ("NOT HTTP AT ALL\r\n\r\n", head("400 Bad Request", badMethod, close: true), .eof),
        ("GET /status HTTP/1.1\r\nX-Big: " + String(repeating: "x", count: 100_000) + "\r\n\r\n",
         head("431 Request Header Fields Too Large", #"{"error":"malformed HTTP request: request headers too large (at most 80 KiB)"}"# + "\n", close: true), .eof),
        ("GET /counter/HOME HTTP/1.0\r\n\r\n", head("200 OK", #"{"counter":"HOME","value":1}"# + "\n", close: true, version: "1.0"), .eof),
        // Pipelined, the second with `Connection: close`: the third is never carried out.
        (inc + inc.replacingOccurrences(of: "Host: k\r\n", with: "Host: k\r\nConnection: close\r\n") + inc,
         head("200 OK", #"{"counter":"HOME","ok":true,"value":2}"# + "\n", close: false)
            + head("200 OK", #"{"counter":"HOME","ok":true,"value":3}"# + "\n", close: true), .eof),
        // A chunked body past the limit: 413, the rest read and thrown away, then closed.
        ("POST /scene HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + String(repeating: "8000\r\n" + String(repeating: " ", count: 0x8000) + "\r\n", count: 3) + "0\r\n\r\n",
         head("413 Payload Too Large", tooLarge, close: true), .eof),
        // A good request, then garbage: the first answered, then the 400, then closed.
        ("GET /counter/HOME HTTP/1.1\r\n\r\nGARBAGE\r\n\r\n",
         head("200 OK", #"{"counter":"HOME","value":3}"# + "\n", close: false) + head("400 Bad Request", badMethod, close: true), .eof),
    ]

    @Test func answersAreByteIdenticalToTheFormerServer() throws {
        let d = tempDir()
        let h = try ControlHardeningTests.Harness(d)
        defer { h.stop() }
        for (i, (request, answer, end)) in Self.cases.enumerated() {
            let c = try #require(RawConn(h.sock, receiveTimeout: 0.5))
            c.send(request)
            let (text, got) = c.readAll()
            #expect(text == answer, "case \(i): \(text.debugDescription)")
            #expect(got == end, "case \(i)")
        }
        #expect(h.get("HOME") == 3)
    }
}
