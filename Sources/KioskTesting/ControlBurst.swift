#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore
import KioskPosix
import Synchronization

/// A minimal HTTP/1.1 client on one kept-alive Unix-socket connection (blocking), for bursts
/// against the control socket where a connection per request would measure the client.
public final class UnixHTTPConnection {
    private let socket: Descriptor
    private var buffer: [UInt8] = []

    /// Connects to `path` (wraps `socket(2)` and `connect(2)`); `timeout` bounds each read.
    public init(path: String, timeout: Double = 30) throws {
        socket = try Descriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue))
        var tv = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(socket.raw, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in path.utf8.prefix(p.count - 1).enumerated() { p[i] = b }
        }
        try withUnsafePointer(to: &addr) { a in
            try Posix.call("connect", path: path) {
                a.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket.raw, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        }
    }

    /// Sends one request and reads its answer: (status, body).
    public func request(_ method: String, _ path: String, body: String = "") throws -> (status: Int, body: String) {
        let req = Array("\(method) \(path) HTTP/1.1\r\nHost: kioskd\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
        try req.withUnsafeBytes { try socket.write(all: $0, what: "write to the control socket") }
        // Head, then Content-Length bytes of body.
        while true {
            if let end = headEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                let lines = head.split(separator: "\r\n")
                let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
                let length = lines.compactMap { l -> Int? in
                    let kv = l.split(separator: ":", maxSplits: 1)
                    guard kv.count == 2, kv[0].lowercased() == "content-length" else { return nil }
                    return Int(kv[1].trimmingCharacters(in: .whitespaces))
                }.first ?? 0
                while buffer.count < end + 4 + length { try fill() }
                let b = String(decoding: buffer[(end + 4)..<(end + 4 + length)], as: UTF8.self)
                buffer.removeFirst(end + 4 + length)
                return (status, b)
            }
            try fill()
        }
    }

    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
        return nil
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = try chunk.withUnsafeMutableBytes { try socket.read(into: $0.baseAddress!, count: $0.count, what: "read from the control socket") }
        guard n > 0 else { throw KioskError(.system, "the control socket closed the connection") }
        buffer += chunk[..<n]
    }
}

/// `clients` threads, each on its own kept-alive connection, each sending `perClient` POSTs to
/// the paths given for it (round robin): how many were acknowledged (200), the answers that were
/// not, and the wall time of the whole burst.
public enum ControlBurst {
    public struct Result: Sendable {
        public var acknowledged: Int
        public var failures: [String]
        public var seconds: Double
        public var perSecond: Double { Double(acknowledged) / max(seconds, 1e-9) }
    }

    public static func run(socket: String, clients: Int, perClient: Int, paths: @escaping @Sendable (Int) -> [String]) -> Result {
        final class Tally: Sendable {
            let counts = Mutex<(acked: Int, failures: [String])>((0, []))
            let done = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
        }
        let t = Tally()
        for c in 0..<clients {
            let th = Thread {
                var ok = 0
                var bad: [String] = []
                do {
                    let conn = try UnixHTTPConnection(path: socket)
                    let ps = paths(c)
                    t.go.wait()
                    for i in 0..<perClient {
                        let r = try conn.request("POST", ps[i % ps.count])
                        if r.status == 200 { ok += 1 } else if bad.count < 5 { bad.append("\(r.status) \(r.body)") }
                    }
                } catch {
                    bad.append("client \(c): \(error)")
                }
                t.counts.withLock { $0.acked += ok; $0.failures += bad }
                t.done.signal()
            }
            th.start()
        }
        usleep(100_000) // every client connected and waiting
        let t0 = nowNanos(.monotonic)
        for _ in 0..<clients { t.go.signal() }
        for _ in 0..<clients { t.done.wait() }
        let seconds = Double(nowNanos(.monotonic) - t0) / 1e9
        let (acked, failures) = t.counts.withLock { $0 }
        return Result(acknowledged: acked, failures: failures, seconds: seconds)
    }
}
