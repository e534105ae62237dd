import Dispatch
import FoundationEssentials
import KioskCore
import KioskPosix
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Durable state in a directory: a journal of batches (`journal.log`) over one small file per key.
///
/// **Files** (StateFiles.swift): `<key>.state` holds a header line `kioskd-state 1 <length>
/// <fnv1a64>` and the value; written as `<key>.state.tmp` (created new, never through a symbolic
/// link), `fsync`ed, the current file renamed to `.bak` (the previous good copy), the temp file
/// renamed into place and the directory `fsync`ed. A damaged file is moved aside as
/// `<key>.state.corrupt-<timestamp>` and its `.bak` used.
///
/// **The journal** (StateJournal.swift, StateJournalFormat.swift): `saveBatch` — the command
/// pipeline's group commit — appends one checksummed record (CRC-32 over its header and body) and
/// `fsync`s the journal once; a start reads the files, then the journal's records over them. A
/// torn last record (never acknowledged) is cut off; damage in the middle moves the journal aside
/// (`journal.log.corrupt-<timestamp>`), names the records and keys lost, and keeps every record
/// that verifies, before and after it. Before a batch is acknowledged the journal's and the
/// directory's identity are checked: a journal deleted or replaced (or a directory emptied or
/// removed) gets every value written back into the state files and a new journal.
///
/// **Checkpoints** (StateCheckpoint.swift): once the journal holds `checkpointBytes`, and after a
/// start that read records, its values are written into the state files and it is emptied — on
/// a queue of the store's own, after the batch was answered, never inside a commit.
///
/// **An answer always matches what a restart reads**, after a kill or a power cut: a batch is
/// answered only once it is synced; a refused one is taken back (the journal cut to its length
/// before, and synced) before the refusal. **A failed `fsync` is final**: the kernel may have
/// dropped the pages it could not write and a later `fsync` would not say so, so the store
/// refuses every later change (`durability` says why: "state not saved") until kioskd restarts
/// and reads what the disk really holds. When even the take-back cannot be synced — neither
/// answer would be true — the store calls `onUnknownOutcome`, which by default exits (status 75)
/// so that systemd restarts kioskd from the disk without that change ever being answered.
///
/// **One daemon per directory**: an exclusive `flock` on `kioskd.lock` (holding the owner's pid)
/// before anything is read or changed. **The directory must be private**: writable by others, or
/// reached through a symbolic link owned by another user, is refused. Every system call goes
/// through `Syscalls`; only regular files are opened (a FIFO, device or directory in their place
/// is an error naming it, at once).
public final class FileStateStore: StateStore, @unchecked Sendable {
    // @unchecked: every mutable stored property is used with `lock` held, except the file phase
    // of a checkpoint (`checkpointing` set, `files` held), which only writes state files and
    // reads `dir`; the values read without the lock are behind the `cached` and `status` mutexes.

    /// How the store may use its directory.
    public enum Access: Sendable, Equatable {
        /// Durable, or an error.
        case readWrite
        /// Durable; when the directory cannot be used for saving (missing and not creatable,
        /// read-only, not readable for its sync, a journal that is not a regular file), read what
        /// is there and refuse every save with the reason (`durability` is `.unavailable`).
        /// Unsafe directories and a second daemon are still errors.
        case readWriteOrReadOnly
        /// Read only, without the lock; nothing is changed (snapshots beside a running daemon).
        case readOnly
    }

    public let directory: String
    /// Held while the store's mutable properties are used (see the type's `@unchecked`).
    let lock = Mutex(())
    /// Held by a checkpoint while it writes state files without `lock` (`checkpointing` set), and
    /// by whatever must not run beside that (a single `save`, retire, remove, close, a write-back
    /// of every value): taken before `lock`, never after it. A batch takes it only when it finds
    /// a checkpoint writing files and needs what that excludes (`CheckpointInFlight`).
    let files = Mutex(())
    let logger: Logger
    let sys: Syscalls
    /// Values read or saved, by key (`.some(nil)`: known to be absent). Written only while `lock`
    /// is held; read without it by `load` and `contains`, so the render loop never waits for a
    /// commit in flight.
    let cached = Mutex<[String: String?]>([:])
    func cacheValue(_ key: String) -> String?? { cached.withLock { $0[key] } }
    func setCache(_ key: String, _ value: String?) { cached.withLock { $0[key] = .some(value) } }

