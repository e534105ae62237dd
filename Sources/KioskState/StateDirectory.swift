import FoundationEssentials
import KioskCore
import KioskPosix

#if canImport(Glibc)
import Glibc
#endif

/// Opening, locking and (when it was removed or emptied) making the state directory again.
extension FileStateStore {
    /// Creates, checks, opens and locks the directory. Throws `Unusable` for what makes saving
    /// impossible and `KioskError` for an unsafe directory or another daemon.
    func openForWriting() throws {
        var st = stat()
        if sys.fstatat(AT_FDCWD, directory, &st, false) != 0 {
            guard errno == ENOENT else {
                throw Unusable(message: "cannot look up the state directory \(directory): \(Self.failed("lstat", directory))")
            }
            try makeDirectory(directory)
            guard sys.fstatat(AT_FDCWD, directory, &st, false) == 0 else {
                throw Unusable(message: "cannot look up the state directory \(directory): \(Self.failed("lstat", directory))")
            }
        }
        if st.st_mode & S_IFMT == S_IFLNK {
            guard st.st_uid == 0 || st.st_uid == geteuid() else {
                throw KioskError.config("the state directory \(directory) is a symbolic link owned by uid \(st.st_uid), neither this user (uid \(geteuid())) nor root; refusing to keep state through it")
            }
            guard sys.fstatat(AT_FDCWD, directory, &st, true) == 0 else {
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
        guard sys.fstat(fd, &fst) == 0, fst.st_dev == st.st_dev, fst.st_ino == st.st_ino else {
            throw Unusable(message: "the state directory \(directory) changed while it was being opened")
        }
        if let problem = DirectoryAccess.writeProblem(directory, fd: fd) {
            throw Unusable(message: "the state directory \(problem.message)")
        }
        try checkVersion(fd)
        try takeLock(fd)
        try recordVersion(fd)
        dir = consume opened
        dirID = (UInt64(fst.st_dev), UInt64(fst.st_ino))
        writable = true
    }

    /// `mkdir -p` with mode 0750 for what is created; each directory made is `fsync`ed with its
    /// parent, so that its name is on disk before anything in it is acknowledged.
    func makeDirectory(_ path: String) throws {
        let parent = PathText.parent(of: path)
        if sys.mkdir(path, 0o750) == 0 {
            try settle(path, parent: parent)
            return
        }
        let e = errno
        if e == ENOENT {
            if !parent.isEmpty, parent != path {
                try makeDirectory(parent)
                if sys.mkdir(path, 0o750) == 0 { try settle(path, parent: parent); return }
            }
        } else if e == EEXIST {
            return
        }
        throw Unusable(message: "cannot create the state directory \(directory): \(Self.failed("mkdir", path, e == ENOENT ? errno : e))")
    }

    /// A directory just made: mode 0750 (the umask may have taken bits away; never adds any for
    /// others), then it and its parent synced.
    private func settle(_ path: String, parent: String) throws {
        for (p, isNew) in [(path, true), (parent.isEmpty ? "." : parent, false)] {
            let fd = sys.openat(AT_FDCWD, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)
            guard fd >= 0 else { throw Unusable(message: "cannot open \(p) to sync it after making \(path): \(Self.failed("open", p))") }
            let d = Descriptor(adopting: fd)
            if isNew { _ = sys.fchmod(d.raw, 0o750) }
            trace?("fsync-dir \(p)")
            guard sys.fsync(d.raw) == 0 else {
                let err = failure("fsync", p)
                fsyncFailed(err)
                throw Unusable(message: "cannot sync \(p) after making \(path): \(err.message)")
            }
        }
    }

    /// Takes the exclusive lock (the first thing done in the directory), or names its holder.
    func takeLock(_ dfd: Int32) throws {
        var fd = sys.openat(dfd, Self.lockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o640)
        // A lock file left by another user (kioskd once run as root) can still be locked read-only.
        let canWrite = fd >= 0
        if fd < 0 && errno == EACCES { fd = sys.openat(dfd, Self.lockName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0) }
        guard fd >= 0 else {
            throw Unusable(message: "cannot open the lock file: \(Self.failed("open", "\(directory)/\(Self.lockName)"))")
        }
        let file = Descriptor(adopting: fd)
        if sys.flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            var buf = [UInt8](repeating: 0, count: 32)
            let n = buf.withUnsafeMutableBytes { sys.read(fd, $0.baseAddress!, $0.count) }
            let pid = n > 0 ? String(decoding: buf[..<n], as: UTF8.self).trimmingWhitespace() : ""
            guard e == EWOULDBLOCK else {
                throw Unusable(message: "cannot lock the state directory: \(Self.failed("flock", "\(directory)/\(Self.lockName)", e))")
            }
            throw KioskError.state("another kioskd (pid \(pid.isEmpty ? "unknown" : pid)) is using the state directory \(directory)")
        }
        if canWrite {
            let pid = Array("\(getpid())\n".utf8)
            _ = sys.ftruncate(fd, 0)
            _ = writeAll(fd, pid)
        }
        lockFile = consume file
    }

    /// Read-only access: a readable directory, or one that can only be searched (`O_PATH`).
    func openForReading() {
        writable = false
        if let d = try? Descriptor.open(directory, O_RDONLY | O_DIRECTORY) {
            dir = consume d
        } else {
            dir = try? Descriptor.open(directory, 0o10000000 /* O_PATH */ | O_DIRECTORY)
        }
    }

    /// Unlocks explicitly before closing: a child process being started elsewhere in this process
    /// shares the lock's open file description between its fork and its exec, and a close alone
    /// would leave the directory locked until then.
    func releaseLock() {
        if let fd = lockFile?.raw { _ = sys.flock(fd, LOCK_UN) }
        lockFile = nil
    }

    /// Before a change: makes the directory again when it was removed or replaced since it was
    /// opened, and writes back every value held in memory when that (or a lost journal) is pending.
    func ensureDirectory() throws {
        var st = stat()
        let same = dirFD >= 0 && dirID.map { id in
            sys.fstatat(AT_FDCWD, directory, &st, true) == 0 && UInt64(st.st_dev) == id.dev && UInt64(st.st_ino) == id.ino
        } == true
        if !same || writeBackPending {
            try writeBackAll(because: same ? "the state journal \(directory)/\(Self.journalName) was lost earlier"
                                           : "the state directory \(directory) was removed or replaced while kioskd was running")
        }
    }

    /// What happened to the journal just synced, when a restart would not read it: deleted,
    /// replaced, or its directory removed or replaced. Nil when all is as written.
    func journalLoss() -> String? {
        let p = "\(directory)/\(Self.journalName)"
        var a = stat(), b = stat(), c = stat()
        guard sys.fstat(journalFD, &a) == 0 else { return "the state journal \(p) cannot be checked: \(Self.failed("fstat", p))" }
        if a.st_nlink == 0 { return "the state journal \(p) was deleted while kioskd was running" }
        guard sys.fstatat(dirFD, Self.journalName, &b, false) == 0, b.st_dev == a.st_dev, b.st_ino == a.st_ino else {
            return "the state journal \(p) was replaced while kioskd was running"
        }
        guard let id = dirID, sys.fstatat(AT_FDCWD, directory, &c, true) == 0, UInt64(c.st_dev) == id.dev, UInt64(c.st_ino) == id.ino else {
            return "the state directory \(directory) was removed or replaced while kioskd was running"
        }
        return nil
    }

    /// Every value known (read or saved) written into the state files — of the directory made
    /// again when it is gone — and a new journal started; a file in the journal's place that is
    /// not this store's is moved aside (`journal.log.replaced-<timestamp>`). Logged as an error.
    /// Throws when that fails (then tried again before the next change).
    func writeBackAll(because why: String) throws {
        if checkpointing { throw CheckpointInFlight() }
        if !writeBackPending {
            logger.error("\(why); writing every value back into the state files and starting a new journal",
                         metadata: ["state_dir": "\(directory)"])
        }
        writeBackPending = true
        journal = nil
        journalOnDisk = false
        journaled.removeAll()
        journalBytes = 0
        var st = stat()
        let same = dirFD >= 0 && dirID.map { id in
            sys.fstatat(AT_FDCWD, directory, &st, true) == 0 && UInt64(st.st_dev) == id.dev && UInt64(st.st_ino) == id.ino
        } == true
        if !same {
            releaseLock()
            dir = nil
            dirID = nil
            do {
                try openForWriting()
            } catch let u as Unusable {
                throw KioskError.state("the state directory \(directory) is gone and cannot be made again: \(u.message)")
            }
        } else if !exists(Self.lockName), let d = dir?.raw {
            releaseLock()
            do { try takeLock(d) } catch let u as Unusable { throw KioskError.state(u.message) }
        }
        if exists(Self.journalName) {
            let aside = "\(Self.journalName).replaced-\(Self.timestamp())"
            guard sys.renameat(dirFD, Self.journalName, aside) == 0 else {
                throw KioskError.state("cannot move the foreign \(directory)/\(Self.journalName) aside: \(Self.failed("rename", "\(directory)/\(Self.journalName)"))")
            }
            logger.error("moved \(directory)/\(Self.journalName), which is not the journal kioskd was writing, aside to \(directory)/\(aside)",
                         metadata: ["state_dir": "\(directory)"])
        }
        let todo = cached.withLock { $0 }.compactMap { k, v in v.map { (key: k, name: Self.fileName(for: k), value: $0) } }
        try installFiles(todo.sorted { $0.key < $1.key })
        writeBackPending = false
    }
}
