import KioskCore
import KioskPosix

#if canImport(Glibc)
import Glibc
#endif

/// The state directory's version file, `kioskd.version`: the state format and the kioskd
/// version that last opened the directory for writing, as two lines `format 1` and
/// `version 0.1.0`.
///
/// A kioskd refuses (a config error: exit status 78, which systemd does not restart) a directory
/// written in a newer state format or by a newer kioskd — a downgrade — before it locks, reads
/// or changes anything there: an older kioskd would take a newer format's files for damaged ones
/// and move them aside. An older or missing version file is replaced (written whole, synced,
/// renamed into place) once the directory is locked: from then on an older kioskd refuses it.
package enum StateVersion {
    /// The state format this kioskd writes: `kioskd-state 1` files and the `kioskdJ2` journal.
    package static let format = 1
    package static let fileName = "kioskd.version"

    package static func encode(format: Int = format, version: String = KioskVersion.current) -> String {
        "format \(format)\nversion \(version)\n"
    }

    /// The format and version in a version file's text; nil when it is not one.
    package static func decode(_ text: String) -> (format: Int, version: String)? {
        var format: Int?, version: String?
        for line in text.split(separator: "\n") {
            let kv = line.split(separator: " ", maxSplits: 1)
            guard kv.count == 2 else { return nil }
            switch kv[0] {
            case "format": format = Int(kv[1])
            case "version": version = String(kv[1])
            default: continue  // a later version may add lines
            }
        }
        guard let f = format, let v = version, !v.isEmpty else { return nil }
        return (f, v)
    }

    /// Why this kioskd (`version`, reading `format`) must not use a directory whose version file
    /// says `found`; nil when it may.
    package static func refusal(directory: String, found: (format: Int, version: String),
                                format: Int = format, version: String = KioskVersion.current) -> String? {
        let newerFormat = found.format > format
        guard newerFormat || KioskVersion.compare(found.version, version) > 0 else { return nil }
        return "the state directory \(directory) was written by kioskd \(found.version) (state format \(found.format)), "
            + "newer than this kioskd \(version) (state format \(format)): refusing to start, so that nothing there is changed. "
            + "Install kioskd \(found.version) or later again, or move \(directory) aside to start with empty state"
    }
}

extension FileStateStore {
    /// Throws a config error naming both versions when the directory (open as `fd`, not yet
    /// locked) was written by a newer kioskd or state format; reads only.
    func checkVersion(_ fd: Int32) throws {
        let p = "\(directory)/\(StateVersion.fileName)"
        let vfd = sys.openat(fd, StateVersion.fileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0)
        if vfd < 0 && errno == ENOENT { return }
        guard vfd >= 0 else { throw KioskError.config("cannot read \(p), which says which kioskd wrote the state: \(Self.failed("open", p))") }
        let file = Descriptor(adopting: vfd)
        var st = stat()
        guard sys.fstat(file.raw, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw KioskError.config("\(p) is not a regular file; move it out of the state directory")
        }
        let bytes = try readAll(file.raw, path: p, limit: 4096)
        guard let found = StateVersion.decode(String(decoding: bytes, as: UTF8.self)) else {
            throw KioskError.config("\(p) does not say which kioskd wrote the state (expected lines 'format N' and 'version V'); refusing to start so that nothing there is changed: fix or remove it")
        }
        if let why = StateVersion.refusal(directory: directory, found: found) { throw KioskError.config(why) }
    }

    /// Writes this kioskd's version file (locked directory `fd`) unless it already says so:
    /// a temp file synced, renamed into place, the directory synced.
    func recordVersion(_ fd: Int32) throws {
        let text = StateVersion.encode()
        let tmp = "\(StateVersion.fileName).tmp"
        let vfd = sys.openat(fd, StateVersion.fileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0)
        if vfd >= 0 {
            let file = Descriptor(adopting: vfd)
            if (try? readAll(file.raw, path: StateVersion.fileName, limit: 4096)) == Array(text.utf8) { return }
        }
        _ = sys.unlinkat(fd, tmp)
        let tfd = sys.openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o640)
        guard tfd >= 0 else { throw Unusable(message: "cannot write \(directory)/\(tmp): \(Self.failed("open", "\(directory)/\(tmp)"))") }
        let file = Descriptor(adopting: tfd)
        if let w = writeAll(file.raw, Array(text.utf8)) {
            throw Unusable(message: "cannot write \(directory)/\(tmp): \(Self.failed("write", "\(directory)/\(tmp)", w.errno))")
        }
        guard sys.fsync(file.raw) == 0 else { throw Unusable(message: "cannot sync \(directory)/\(tmp): \(Self.failed("fsync", "\(directory)/\(tmp)"))") }
        guard sys.renameat(fd, tmp, StateVersion.fileName) == 0 else {
            throw Unusable(message: "cannot rename \(directory)/\(tmp): \(Self.failed("rename", "\(directory)/\(tmp)"))")
        }
        guard sys.fsync(fd) == 0 else { throw Unusable(message: "cannot sync \(directory) after writing \(StateVersion.fileName): \(Self.failed("fsync", directory))") }
    }
}
