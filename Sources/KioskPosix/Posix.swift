#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// The one way kioskd calls into the C library for calls that report failure as -1 and errno.
public enum Posix {
    /// Calls `body` until it does not fail with EINTR; any other failure throws a `.system`
    /// `KioskError` naming the call (and the path, when given) and keeping errno:
    /// `open /dev/dri/card0 failed: Permission denied (errno 13)`.
    @discardableResult
    public static func call<T: BinaryInteger>(_ name: String, path: String? = nil, _ body: () -> T) throws -> T {
        while true {
            let r = body()
            if r >= 0 { return r }
            let e = errno
            if e == EINTR { continue }
            throw error(name, path: path, errno: e)
        }
    }

    /// Writes all of `text` to standard error (descriptor 2: short writes continued, EINTR
    /// retried), in place of Foundation's `FileHandle.standardError`. A failure is not reported:
    /// there is nowhere left to report it.
    public static func writeStandardError(_ text: String) {
        var text = text
        text.withUTF8 { bytes in try? write(all: UnsafeRawBufferPointer(bytes), to: 2) }
    }

    /// Writes all of `bytes` to `fd` (short writes continued, EINTR retried through `call`); a
    /// write of nothing is EIO. `Descriptor.write(all:)` and `writeStandardError` both use it.
    public static func write(all bytes: UnsafeRawBufferPointer, to fd: Int32, what: String = "write", path: String? = nil) throws {
        var off = 0
        while off < bytes.count {
            let n = try call(what, path: path) { Glibc.write(fd, bytes.baseAddress! + off, bytes.count - off) }
            if n == 0 { throw error(what, path: path, errno: EIO) }
            off += n
        }
    }

    /// The error `call` throws, for failures found another way (a NULL return, a short write).
    public static func error(_ name: String, path: String? = nil, errno e: Int32) -> KioskError {
        let what = path.map { "\(name) \($0)" } ?? name
        return KioskError(.system, "\(what) failed: \(String(cString: strerror(e))) (errno \(e))", errno: e)
    }
}