    /// Why saving stopped for good (`final`), or is refused until a checkpoint succeeds
    /// (`blocked`); what the last checkpoint failure was (`checkpoint`). Read by the render loop.
    struct Status { var final: String?; var blocked: String?; var checkpoint: String? }
    let status = Mutex(Status())

    /// The state directory, open for `openat` and its `fsync` (nil: not open).
    var dir: Descriptor?
    var dirFD: Int32 { dir?.raw ?? -1 }
    /// `kioskd.lock`, `flock`ed while this store holds the directory.
    var lockFile: Descriptor?
    /// The directory's identity when it was opened (a removed or replaced directory differs).
    var dirID: (dev: UInt64, ino: UInt64)?
    var writable = false
    /// The journal or the directory was lost and not every value is written back yet.
    var writeBackPending = false

    /// The journal, open for appending (nil until the first batch).
    var journal: Descriptor?
    var journalFD: Int32 { journal?.raw ?? -1 }
    /// The file at `journalName` is this store's journal, `journalBytes` long, all verified.
    var journalOnDisk = false
    var journalBytes = 0
    /// The journal's generation and the number its next record gets.
    var generation: UInt64?
    var nextRecord: UInt32 = 1
    /// Keys whose newest value is in the journal and not yet in their state file.
    var journaled: Set<String> = []
    /// A write to the journal failed and could not be cut off: it is emptied before the next append.
    var journalNeedsReset = false

    /// Journal bytes after which its values are written to the state files (a checkpoint).
    public var checkpointBytes = 64 * 1024
    /// While checkpoints fail, the journal may grow to this many bytes; beyond it changes are
    /// refused (`durability` says why) until a checkpoint succeeds, so that a start never has to
    /// read an unbounded journal.
    public var maxJournalBytes = 16 << 20
    let runner: CheckpointRunner
    var checkpointQueue: DispatchQueue?
    var checkpointScheduled = false
    /// The file phase of a checkpoint is running without the lock.
    var checkpointing = false
    /// A start read records that are not in the state files yet.
    var startCheckpoint = false
    var checkpointFailures = 0
    var checkpointRetryAt: Date?
    var lastCheckpointLog: Date?
    var unloggedCheckpointFailures = 0
    var stopped = false

    /// Every file-system step in order ("open x", "write x", "fsync x", "rename x y",
    /// "fsync-dir d", and "undo …" steps after a failure), for tests.
    public var trace: ((String) -> Void)?
    /// Called after a checkpoint wrote its state files, before it takes the lock back (tests: a
    /// batch committed meanwhile, as kioskd's commit thread may).
    package var duringCheckpointFiles: (() -> Void)?
    /// Problems found while loading (file and what was wrong), newest last; also logged.
    public internal(set) var problems: [String] = []
    /// Called when a change can be neither acknowledged nor refused truthfully (a failed `fsync`
    /// whose take-back cannot be synced either). Default: log and exit with status 75, so that
    /// systemd restarts kioskd from what the disk holds. Tests replace it.
    public var onUnknownOutcome: @Sendable (String) -> Void

    public var durability: StateDurability {
        status.withLock { s in (s.final ?? s.blocked).map { .unavailable($0) } ?? .durable }
    }
    /// Why the journal's values cannot be written to their state files, while that fails (they
    /// stay in the journal: nothing is lost).
    public var checkpointProblem: String? { status.withLock { $0.checkpoint } }

    /// The lock file in the state directory.
    public static let lockName = "kioskd.lock"

