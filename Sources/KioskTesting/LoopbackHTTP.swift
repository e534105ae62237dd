import Foundation
#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskPosix

/// One HTTP/1.1 request to 127.0.0.1:`port` on a new connection (`Connection: close`), read to
/// the end: for process tests that call a kioskd's web page API (blocking; a receive timeout).
public enum LoopbackHTTP {
    public struct Reply: Sendable {
        public var status: Int
        /// Header names in lower case.
        public var headers: [String: String]
        public var body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Sends `method path` (with a JSON `body` and a `cookie` when given) and reads the answer
    /// until the server closes; throws (naming the port and path) when no HTTP answer came.
    public static func request(_ port: Int, _ method: String, _ path: String, body: String? = nil, cookie: String? = nil,
                               timeoutSeconds: Int = 10) throws -> Reply {
        let socket = try Descriptor.socket(AF_INET, Int32(SOCK_STREAM.rawValue))
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(socket.raw, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = in_port_t(UInt16(port).bigEndian)
        a.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket.raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if r != 0 { throw Posix.error("connect", path: "127.0.0.1:\(port)", errno: errno) }
        var req = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let cookie { req += "Cookie: \(cookie)\r\n" }
        if let body { req += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        req += "\r\n" + (body ?? "")
        let bytes = Array(req.utf8)
        var off = 0
        while off < bytes.count {
            let n = bytes[off...].withUnsafeBytes { send(socket.raw, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { throw Posix.error("send", path: "127.0.0.1:\(port)\(path)", errno: errno) }
            off += n
        }
        var raw: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 16384)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(socket.raw, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            raw += buf[0..<n]
        }
        guard let reply = parse(raw) else {
            throw KioskError(.system, "no HTTP answer from 127.0.0.1:\(port) to \(method) \(path) (\(raw.count) bytes read)")
        }
        return reply
    }

    /// The status line, headers and body of a whole answer; nil when it is not one.
    static func parse(_ raw: [UInt8]) -> Reply? {
        guard raw.count >= 4, let end = (0...(raw.count - 4)).first(where: { raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10 }) else { return nil }
        let lines = String(decoding: raw[..<end], as: UTF8.self).split(separator: "\r\n")
        guard let first = lines.first, first.hasPrefix("HTTP/1."), first.split(separator: " ").count >= 2,
              let status = Int(first.split(separator: " ")[1]) else { return nil }
        var headers: [String: String] = [:]
        for l in lines.dropFirst() {
            guard let c = l.firstIndex(of: ":") else { continue }
            headers[l[..<c].lowercased()] = l[l.index(after: c)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(raw[(end + 4)...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunked(body) }
        return Reply(status: status, headers: headers, body: body)
    }

    /// The data of a chunked body (what arrived of it).
    static func dechunked(_ b: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 0
        while i < b.count {
            guard let lineEnd = (i..<max(i, b.count - 1)).first(where: { b[$0] == 13 && b[$0 + 1] == 10 }),
                  let size = Int(String(decoding: b[i..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            out += b[start..<min(start + size, b.count)]
            i = start + size + 2
        }
        return out
    }
}
