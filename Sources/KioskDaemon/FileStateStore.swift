import Foundation
import KioskCore
import KioskPosix
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Durable state in a directory: one small file per key, each change on disk before `save` returns.
///
/// A file holds a header line `kioskd-state 1 <length> <fnv1a64>` and the value, so a truncated
/// or damaged file is recognised. `save` writes `<key>.state.tmp` (created new, never through a
/// symbolic link), `fsync`s it, renames the current file to `<key>.state.bak` (the previous good
/// copy), renames the temp file into place and `fsync`s the directory. At start a file that fails
/// its check is reported, moved aside as `<key>.state.corrupt-<timestamp>`, and the `.bak` copy is
/// used; when there is no good copy either, the error is logged and `load` returns nil (the
/// scene's documented default).
///
/// **An answer always matches what a restart reads.** `save` returns only when the new value is
/// in place and the directory was synced; it throws only when the previous value is what a
/// restart will read. A failure before the rename into place leaves the previous file (or its
/// `.bak`, which `load` falls back to) untouched. When the directory sync fails after the rename,
/// the rename is undone (`.bak` renamed back over the new file, or the new file removed when there
/// was none) so the refusal is true; only if that undo fails too is the new value — now what a
/// restart reads — reported as saved (and the failed sync logged as an error). The directory is
/// opened once, at start, and must be readable: a directory that cannot be opened for its `fsync`
/// makes the store unusable from the start rather than failing after each rename.
///
/// **One daemon per directory.** Before anything in the directory is read or changed, an
/// exclusive `flock` is taken on `kioskd.lock` (which holds the owner's pid); a second store on the
/// same directory fails at once ("another kioskd (pid N) is using the state directory DIR") and
/// touches nothing.
///
/// **The directory must be private.** A directory writable by others, or reached through a
/// symbolic link owned by another user, is refused. A directory removed while running is made
/// again (mode 0750, same checks) at the next save, and every value kept in memory is written back
/// to it, so values acknowledged before the removal are not lost.
public final class FileStateStore: StateStore, @unchecked Sendable {
    // @unchecked: every public entry point holds `mutex` (the command pipeline commits from its
    // own thread while the render loop reads and makes its rare saves).
    /// The system calls the store makes to change files; tests replace them to inject failures.
    /// Each returns -1 and sets `errno` on failure, like the C call.
    public struct Syscalls: Sendable {
        public var openat: @Sendable (_ dirfd: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32
        public var write: @Sendable (_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int
        public var fsync: @Sendable (_ fd: Int32) -> Int32
        public var renameat: @Sendable (_ dirfd: Int32, _ from: String, _ to: String) -> Int32
        public var unlinkat: @Sendable (_ dirfd: Int32, _ name: String) -> Int32
        public var mkdir: @Sendable (_ path: String, _ mode: mode_t) -> Int32

        public init(openat: @escaping @Sendable (Int32, String, Int32, mode_t) -> Int32,
                    write: @escaping @Sendable (Int32, UnsafeRawPointer, Int) -> Int,
                    fsync: @escaping @Sendable (Int32) -> Int32,
                    renameat: @escaping @Sendable (Int32, String, String) -> Int32,
                    unlinkat: @escaping @Sendable (Int32, String) -> Int32,
                    mkdir: @escaping @Sendable (String, mode_t) -> Int32) {
            self.openat = openat; self.write = write; self.fsync = fsync
            self.renameat = renameat; self.unlinkat = unlinkat; self.mkdir = mkdir
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

    /// How the store may use its directory.
    public enum Access: Sendable, Equatable {
        /// Durable, or an error.
        case readWrite
        /// Durable; when the directory cannot be used for saving (missing and not creatable,
        /// read-only, not readable for its sync), read what is there and refuse every save with
        /// the reason (`durability` is `.unavailable`). Unsafe directories and a second daemon are
        /// still errors.
        case readWriteOrReadOnly
        /// Read only, without the lock; nothing is changed (snapshots beside a running daemon).
        case readOnly
    }

    public let directory: String
    /// Held by every public entry point (recursive: `deinit` → `close`).
    private let mutex = NSRecursiveLock()
    private let logger: Logger
    private let sys: Syscalls
    /// Values read or saved, by key (`.some(nil)`: known to be absent). Written only while
    /// `mutex` is held; read without it by `load` and `contains` when the value is known, so the
    /// render loop never waits for a commit in flight on the pipeline's thread.
    private let cached = Mutex<[String: String?]>([:])
    private func cacheValue(_ key: String) -> String?? { cached.withLock { $0[key] } }
    private func setCache(_ key: String, _ value: String?) { cached.withLock { $0[key] = .some(value) } }
    /// The state directory, open for `openat` and its `fsync` (nil: not open).
    private var dir: Descriptor?
    private var dirFD: Int32 { dir?.raw ?? -1 }
    /// `kioskd.lock`, `flock`ed while this store holds the directory.
    private var lockFile: Descriptor?

    /// Unlocks explicitly before closing: a child process being started elsewhere in this process
    /// shares the lock's open file description between its fork and its exec, and a close alone
    /// would leave the directory locked until then.
    private func releaseLock() {
        if let fd = lockFile?.raw { _ = try? Posix.call("flock(LOCK_UN)") { flock(fd, LOCK_UN) } }
        lockFile = nil
    }
    /// The directory's identity when it was opened (a removed or replaced directory differs).
    private var dirID: (dev: UInt64, ino: UInt64)?
    private var writable = false
    /// The directory was made again and not every value is written back to it yet.
    private var writeBackPending = false
    /// The journal (`journal.log`), open for appending once the first batch was written; nil before.
    private var journal: Descriptor?
    private var journalFD: Int32 { journal?.raw ?? -1 }
    /// The journal's length: every byte of it is a whole record.
    private var journalBytes = 0
    /// Keys whose newest value is in the journal and not yet in their state file.
    private var journaled: Set<String> = []
    /// The journal's length at which its values are next written to their state files (nil:
    /// `checkpointBytes`).
    private var nextCheckpoint: Int?
    /// Journal bytes after which a batch also writes the journal's values to their state files
    /// (a checkpoint) and empties the journal.
    public var checkpointBytes = 64 * 1024
    /// Every file-system step in order ("open x", "write x", "fsync x", "rename x y",
    /// "fsync-dir d", and "undo …" steps after a failure), for tests.
    public var trace: ((String) -> Void)?
    /// Problems found while loading (file and what was wrong), newest last; also logged.
    public private(set) var problems: [String] = []
    public private(set) var durability: StateDurability

    /// The lock file in the state directory.
    public static let lockName = "kioskd.lock"

    /// Why the directory cannot be used for saving (not a safety problem).
    struct Unusable: Error { var message: String }

    /// Opens (and creates, mode 0750) the state directory and locks it.
    public init(directory: String, logger: Logger, access: Access = .readWrite, syscalls: Syscalls = .system) throws {
        self.directory = directory
        self.logger = logger
        self.sys = syscalls
        durability = .durable
        if access == .readOnly {
            durability = .unavailable("the state directory \(directory) is opened read-only")
            openForReading()
            replayJournal()
            return
        }
        do {
            try openForWriting()
        } catch let u as Unusable {
            guard access == .readWriteOrReadOnly else { throw KioskError.state(u.message) }
            durability = .unavailable(u.message)
            openForReading()
            logger.warning("state is not being saved: \(u.message); counter changes are refused until kioskd restarts with a usable state directory",
                           metadata: ["state_dir": "\(directory)"])
        }
        replayJournal()
    }

    deinit { close() }

    /// Releases the lock and the directory; later saves fail.
    public func close() {
        mutex.lock(); defer { mutex.unlock() }
        // The journal's values into their state files, so the files alone tell the state.
        if writable && !journaled.isEmpty { checkpoint() }
        journal = nil
        releaseLock()
        dir = nil
        if writable {
            writable = false
            durability = .unavailable("the state store of \(directory) was closed")
        }
    }

    /// Gives the directory up as a killed kioskd leaves it: the lock released, no checkpoint (tests).
    func abandon() {
        mutex.lock(); defer { mutex.unlock() }
        journal = nil
        journaled.removeAll()
        releaseLock()
        dir = nil
        writable = false
        durability = .unavailable("the state store of \(directory) was abandoned")
    }

    /// "lstat /var/lib/kioskd failed: Permission denied (errno 13)" (see `Posix.error`).
    static func failed(_ call: String, _ path: String, _ e: Int32 = errno) -> String { Posix.error(call, path: path, errno: e).message }

    // MARK: opening the directory

    /// Creates, checks, opens and locks the directory. Throws `Unusable` for what makes saving
    /// impossible and `KioskError` for an unsafe directory or another daemon.
    private func openForWriting() throws {
        var st = stat()
        if lstat(directory, &st) != 0 {
            guard errno == ENOENT else {
                throw Unusable(message: "cannot look up the state directory \(directory): \(Self.failed("lstat", directory))")
            }
            try makeDirectory(directory)
            guard lstat(directory, &st) == 0 else {
                throw Unusable(message: "cannot look up the state directory \(directory): \(Self.failed("lstat", directory))")
            }
        }
        if st.st_mode & S_IFMT == S_IFLNK {
            guard st.st_uid == 0 || st.st_uid == geteuid() else {
                throw KioskError.config("the state directory \(directory) is a symbolic link owned by uid \(st.st_uid), neither this user (uid \(geteuid())) nor root; refusing to keep state through it")
            }
            guard stat(directory, &st) == 0 else {
                throw Unusable(message: "the state directory \(directory) is a symbolic link to nothing usable: \(Self.failed("stat", directory))")
            }
        }
        guard st.st_mode & S_IFMT == S_IFDIR else {
            throw Unusable(message: "the state directory \(directory) exists but is not a directory")
        }
        guard st.st_mode & 0o002 == 0 else {
            throw KioskError.config("the state directory \(directory) is writable by others (mode \(String(st.st_mode & 0o7777, radix: 8))); refusing to keep state there (chmod o-w \(directory))")
        }
        let fd = sys.openat(AT_FDCWD, directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
        guard fd >= 0 else {
            throw Unusable(message: "cannot open the state directory \(directory) to sync it after each save: \(Self.failed("open", directory))")
        }
        let opened = Descriptor(adopting: fd)
        var fst = stat()
        guard fstat(fd, &fst) == 0, fst.st_dev == st.st_dev, fst.st_ino == st.st_ino else {
            throw Unusable(message: "the state directory \(directory) changed while it was being opened")
        }
        if let problem = DirectoryAccess.writeProblem(directory, fd: fd) {
            throw Unusable(message: "the state directory \(problem.message)")
        }
        try lock(fd)
        dir = consume opened
        dirID = (UInt64(fst.st_dev), UInt64(fst.st_ino))
        writable = true
        durability = .durable
    }

    /// `mkdir -p` with mode 0750 for what is created.
    private func makeDirectory(_ path: String) throws {
        if sys.mkdir(path, 0o750) == 0 {
            chmod(path, 0o750) // the umask may have taken bits away; never adds any for others
            return
        }
        let e = errno
        if e == ENOENT {
            let parent = (path as NSString).deletingLastPathComponent
            if !parent.isEmpty, parent != path {
                try makeDirectory(parent)
                if sys.mkdir(path, 0o750) == 0 { chmod(path, 0o750); return }
            }
        } else if e == EEXIST {
            return
        }
        throw Unusable(message: "cannot create the state directory \(directory): \(Self.failed("mkdir", path, e == ENOENT ? errno : e))")
    }

    /// Takes the exclusive lock (the first thing done in the directory), or names its holder.
    private func lock(_ dfd: Int32) throws {
        var fd = sys.openat(dfd, Self.lockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o640)
        // A lock file left by another user (kioskd once run as root) can still be locked read-only.
        let canWrite = fd >= 0
        if fd < 0 && errno == EACCES { fd = sys.openat(dfd, Self.lockName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0) }
        guard fd >= 0 else {
            throw Unusable(message: "cannot open the lock file: \(Self.failed("open", "\(directory)/\(Self.lockName)"))")
        }
        let file = Descriptor(adopting: fd)
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            var buf = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buf, buf.count, 0)
            let pid = n > 0 ? String(decoding: buf[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            guard e == EWOULDBLOCK else {
                throw Unusable(message: "cannot lock the state directory: \(Self.failed("flock", "\(directory)/\(Self.lockName)", e))")
            }
            throw KioskError.state("another kioskd (pid \(pid.isEmpty ? "unknown" : pid)) is using the state directory \(directory)")
        }
        if canWrite {
            let pid = Array("\(getpid())\n".utf8)
            _ = ftruncate(fd, 0)
            _ = pwrite(fd, pid, pid.count, 0)
        }
        lockFile = consume file
    }

    /// Read-only access: a readable directory, or one that can only be searched (`O_PATH`).
    private func openForReading() {
        writable = false
        if let d = try? Descriptor.open(directory, O_RDONLY | O_DIRECTORY) {
            dir = consume d
        } else {
            dir = try? Descriptor.open(directory, 0o10000000 /* O_PATH */ | O_DIRECTORY)
        }
    }

    /// Makes the directory again when it was removed or replaced since it was opened, and writes
    /// back every value held in memory.
    private func ensureDirectory() throws {
        var st = stat()
        let same = dirFD >= 0 && dirID.map { id in
            stat(directory, &st) == 0 && UInt64(st.st_dev) == id.dev && UInt64(st.st_ino) == id.ino
        } == true
        if !same {
            logger.warning("the state directory \(directory) was removed or replaced while kioskd was running; making it again and writing back the values kept in memory",
                           metadata: ["state_dir": "\(directory)"])
            releaseLock()
            dir = nil
            dirID = nil
            do {
                try openForWriting()
            } catch let u as Unusable {
                throw KioskError.state("the state directory \(directory) is gone and cannot be made again: \(u.message)")
            }
            writeBackPending = true
        }
        guard writeBackPending else { return }
        for (key, value) in cached.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            guard let v = value else { continue }
            try writeDurably(Self.encode(v), name: Self.fileName(for: key), keepBackup: false)
        }
        writeBackPending = false
        // Every value is in a state file of the new directory: a new, empty journal there.
        journal = nil
        journaled.removeAll()
        journalBytes = 0
        nextCheckpoint = nil
    }

    // MARK: names

    /// The file name for `key` (see `StateKey.fileName(for:)`).
    public static func fileName(for key: String) -> String { StateKey.fileName(for: key) }

    public func path(for key: String) -> String { "\(directory)/\(FileStateStore.fileName(for: key))" }

    // MARK: format

    /// FNV-1a, 64 bit: detects truncation and damage (not tampering).
    static func checksum(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return h
    }

    static func encode(_ value: String) -> [UInt8] {
        let v = Array(value.utf8)
        return Array("kioskd-state 1 \(v.count) \(String(checksum(v), radix: 16))\n".utf8) + v
    }

    enum DecodeError: Error, CustomStringConvertible {
        case badHeader, truncated(expected: Int, got: Int), checksum, notUTF8
        var description: String {
            switch self {
            case .badHeader: return "the header line is missing or damaged"
            case .truncated(let e, let g): return "truncated: header promises \(e) bytes, file holds \(g)"
            case .checksum: return "the checksum does not match the value"
            case .notUTF8: return "the value is not UTF-8 text"
            }
        }
    }

    static func decode(_ bytes: [UInt8]) throws -> String {
        guard let nl = bytes.firstIndex(of: 0x0A), nl < 200 else { throw DecodeError.badHeader }
        let header = String(decoding: bytes[..<nl], as: UTF8.self).split(separator: " ")
        guard header.count == 4, header[0] == "kioskd-state", header[1] == "1",
              let len = Int(header[2]), len >= 0, let sum = UInt64(header[3], radix: 16) else { throw DecodeError.badHeader }
        let body = Array(bytes[(nl + 1)...])
        guard body.count == len else { throw DecodeError.truncated(expected: len, got: body.count) }
        guard checksum(body) == sum else { throw DecodeError.checksum }
        guard let s = String(validatingCString: body.map { CChar(bitPattern: $0) } + [0]) else { throw DecodeError.notUTF8 }
        return s
    }

    // MARK: load

    /// The bytes of `name` in the directory (never through a symbolic link); nil when it does not exist.
    /// A state file is read up to `limit` bytes (1 MiB, plus one buffer to tell a longer one).
    private func readFile(_ name: String, limit: Int = 1 << 20) -> [UInt8]? {
        guard let file = try? dir?.openat(name, O_RDONLY | O_NOFOLLOW) else { return nil }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while out.count <= limit, let n = try? buf.withUnsafeMutableBytes({ try file.read(into: $0.baseAddress!, count: $0.count) }), n > 0 {
            out += buf[..<n]
        }
        return out
    }

    private func exists(_ name: String) -> Bool {
        var st = stat()
        return dirFD >= 0 && fstatat(dirFD, name, &st, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Reads `name`; nil when it does not exist. A damaged file is reported and (when writable) moved aside.
    private func readChecked(_ name: String) -> String?? {
        guard let bytes = readFile(name) else { return .none }
        let path = "\(directory)/\(name)"
        do {
            return .some(try FileStateStore.decode(bytes))
        } catch {
            var msg = "state file \(path) is damaged (\(error)); "
            if writable {
                let aside = "\(name).corrupt-\(Self.timestamp())"
                let moved = Glibc.renameat(dirFD, name, dirFD, aside) == 0
                msg += moved ? "moved aside to \(directory)/\(aside)" : "could not move it aside: \(Self.failed("rename", path))"
            } else {
                msg += "left as it is (the state directory is not writable)"
            }
            problems.append(msg)
            logger.error("\(msg)", metadata: ["state.file": "\(path)"])
            return .some(nil)
        }
    }

    static func timestamp() -> String {
        var t = time(nil)
        var tmv = tm()
        gmtime_r(&t, &tmv)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", tmv.tm_year + 1900, tmv.tm_mon + 1, tmv.tm_mday, tmv.tm_hour, tmv.tm_min, tmv.tm_sec)
    }

    public func load(_ key: String) -> String? {
        if let c = cacheValue(key) { return c }
        mutex.lock(); defer { mutex.unlock() }
        if let c = cacheValue(key) { return c }
        let name = Self.fileName(for: key)
        let p = "\(directory)/\(name)"
        if writable { _ = Glibc.unlinkat(dirFD, name + ".tmp", 0) } // an unacknowledged write interrupted by a crash
        var value: String?
        switch readChecked(name) {
        case .some(.some(let v)):
            value = v
        case .some(.none), .none:
            let current = exists(name)
            switch readChecked(name + ".bak") {
            case .some(.some(let v)):
                value = v
                let why = current ? "" : (problems.last?.contains(p) == true ? "the current file was damaged" : "the current file is missing (interrupted save)")
                logger.warning("state '\(key)': using the previous good copy \(p).bak\(why.isEmpty ? "" : " (\(why))")",
                               metadata: ["state.file": "\(p).bak"])
                // Put the good copy back in place so the next start finds it.
                if writable, (try? writeDurably(Self.encode(v), name: name, keepBackup: false)) == nil {
                    logger.error("cannot restore \(p) from its backup", metadata: ["state.file": "\(p)"])
                }
            case .some(.none):
                logger.error("state '\(key)': no good copy left (\(p) and \(p).bak damaged); the scene starts from its default",
                             metadata: ["state.file": "\(p)"])
            case .none:
                if problems.contains(where: { $0.contains(p) }) {
                    logger.error("state '\(key)': \(p) was damaged and there is no backup; the scene starts from its default",
                                 metadata: ["state.file": "\(p)"])
                }
            }
        }
        setCache(key, value)
        return value
    }

    /// Whether a file (or its backup) exists for `key`, without reading it.
    public func contains(_ key: String) -> Bool {
        if let c = cacheValue(key) { return c != nil }
        mutex.lock(); defer { mutex.unlock() }
        if let c = cacheValue(key) { return c != nil }
        let name = Self.fileName(for: key)
        return exists(name) || exists(name + ".bak")
    }

    // MARK: save

    /// Why saves are refused, when they are.
    private var refusal: String? {
        if case .unavailable(let why) = durability { return why }
        return nil
    }

    public func save(_ key: String, _ value: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        if let why = refusal { throw KioskError.state("state is not being saved: \(why)") }
        try ensureDirectory()
        if let c = cacheValue(key), c == value { return }
        if journaled.contains(key) {
            // Its newest value is in the journal, which a start reads after the files: so is this one.
            try appendToJournal([(key, value)])
            setCache(key, value)
            if journalBytes >= (nextCheckpoint ?? checkpointBytes) { checkpoint() }
            return
        }
        try writeDurably(Self.encode(value), name: Self.fileName(for: key), keepBackup: true)
        setCache(key, value)
    }

    /// Group commit: the batch's values are appended to the journal (`journal.log`) as one
    /// checksummed record, and the journal is `fsync`ed once — one `fsync` whatever the number of
    /// keys and changes (the state files cost one per key plus one for the directory). A failure
    /// takes the record back (the journal truncated to its length before, and synced) and
    /// throws: what a restart reads is what it read before the batch. Only when that undo fails
    /// too is the batch — then what a restart may read — reported as saved (and logged as an
    /// error). Once the journal holds `checkpointBytes`, its values are written to their state
    /// files (`installFiles`) and it is emptied; a failed checkpoint leaves them in the journal
    /// (nothing is lost) and is tried again later. A start reads the journal after the files.
    public func saveBatch(_ changes: [(key: String, value: String)]) throws {
        mutex.lock(); defer { mutex.unlock() }
        if let why = refusal { throw KioskError.state("state is not being saved: \(why)") }
        try ensureDirectory()
        var last: [String: String] = [:]
        var order: [String] = []
        for c in changes {
            if last[c.key] == nil { order.append(c.key) }
            last[c.key] = c.value
        }
        let todo = order.compactMap { k -> (key: String, value: String)? in
            let v = last[k]!
            if let c = cacheValue(k), c == v { return nil }
            return (k, v)
        }
        guard !todo.isEmpty else { return }
        try appendToJournal(todo)
        for t in todo {
            setCache(t.key, t.value)
            journaled.insert(t.key)
        }
        if journalBytes >= (nextCheckpoint ?? checkpointBytes) { checkpoint() }
    }

    // MARK: journal

    /// The journal's file name (not a key's: those end in `.state`).
    public static let journalName = "journal.log"

    /// One record: `kioskd-journal 1 <entries> <body length> <fnv1a64 of the body>\n`, then for
    /// each entry `<key length> <value length>\n<key><value>` (UTF-8 byte counts).
    static func journalRecord(_ entries: [(key: String, value: String)]) -> [UInt8] {
        var body: [UInt8] = []
        for e in entries {
            let k = Array(e.key.utf8), v = Array(e.value.utf8)
            body += Array("\(k.count) \(v.count)\n".utf8)
            body += k
            body += v
        }
        return Array("kioskd-journal 1 \(entries.count) \(body.count) \(String(checksum(body), radix: 16))\n".utf8) + body
    }

    /// The entries of every whole, intact record from the start of `bytes`, the length they
    /// take, and what is wrong with the rest (nil when nothing is left over).
    static func readJournal(_ bytes: [UInt8]) -> (entries: [(key: String, value: String)], length: Int, problem: String?) {
        var entries: [(key: String, value: String)] = []
        var at = 0
        func fail(_ why: String) -> (entries: [(key: String, value: String)], length: Int, problem: String?) {
            (entries, at, "\(why) at byte \(at) of \(bytes.count)")
        }
        while at < bytes.count {
            guard let nl = bytes[at...].prefix(200).firstIndex(of: 0x0A) else { return fail("an incomplete record header") }
            let header = String(decoding: bytes[at..<nl], as: UTF8.self).split(separator: " ")
            guard header.count == 5, header[0] == "kioskd-journal", header[1] == "1", let n = Int(header[2]), n > 0,
                  let len = Int(header[3]), len >= 0, let sum = UInt64(header[4], radix: 16) else { return fail("a damaged record header") }
            let start = nl + 1
            guard bytes.count - start >= len else { return fail("an incomplete record (\(bytes.count - start) of \(len) bytes)") }
            let body = Array(bytes[start..<(start + len)])
            guard checksum(body) == sum else { return fail("a record whose checksum does not match") }
            var record: [(key: String, value: String)] = []
            var p = 0
            for _ in 0..<n {
                guard let enl = body[p...].prefix(40).firstIndex(of: 0x0A) else { return fail("a damaged record") }
                let lens = String(decoding: body[p..<enl], as: UTF8.self).split(separator: " ")
                guard lens.count == 2, let kl = Int(lens[0]), let vl = Int(lens[1]), kl > 0, vl >= 0,
                      body.count - (enl + 1) >= kl + vl else { return fail("a damaged record") }
                let k = enl + 1
                guard let key = String(validating: body[k..<(k + kl)], as: UTF8.self),
                      let value = String(validating: body[(k + kl)..<(k + kl + vl)], as: UTF8.self) else { return fail("a record that is not UTF-8") }
                record.append((key, value))
                p = k + kl + vl
            }
            guard p == body.count else { return fail("a damaged record") }
            entries += record
            at = start + len
        }
        return (entries, at, nil)
    }

    /// At start: the journal's values over the files' (the newest of each key), an incomplete or
    /// damaged end cut off (a batch that was never acknowledged), then — when writable — a
    /// checkpoint, so the journal starts empty.
    private func replayJournal() {
        guard let bytes = readFile(Self.journalName, limit: .max), !bytes.isEmpty else { return }
        let p = "\(directory)/\(Self.journalName)"
        let (entries, length, problem) = Self.readJournal(bytes)
        for e in entries {
            setCache(e.key, e.value)
            journaled.insert(e.key)
        }
        if let problem {
            // Only the record being written when kioskd stopped can be incomplete; it was never acknowledged.
            logger.warning("state journal \(p) ends with \(problem); \(bytes.count - length) byte(s) ignored (a batch that was not acknowledged)",
                           metadata: ["state.file": "\(p)"])
        }
        guard writable else { return }
        if length < bytes.count {
            let wfd = sys.openat(dirFD, Self.journalName, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0)
            if wfd >= 0 {
                let file = Descriptor(adopting: wfd)
                if ftruncate(file.raw, off_t(length)) != 0 || sys.fsync(file.raw) != 0 {
                    logger.error("cannot cut the incomplete end off the state journal", metadata: ["state.file": "\(p)", "error": "\(Self.failed("ftruncate", p))"])
                }
            }
        }
        journalBytes = length
        checkpoint()
    }

    /// Opens the journal for appending (created if missing), and syncs the directory once, so
    /// that its name is on disk before any record in it is acknowledged.
    private func openJournal() throws {
        guard journalFD < 0 else { return }
        let p = "\(directory)/\(Self.journalName)"
        trace?("open \(p)")
        let flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC
        var fd = sys.openat(dirFD, Self.journalName, flags, 0)
        if fd < 0 && errno == ENOENT { fd = sys.openat(dirFD, Self.journalName, flags | O_CREAT | O_EXCL, 0o640) }
        guard fd >= 0 else { throw failure("open", p) }
        let file = Descriptor(adopting: fd)
        var st = stat()
        guard fstat(file.raw, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw KioskError.state("the state journal \(p) is not a regular file")
        }
        trace?("fsync-dir \(directory)")
        guard sys.fsync(dirFD) == 0 else { throw failure("fsync", directory) }
        journal = consume file
        journalBytes = Int(st.st_size)
    }

    /// A write to the journal failed and could not be taken back: its end holds part of a
    /// record, which a start reads as the journal's end. Nothing more is appended until a
    /// checkpoint has emptied it.
    private var journalNeedsReset = false

    /// Appends one record and syncs the journal; on failure the record is taken back.
    private func appendToJournal(_ entries: [(key: String, value: String)]) throws {
        try openJournal()
        let p = "\(directory)/\(Self.journalName)"
        if journalNeedsReset {
            guard checkpoint() else {
                throw KioskError.state("the state journal \(p) could not be emptied after a failed write; the change was not saved")
            }
            journalNeedsReset = false
        }
        let record = Self.journalRecord(entries)
        let before = journalBytes
        /// Cuts the journal back to `before` (then syncs it): true when the record is gone.
        func takeBack() -> Bool {
            trace?("undo truncate \(p)")
            guard ftruncate(journalFD, off_t(before)) == 0 else { return false }
            _ = sys.fsync(journalFD)
            return true
        }
        trace?("append \(p)")
        var off = 0
        while off < record.count {
            let n = record.withUnsafeBytes { sys.write(journalFD, $0.baseAddress! + off, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = n == 0 ? EIO : errno
                if !takeBack() { journalNeedsReset = true; journalBytes = before + off }
                throw failure("write", p, e)
            }
            off += n
        }
        trace?("fsync \(p)")
        guard sys.fsync(journalFD) == 0 else {
            let e = errno
            let err = failure("fsync", p, e)
            if takeBack() {
                throw KioskError(.state, "\(err.message); the batch was taken back", errno: e)
            }
            // The whole record is in the journal, where a restart reads it: it counts as saved.
            logger.error("wrote a batch of \(entries.count) key(s) to the state journal but could not sync it, nor take it back; it may not survive a power cut",
                         metadata: ["state.file": "\(p)", "error": "\(err.message)"])
            journalBytes = before + record.count
            return
        }
        journalBytes = before + record.count
    }

    /// Writes every journaled key's value to its state file (`installFiles`), then empties the
    /// journal. False (logged) when that failed: the values stay in the journal, which is tried
    /// again after another `checkpointBytes`.
    @discardableResult
    private func checkpoint() -> Bool {
        let p = "\(directory)/\(Self.journalName)"
        let todo = journaled.sorted().compactMap { k -> (key: String, name: String, value: String)? in
            guard let v = cacheValue(k) ?? nil else { return nil }
            return (k, Self.fileName(for: k), v)
        }
        do {
            try installFiles(todo)
        } catch {
            nextCheckpoint = journalBytes + checkpointBytes
            logger.warning("cannot write the state journal's values to their state files; they stay in the journal and nothing is lost",
                           metadata: ["state.file": "\(p)", "keys": "\(todo.count)", "error": "\(error)"])
            return false
        }
        func empty(_ fd: Int32) -> Bool { ftruncate(fd, 0) == 0 && sys.fsync(fd) == 0 }
        let emptied: Bool
        if journalFD >= 0 {
            trace?("truncate \(p)")
            emptied = empty(journalFD)
        } else {
            // Not open in this run: opened for the truncation only.
            let fd = sys.openat(dirFD, Self.journalName, O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0)
            let missing = fd < 0 && errno == ENOENT
            trace?("truncate \(p)")
            if fd < 0 {
                emptied = missing
            } else {
                let file = Descriptor(adopting: fd)
                emptied = empty(file.raw)
            }
        }
        let why = Self.failed("ftruncate", p)
        if emptied {
            journalBytes = 0
            journaled.removeAll()
        } else {
            // The files now hold the journal's values, so a later start reading it changes
            // nothing; the keys stay journaled so that their next values go to the journal too
            // (a newer state file would otherwise be overwritten by the journal at the next start).
            logger.warning("cannot empty the state journal after a checkpoint; it is read again at the next start",
                           metadata: ["state.file": "\(p)", "error": "\(why)"])
        }
        nextCheckpoint = journalBytes + checkpointBytes
        return emptied
    }

    /// Writes several keys' state files together (a checkpoint of the journal): every key's temp
    /// file is written and `fsync`ed, then each is renamed into place (the current file kept as
    /// `.bak`, as `save` does), then the directory is `fsync`ed once for all of them. A failure at
    /// any step undoes what was done (temp files removed, renames reversed, the directory synced
    /// again) and throws: the files are as before. Only when that undo fails too are the files
    /// reported as written (and the failed sync logged as an error).
    private func installFiles(_ todo: [(key: String, name: String, value: String)]) throws {
        guard !todo.isEmpty else { return }
        // 1. Temp files, each synced; a failure removes the ones written.
        var temps: [String] = []
        do {
            for t in todo {
                try writeTemp(Self.encode(t.value), name: t.name)
                temps.append(t.name + ".tmp")
            }
        } catch {
            for tmp in temps { _ = sys.unlinkat(dirFD, tmp) }
            throw error
        }
        // 2. Renames into place, current → .bak first; a failure reverses the ones made.
        var installed: [(name: String, backedUp: Bool)] = []
        func undoRenames() -> Bool {
            var ok = true
            for i in installed.reversed() {
                let p = "\(directory)/\(i.name)"
                if i.backedUp {
                    trace?("undo rename \(p).bak \(p)")
                    ok = sys.renameat(dirFD, i.name + ".bak", i.name) == 0 && ok
                } else {
                    trace?("undo unlink \(p)")
                    ok = sys.unlinkat(dirFD, i.name) == 0 && ok
                }
            }
            return ok
        }
        for (n, t) in todo.enumerated() {
            let p = "\(directory)/\(t.name)"
            var backedUp = false
            if exists(t.name) {
                trace?("rename \(p) \(p).bak")
                guard sys.renameat(dirFD, t.name, t.name + ".bak") == 0 else {
                    let e = errno
                    for tmp in temps[n...] { _ = sys.unlinkat(dirFD, tmp) }
                    _ = undoRenames()
                    throw failure("rename \(p) to", "\(p).bak", e)
                }
                backedUp = true
            }
            trace?("rename \(p).tmp \(p)")
            guard sys.renameat(dirFD, t.name + ".tmp", t.name) == 0 else {
                let e = errno
                for tmp in temps[n...] { _ = sys.unlinkat(dirFD, tmp) }
                if backedUp {
                    trace?("undo rename \(p).bak \(p)")
                    _ = sys.renameat(dirFD, t.name + ".bak", t.name)
                }
                _ = undoRenames()
                throw failure("rename \(p).tmp to", p, e)
            }
            installed.append((t.name, backedUp))
        }
        // 3. One directory sync for the whole batch.
        trace?("fsync-dir \(directory)")
        guard sys.fsync(dirFD) == 0 else {
            let e = errno
            let err = failure("fsync", directory, e)
            if undoRenames() {
                trace?("undo fsync-dir \(directory)")
                _ = sys.fsync(dirFD)
                throw KioskError(.state, "\(err.message); the previous state of \(todo.count) key(s) was put back", errno: e)
            }
            logger.error("saved a batch of \(todo.count) key(s) but the state directory could not be synced and the change could not be undone; it may not survive a power cut",
                         metadata: ["state_dir": "\(directory)", "error": "\(err.message)"])
            return
        }
    }

    /// `<name>.tmp` created new (a stale one removed first), written and `fsync`ed; on failure
    /// it is removed and the error names the call and the file.
    private func writeTemp(_ bytes: [UInt8], name: String) throws {
        let p = "\(directory)/\(name)"
        let tmp = name + ".tmp"
        trace?("open \(p).tmp")
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = sys.openat(dirFD, tmp, flags, 0o640)
        if fd < 0 && errno == EEXIST {
            // A stale temp file, or a name planted there: remove the name itself, never what it points to.
            trace?("unlink \(p).tmp")
            guard sys.unlinkat(dirFD, tmp) == 0 else { throw failure("unlink", "\(p).tmp") }
            trace?("open \(p).tmp")
            fd = sys.openat(dirFD, tmp, flags, 0o640)
        }
        guard fd >= 0 else { throw failure("open", "\(p).tmp") }
        let temp = Descriptor(adopting: fd)
        trace?("write \(p).tmp")
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { sys.write(temp.raw, $0.baseAddress! + off, $0.count - off) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let e = errno
                _ = sys.unlinkat(dirFD, tmp)
                throw failure("write", "\(p).tmp", n == 0 ? EIO : e)
            }
            off += n
        }
        trace?("fsync \(p).tmp")
        guard sys.fsync(temp.raw) == 0 else {
            let e = errno
            _ = sys.unlinkat(dirFD, tmp)
            throw failure("fsync", "\(p).tmp", e)
        }
    }

    /// Renames the files of `key` out of the way (`<file>.migrated`, never read again).
    public func retire(_ key: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        if let why = refusal { throw KioskError.state("state is not being saved: \(why)") }
        try ensureDirectory()
        // A journaled value would come back at the next start: into the files first, journal emptied.
        if journaled.contains(key) && !checkpoint() {
            throw KioskError.state("cannot retire \(key): its value in the state journal could not be written to its state file")
        }
        let name = Self.fileName(for: key)
        for n in [name, name + ".bak"] where exists(n) {
            guard sys.renameat(dirFD, n, n + ".migrated") == 0 else {
                throw KioskError.state("cannot retire \(key): \(Self.failed("rename", "\(directory)/\(n) → \(n).migrated"))")
            }
        }
        guard sys.fsync(dirFD) == 0 else { throw failure("fsync", directory) }
        setCache(key, nil)
    }

    /// Removes a key (and its backup).
    public func remove(_ key: String) throws {
        mutex.lock(); defer { mutex.unlock() }
        if let why = refusal { throw KioskError.state("state is not being saved: \(why)") }
        try ensureDirectory()
        // A journaled value would come back at the next start: into the files first, journal emptied.
        if journaled.contains(key) && !checkpoint() {
            throw KioskError.state("cannot remove \(key): its value in the state journal could not be written to its state file")
        }
        let name = Self.fileName(for: key)
        _ = sys.unlinkat(dirFD, name)
        _ = sys.unlinkat(dirFD, name + ".bak")
        guard sys.fsync(dirFD) == 0 else { throw failure("fsync", directory) }
        setCache(key, nil)
    }

    private func failure(_ call: String, _ path: String, _ e: Int32 = errno) -> KioskError {
        KioskError(.state, Self.failed(call, path, e), errno: e)
    }

    /// temp file → fsync → (current → .bak) → rename into place → fsync directory; see the type's
    /// documentation for what a failure at each step leaves behind.
    private func writeDurably(_ bytes: [UInt8], name: String, keepBackup: Bool) throws {
        let p = "\(directory)/\(name)"
        let tmp = name + ".tmp"
        try writeTemp(bytes, name: name)
        var backedUp = false
        if keepBackup && exists(name) {
            trace?("rename \(p) \(p).bak")
            guard sys.renameat(dirFD, name, name + ".bak") == 0 else {
                let e = errno
                _ = sys.unlinkat(dirFD, tmp)
                throw failure("rename \(p) to", "\(p).bak", e)
            }
            backedUp = true
        }
        trace?("rename \(p).tmp \(p)")
        guard sys.renameat(dirFD, tmp, name) == 0 else {
            let e = errno
            _ = sys.unlinkat(dirFD, tmp)
            // The previous value is the backup, which a restart falls back to; put it back in place anyway.
            if backedUp {
                trace?("undo rename \(p).bak \(p)")
                _ = sys.renameat(dirFD, name + ".bak", name)
            }
            throw failure("rename \(p).tmp to", p, e)
        }
        trace?("fsync-dir \(directory)")
        guard sys.fsync(dirFD) == 0 else {
            let e = errno
            let err = failure("fsync", directory, e)
            // The new value is in place but not known to be on disk: undo, so the refusal is true.
            let undone: Bool
            if backedUp {
                trace?("undo rename \(p).bak \(p)")
                undone = sys.renameat(dirFD, name + ".bak", name) == 0
            } else {
                trace?("undo unlink \(p)")
                undone = sys.unlinkat(dirFD, name) == 0
            }
            if undone {
                trace?("undo fsync-dir \(directory)")
                _ = sys.fsync(dirFD)
                throw KioskError(.state, "\(err.message); the previous state was put back", errno: e)
            }
            // The undo failed: the new value is what a restart reads, so it counts as saved.
            logger.error("saved \(p) but the state directory could not be synced and the change could not be undone; it may not survive a power cut",
                         metadata: ["state.file": "\(p)", "error": "\(err.message)", "undo_error": "\(Self.failed("rename", p))"])
            return
        }
    }
}