    /// Why the directory cannot be used for saving (not a safety problem).
    struct Unusable: Error { var message: String }

    /// Opens (and creates, mode 0750) the state directory, locks it and reads its journal.
    public init(directory: String, logger: Logger, access: Access = .readWrite, syscalls: Syscalls = .system,
                checkpoints: CheckpointRunner = .background) throws {
        self.directory = directory
        self.logger = logger
        self.sys = syscalls
        self.runner = checkpoints
        onUnknownOutcome = { [logger] message in
            logger.critical("\(message); kioskd exits so that it starts again from what the disk holds",
                            metadata: ["state_dir": "\(directory)"])
            Glibc._exit(75)
        }
        if case .background = checkpoints { checkpointQueue = DispatchQueue(label: "kioskd-checkpoint") }
        if access == .readOnly {
            setFinal("the state directory \(directory) is opened read-only")
            openForReading()
            try? replayJournal()
            return
        }
        do {
            try openForWriting()
            try replayJournal(strict: true)
        } catch let u as Unusable {
            guard access == .readWriteOrReadOnly else { throw KioskError.state(u.message) }
            journal = nil
            releaseLock()
            writable = false
            setFinal(u.message)
            openForReading()
            cached.withLock { $0.removeAll() }
            journaled.removeAll()
            try? replayJournal()
            logger.warning("state is not being saved: \(u.message); counter changes are refused until kioskd restarts with a usable state directory",
                           metadata: ["state_dir": "\(directory)"])
        }
        lock.withLock { _ in scheduleCheckpoint() }
    }

    deinit { close() }

    func setFinal(_ why: String) { status.withLock { if $0.final == nil { $0.final = why } } }

    /// A failed `fsync` is final (see the type's documentation): logged, and every later change refused.
    func fsyncFailed(_ error: KioskError) {
        let first = status.withLock { s -> Bool in
            guard s.final == nil else { return false }
            s.final = "\(error.message); state is not saved until kioskd restarts (after a failed fsync the disk may not hold what was written)"
            return true
        }
        if first {
            logger.error("an fsync in the state directory failed; refusing every later change until kioskd restarts",
                         metadata: ["state_dir": "\(directory)", "error": "\(error.message)"])
        }
    }

    /// Neither answer would be true: `onUnknownOutcome`, then (when it returns: tests) an error.
    func unknownOutcome(_ message: String) throws {
        setFinal(message)
        onUnknownOutcome(message)
        throw KioskError.state("\(message); the outcome of the change is unknown")
    }

    /// Releases the lock and the directory after writing the journal's values into the state
    /// files (so the files alone tell the state); later saves fail.
    public func close() {
        files.withLock { _ in lock.withLock { _ in
            stopped = true
            if writable && !journaled.isEmpty && status.withLock({ $0.final == nil }) { _ = checkpointLocked() }
            journal = nil
            releaseLock()
            dir = nil
            if writable {
                writable = false
                setFinal("the state store of \(directory) was closed")
            }
        } }
    }

    /// Gives the directory up as a killed kioskd leaves it: the lock released, no checkpoint (tests).
    package func abandon() {
        files.withLock { _ in lock.withLock { _ in
            stopped = true
            journal = nil
            journaled.removeAll()
            releaseLock()
            dir = nil
            writable = false
            setFinal("the state store of \(directory) was abandoned")
        } }
    }

    /// `body` with `files`, then `lock` held: no checkpoint is writing state files meanwhile.
    func exclusively(_ body: () throws -> Void) throws {
        try files.withLock { _ in try lock.withLock { _ in try body() } }
    }

    /// Thrown (with `lock` held, before anything changed) by what must not run beside a
    /// checkpoint's file phase: the caller tries again with `files` held (`exclusively`).
    struct CheckpointInFlight: Error {}

