#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskPosix

/// Loopback TCP ports for tests that start a server of their own (a broker, a web server).
public enum Loopback {
    /// A 127.0.0.1 port nobody listens on right now (bound to port 0, read back, released).
    public static func freePort() throws -> Int {
        let socket = try Descriptor.socket(AF_INET, Int32(SOCK_STREAM.rawValue))
        var addr = address(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.raw, $0, len) == 0 && getsockname(socket.raw, $0, &len) == 0 }
        }
        guard ok else { throw KioskError(.system, "bind 127.0.0.1:0 failed", errno: errno) }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port` now.
    public static func accepts(_ port: Int) -> Bool {
        guard let socket = try? Descriptor.socket(AF_INET, Int32(SOCK_STREAM.rawValue)) else { return false }
        var addr = address(port: port)
        return withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket.raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func address(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = UInt16(port).bigEndian
        return addr
    }
}
