#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A datagram socket standing in for systemd's `NOTIFY_SOCKET`: bound at `path` (by default a
/// fresh name under /tmp), reads wait at most `timeoutMs`.
public final class NotifySocket {
    public let path: String
    public let fd: Int32

    public init(path: String = "/tmp/kiosk-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock", timeoutMs: Int = 100) {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let p = Array(path.utf8)
        withUnsafeMutableBytes(of: &addr.sun_path) { for (i, b) in p.enumerated() { $0[i] = b } }
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        var tv = timeval(tv_sec: timeoutMs / 1000, tv_usec: (timeoutMs % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd); unlink(path) }

    /// Messages received within `seconds`, each with its arrival time.
    public func collect(seconds: Double) -> [(Double, String)] {
        var out: [(Double, String)] = []
        let start = Date()
        var buf = [UInt8](repeating: 0, count: 4096)
        while Date().timeIntervalSince(start) < seconds {
            let n = recv(fd, &buf, buf.count, 0)
            if n > 0 { out.append((Date().timeIntervalSince(start), String(decoding: buf[0..<n], as: UTF8.self))) }
        }
        return out
    }
}