    /// "lstat /var/lib/kioskd failed: Permission denied (errno 13)" (see `Posix.error`).
    static func failed(_ call: String, _ path: String, _ e: Int32 = errno) -> String { Posix.error(call, path: path, errno: e).message }

    // MARK: save

    /// Why saves are refused, when they are.
    var refusal: String? { status.withLock { $0.final ?? $0.blocked } }

    public func save(_ key: String, _ value: String) throws {
        try exclusively { try saveLocked(key, value) }
    }

    private func saveLocked(_ key: String, _ value: String) throws {
        if let why = refusal { throw KioskError.state("state is not being saved: \(why)") }
        try ensureDirectory()
        if let c = cacheValue(key), c == value { return }
        if journaled.contains(key) {
            // Its newest value is in the journal, which a start reads after the files: so is this one.
            try commit([(key, value)])
            return
        }
        try writeDurably(Self.encode(value), name: Self.fileName(for: key), keepBackup: true)
        setCache(key, value)
    }

    /// Group commit: the batch's values are appended to the journal as one record and the journal
    /// is `fsync`ed once, whatever the number of keys and changes. A failure takes the record back
    /// (the journal cut to its length before, and synced) and throws: what a restart reads is what
    /// it read before the batch. A checkpoint that becomes due is run afterwards, on the store's
    /// queue (see `CheckpointRunner`).
    public func saveBatch(_ changes: [(key: String, value: String)]) throws {
        do {
            // Beside a checkpoint's file phase, unless the batch needs what that excludes.
            try lock.withLock { _ in try saveBatchLocked(changes) }
        } catch is CheckpointInFlight {
            try exclusively { try saveBatchLocked(changes) }
        }
    }

    private func saveBatchLocked(_ changes: [(key: String, value: String)]) throws {
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
        try commit(todo)
    }

    /// Appends `todo` to the journal, checks that the journal and the directory are still the
    /// ones written to (writing every value back when not), then takes the values as saved.
    func commit(_ todo: [(key: String, value: String)]) throws {
        try appendToJournal(todo)
        if let lost = journalLoss() {
            let before = todo.map { ($0.key, cacheValue($0.key)) }
            for t in todo { setCache(t.key, t.value) }
            do {
                try writeBackAll(because: lost)
            } catch {
                for (k, v) in before { cached.withLock { $0[k] = v } }
                throw error
            }
            return
        }
        for t in todo {
            setCache(t.key, t.value)
            journaled.insert(t.key)
        }
        scheduleCheckpoint()
    }

    /// Renames the files of `key` out of the way (`<file>.migrated`, never read again).
    public func retire(_ key: String) throws {
        try putAway(key, "retire") { name in
            for n in [name, name + ".bak"] where exists(n) {
                guard sys.renameat(dirFD, n, n + ".migrated") == 0 else {
                    throw KioskError.state("cannot retire \(key): \(Self.failed("rename", "\(directory)/\(n) → \(n).migrated"))")
                }
            }
        }
    }

    /// Removes a key (and its backup).
    public func remove(_ key: String) throws {
        try putAway(key, "remove") { name in
            _ = sys.unlinkat(dirFD, name)
            _ = sys.unlinkat(dirFD, name + ".bak")
        }
    }

    /// `retire` and `remove`: the key's journaled value into its file first (the journal emptied,
    /// or it would come back at the next start), then `change`, then the directory synced.
    private func putAway(_ key: String, _ what: String, _ change: (String) throws -> Void) throws {
        try exclusively {
            if let why = refusal { throw KioskError.state("state is not being saved: \(why)") }
            try ensureDirectory()
            if journaled.contains(key) && !checkpointLocked() {
                throw KioskError.state("cannot \(what) \(key): its value in the state journal could not be written to its state file")
            }
            try change(Self.fileName(for: key))
            guard sys.fsync(dirFD) == 0 else {
                let err = failure("fsync", directory)
                fsyncFailed(err)
                throw err
            }
            setCache(key, nil)
        }
    }
}
