import FoundationEssentials
import KioskCore
import KioskPosix

#if canImport(Glibc)
import Glibc
#endif

/// `flock(2)` (the name alone would be the struct's inside `Syscalls`).
@usableFromInline func systemFlock(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }

extension FileStateStore {
    /// Every system call the store makes on its directory and files; tests replace them to inject
    /// failures or to model a power cut. Each returns -1 and sets `errno` on failure, like the C call.
    public struct Syscalls: Sendable {
        public var openat: @Sendable (_ dirfd: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32
        public var read: @Sendable (_ fd: Int32, _ into: UnsafeMutableRawPointer, _ count: Int) -> Int
        public var write: @Sendable (_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int
        public var fsync: @Sendable (_ fd: Int32) -> Int32
        public var ftruncate: @Sendable (_ fd: Int32, _ length: off_t) -> Int32
        public var fstat: @Sendable (_ fd: Int32, _ into: UnsafeMutablePointer<stat>) -> Int32
        /// `fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW)` when `follow` is false.
        public var fstatat: @Sendable (_ dirfd: Int32, _ name: String, _ into: UnsafeMutablePointer<stat>, _ follow: Bool) -> Int32
        public var renameat: @Sendable (_ dirfd: Int32, _ from: String, _ to: String) -> Int32
        public var unlinkat: @Sendable (_ dirfd: Int32, _ name: String) -> Int32
        public var mkdir: @Sendable (_ path: String, _ mode: mode_t) -> Int32
        public var flock: @Sendable (_ fd: Int32, _ operation: Int32) -> Int32
        public var fchmod: @Sendable (_ fd: Int32, _ mode: mode_t) -> Int32

        public init(openat: @escaping @Sendable (Int32, String, Int32, mode_t) -> Int32,
                    write: @escaping @Sendable (Int32, UnsafeRawPointer, Int) -> Int,
                    fsync: @escaping @Sendable (Int32) -> Int32,
                    renameat: @escaping @Sendable (Int32, String, String) -> Int32,
                    unlinkat: @escaping @Sendable (Int32, String) -> Int32,
                    mkdir: @escaping @Sendable (String, mode_t) -> Int32,
                    read: @escaping @Sendable (Int32, UnsafeMutableRawPointer, Int) -> Int = { Glibc.read($0, $1, $2) },
                    ftruncate: @escaping @Sendable (Int32, off_t) -> Int32 = { Glibc.ftruncate($0, $1) },
                    fstat: @escaping @Sendable (Int32, UnsafeMutablePointer<stat>) -> Int32 = { Glibc.fstat($0, $1) },
                    fstatat: @escaping @Sendable (Int32, String, UnsafeMutablePointer<stat>, Bool) -> Int32 = {
                        Glibc.fstatat($0, $1, $2, $3 ? 0 : AT_SYMLINK_NOFOLLOW)
                    },
                    flock: @escaping @Sendable (Int32, Int32) -> Int32 = { systemFlock($0, $1) },
                    fchmod: @escaping @Sendable (Int32, mode_t) -> Int32 = { Glibc.fchmod($0, $1) }) {
            self.openat = openat; self.write = write; self.fsync = fsync
            self.renameat = renameat; self.unlinkat = unlinkat; self.mkdir = mkdir
            self.read = read; self.ftruncate = ftruncate; self.fstat = fstat; self.fstatat = fstatat
            self.flock = flock; self.fchmod = fchmod
        }

        /// The real calls.
        public static let system = Syscalls(
            openat: { Glibc.openat($0, $1, $2, $3) },
            write: { Glibc.write($0, $1, $2) },
            fsync: { Glibc.fsync($0) },
            renameat: { Glibc.renameat($0, $1, $0, $2) },
            unlinkat: { Glibc.unlinkat($0, $1, 0) },
            mkdir: { Glibc.mkdir($0, $1) })
    }

    /// What a file that is not a regular file is ("a FIFO"), for errors.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        case S_IFLNK: return "a symbolic link"
        default: return "not a regular file"
        }
    }

    /// Opens `name` in the directory with `flags` plus `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC` (so a
    /// FIFO or device never blocks the open) and checks it is a regular file. Nil when it does
    /// not exist; throws naming the file when it cannot be opened or is not a regular file.
    func openRegular(_ name: String, _ flags: Int32, mode: mode_t = 0) throws -> Descriptor? {
        let p = "\(directory)/\(name)"
        let fd = sys.openat(dirFD, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode)
        if fd < 0 && (errno == EISDIR || errno == ENXIO) {
            // O_WRONLY on a directory, or a FIFO without a reader: say what it is.
            var st = stat()
            if sys.fstatat(dirFD, name, &st, false) == 0 {
                throw KioskError.state("\(p) is \(Self.kind(st.st_mode)), not a regular file; move it out of the state directory")
            }
        }
        if fd < 0 && errno == ENOENT { return nil }
        guard fd >= 0 else { throw failure("open", p) }
        let file = Descriptor(adopting: fd)
        var st = stat()
        guard sys.fstat(fd, &st) == 0 else { throw failure("fstat", p) }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw KioskError.state("\(p) is \(Self.kind(st.st_mode)), not a regular file; move it out of the state directory")
        }
        return file
    }

    /// Every byte of an open file (up to `limit`, plus one buffer to tell a longer one).
    func readAll(_ fd: Int32, path: String, limit: Int = .max) throws -> [UInt8] {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while out.count <= limit {
            let n = buf.withUnsafeMutableBytes { sys.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw failure("read", path) }
            if n == 0 { break }
            out += buf[..<n]
        }
        return out
    }

    /// Writes every byte (retrying after EINTR and short writes); the errno of a failure (EIO for a
    /// write of nothing) and how many bytes were written before it.
    func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> (errno: Int32, written: Int)? {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { sys.write(fd, $0.baseAddress! + off, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return (n == 0 ? EIO : errno, off) }
            off += n
        }
        return nil
    }

    func failure(_ call: String, _ path: String, _ e: Int32 = errno) -> KioskError {
        KioskError(.state, Self.failed(call, path, e), errno: e)
    }
}
