import FoundationEssentials
import Glibc
import KioskCore

/// Where saved paintings go and how they are written: PNG files in one directory (created when
/// missing), never anywhere else and never over an existing file. Without a name a painting is
/// `painting-YYYYMMDD-HHMMSS[-N].png` (local time); a given name must be a plain file name (see
/// `validateFileName`). Each file is written and fsync'ed as a new file (O_CREAT|O_EXCL|
/// O_NOFOLLOW, mode 0640) that is removed again if writing fails. Errors name the path, the call
/// and errno.
struct PaintingFiles: Sendable {
    /// The directory paintings are saved in.
    let directory: String
    /// Test seam: called before each write with the path (on the thread that writes); an errno
    /// makes that write fail.
    var writeFault: (@Sendable (String) -> Int32?)?

    init(directory: String) { self.directory = directory }

    /// Checks a given name and creates the directory when missing: what must hold before
    /// `write` (on the thread that writes).
    func prepare(name: String?) throws {
        if let name { try PaintScene.validateFileName(name) }
        try Self.makeDirectory(directory)
    }

    /// Writes `png` under `name`, or under a time-stamped name for `realtimeNs` (the first of
    /// `painting-STAMP.png`, `painting-STAMP-2.png`, … that does not exist); returns the path.
    /// Call `prepare(name:)` first.
    func write(_ png: [UInt8], name: String?, realtimeNs: Int64) throws -> String {
        let base = directory.hasSuffix("/") ? directory : directory + "/"
        if let name {
            let target = base + name
            try ExclusiveFile.write(png, to: target, fault: writeFault)
            return target
        }
        let stamp = Self.timeStamp(realtimeNs: realtimeNs)
        var n = 1
        while true {
            let candidate = base + (n == 1 ? "painting-\(stamp).png" : "painting-\(stamp)-\(n).png")
            do {
                try ExclusiveFile.write(png, to: candidate, fault: writeFault)
                return candidate
            } catch let e as KioskError where e.errno == EEXIST && n < 1000 {
                n += 1
            }
        }
    }

    /// Creates a directory and its missing parents (mkdir, mode 0755); errors name the directory and errno.
    static func makeDirectory(_ path: String) throws {
        var prefix = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                let e = errno
                throw KioskError(.scene, "cannot create the painting directory \(path): mkdir \(prefix): \(String(cString: strerror(e)))", errno: e)
            }
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw KioskError(.scene, "cannot save paintings in \(path): it is not a directory")
        }
    }

    /// `YYYYMMDD-HHMMSS` in local time.
    static func timeStamp(realtimeNs ns: Int64) -> String {
        var t = time_t(ns / 1_000_000_000)
        var tmv = tm()
        localtime_r(&t, &tmv)
        var buf = [CChar](repeating: 0, count: 32)
        strftime(&buf, buf.count, "%Y%m%d-%H%M%S", &tmv)
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension PaintScene {
    /// The longest file name `save(name:)` takes, in bytes.
    public static let maxFileNameBytes = PaintingFileName.maxBytes

    /// A file name for a saved painting (the rule is `PaintingFileName.validate`, shared with
    /// the control protocol).
    public static func validateFileName(_ name: String) throws { try PaintingFileName.validate(name) }
}

/// Writes a new file in one go: created exclusively (never over an existing file, never through a
/// symlink), written, fsync'ed, closed; removed again when any step fails.
enum ExclusiveFile {
    /// `fault` is called before each write with the path; an errno makes that write fail (tests).
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o640, fault: (@Sendable (String) -> Int32?)? = nil) throws {
        func failure(_ call: String, _ e: Int32) -> KioskError {
            KioskError(.system, "cannot write \(path): \(call): \(String(cString: strerror(e))) (errno \(e))", errno: e)
        }
        var fd: Int32
        repeat { fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            let e = errno
            if e == EEXIST {
                throw KioskError(.system, "cannot write \(path): a file of that name already exists (errno \(e)); paintings are never overwritten", errno: e)
            }
            throw failure("open", e)
        }
        var done = 0
        var err: KioskError?
        while done < bytes.count {
            if let e = fault?(path) { err = failure("write", e); break }
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                err = failure("write", errno)
                break
            }
            done += n
        }
        if err == nil && fsync(fd) != 0 { err = failure("fsync", errno) }
        if close(fd) != 0 && err == nil && errno != EINTR { err = failure("close", errno) }
        if let err {
            unlink(path)
            throw err
        }
    }
}
