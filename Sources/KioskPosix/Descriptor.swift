#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// An open file descriptor that this value owns: it is closed exactly once, when the value ends
/// (or earlier, by `close()`). Not copyable, so no second owner can close it again or use it after
/// the close; store it instead of a raw `Int32`, and lend `raw` to the calls that need the number.
///
/// What kioskd opens itself is opened close-on-exec (`open` and `openat` here add `O_CLOEXEC`),
/// so a child process started with `posix_spawn` gets only the descriptors given to it.
public struct Descriptor: ~Copyable, Sendable {
    /// The descriptor number, lent for the duration of a call; never close it.
    public let raw: Int32

    /// Takes ownership of `raw`, an open descriptor nothing else closes.
    public init(adopting raw: Int32) {
        precondition(raw >= 0, "a Descriptor needs an open descriptor, not \(raw)")
        self.raw = raw
    }

    /// `open(path, flags | O_CLOEXEC, mode)` through `Posix.call`: errors name the path.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0) throws -> Descriptor {
        Descriptor(adopting: try Posix.call("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) })
    }

    /// `socket(domain, type | SOCK_CLOEXEC, 0)` through `Posix.call`.
    public static func socket(_ domain: Int32, _ type: Int32) throws -> Descriptor {
        Descriptor(adopting: try Posix.call("socket") { Glibc.socket(domain, type | Int32(SOCK_CLOEXEC.rawValue), 0) })
    }

    /// `openat(self, name, flags | O_CLOEXEC, mode)` through `Posix.call`; errors name `path`
    /// (default: `name`).
    public func openat(_ name: String, _ flags: Int32, mode: mode_t = 0, path: String? = nil) throws -> Descriptor {
        let dir = raw
        return Descriptor(adopting: try Posix.call("open", path: path ?? name) { Glibc.openat(dir, name, flags | O_CLOEXEC, mode) })
    }

    /// Reads at most `count` bytes (one `read`, retried on EINTR); 0 at the end of the file.
    public func read(into buffer: UnsafeMutableRawPointer, count: Int, what: String = "read", path: String? = nil) throws -> Int {
        try Posix.call(what, path: path) { Glibc.read(raw, buffer, count) }
    }

    /// Writes all of `bytes` (short writes continued, EINTR retried); a write of nothing is EIO.
    public func write(all bytes: UnsafeRawBufferPointer, what: String = "write", path: String? = nil) throws {
        try Posix.write(all: bytes, to: raw, what: what, path: path)
    }

    /// Closes now. (A failed close is not reported: on Linux the descriptor is gone either way,
    /// and retrying could close one opened since by another thread.)
    public consuming func close() {}

    deinit { _ = Glibc.close(raw) }
}
