import FoundationEssentials
import KioskCore
import KioskPosix

#if canImport(Glibc)
import Glibc
#endif

/// The state files: one per key, `<key>.state`, with its previous good copy `<key>.state.bak`.
extension FileStateStore {
    // MARK: names

    /// The file name for `key` (see `StateKey.fileName(for:)`).
    public static func fileName(for key: String) -> String { StateKey.fileName(for: key) }

    public func path(for key: String) -> String { "\(directory)/\(FileStateStore.fileName(for: key))" }

    // MARK: format

    /// FNV-1a, 64 bit: detects truncation and damage (not tampering).
    package static func checksum(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        return h
    }

    package static func encode(_ value: String) -> [UInt8] {
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

    package static func decode(_ bytes: [UInt8]) throws -> String {
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

    /// The bytes of `name` in the directory (never through a symbolic link, never blocking on a
    /// FIFO or device); nil when it does not exist. A state file is read up to `limit` bytes
    /// (1 MiB, plus one buffer to tell a longer one). Throws naming the file when it is not a
    /// regular file or cannot be read.
    func readFile(_ name: String, limit: Int = 1 << 20) throws -> [UInt8]? {
        guard let file = try openRegular(name, O_RDONLY) else { return nil }
        return try readAll(file.raw, path: "\(directory)/\(name)", limit: limit)
    }

    func exists(_ name: String) -> Bool {
        var st = stat()
        return dirFD >= 0 && sys.fstatat(dirFD, name, &st, false) == 0
    }

    /// Reads `name`; nil when it does not exist. A damaged file is reported and (when writable) moved aside.
    func readChecked(_ name: String) -> String?? {
        let path = "\(directory)/\(name)"
        let read: [UInt8]?
        do {
            read = try readFile(name)
        } catch {
            let msg = "state file \(path) cannot be read: \(error)"
            problems.append(msg)
            logger.error("\(msg)", metadata: ["state.file": "\(path)"])
            return .some(nil)
        }
        guard let bytes = read else { return .none }
        do {
            return .some(try FileStateStore.decode(bytes))
        } catch {
            var msg = "state file \(path) is damaged (\(error)); "
            if writable {
                let aside = "\(name).corrupt-\(Self.timestamp())"
                let moved = sys.renameat(dirFD, name, aside) == 0
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
        TextFormat.utc(Int64(time(nil)), compact: true)
    }
    /// Writes several keys' state files together (a checkpoint of the journal): every key's temp
    /// file is written and `fsync`ed, then each is renamed into place (the current file kept as
    /// `.bak`, as `save` does), then the directory is `fsync`ed once for all of them. A failure at
    /// any step undoes what was done (temp files removed, renames reversed, the directory synced
    /// again) and throws. A failed directory sync throws whatever the undo achieved (and is final,
    /// `fsyncFailed`): the caller's values are still in the journal, which a start reads over the
    /// files, so the files may hold either the old or the new values.
    func installFiles(_ todo: [(key: String, name: String, value: String)]) throws {
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
            fsyncFailed(err)
            _ = undoRenames()
            throw KioskError(.state, "\(err.message); \(todo.count) state file(s) not written", errno: e)
        }
    }

    /// `<name>.tmp` created new (a stale one removed first), written and `fsync`ed; on failure
    /// it is removed and the error names the call and the file.
    func writeTemp(_ bytes: [UInt8], name: String) throws {
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
            let err = failure("fsync", "\(p).tmp", e)
            fsyncFailed(err)
            throw err
        }
    }

    /// temp file → fsync → (current → .bak) → rename into place → fsync directory; see the type's
    /// documentation for what a failure at each step leaves behind.
    func writeDurably(_ bytes: [UInt8], name: String, keepBackup: Bool) throws {
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
            fsyncFailed(err)
            if undone {
                trace?("undo fsync-dir \(directory)")
                if sys.fsync(dirFD) == 0 {
                    throw KioskError(.state, "\(err.message); the previous state was put back", errno: e)
                }
            }
            // Neither the new value nor the old one is known to be what a restart reads.
            try unknownOutcome("\(err.message), and putting the previous \(p) back could not be made durable")
            return
        }
    }
}

extension FileStateStore {
    // MARK: load

    public func load(_ key: String) -> String? {
        if let c = cacheValue(key) { return c }
        return lock.withLock { _ in loadLocked(key) }
    }

    fileprivate func loadLocked(_ key: String) -> String? {
        if let c = cacheValue(key) { return c }
        let name = Self.fileName(for: key)
        let p = "\(directory)/\(name)"
        if writable { _ = sys.unlinkat(dirFD, name + ".tmp") } // an unacknowledged write interrupted by a crash
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
        return lock.withLock { _ in
            if let c = cacheValue(key) { return c != nil }
            let name = Self.fileName(for: key)
            return exists(name) || exists(name + ".bak")
        }
    }
}
