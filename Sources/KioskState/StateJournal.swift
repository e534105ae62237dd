import FoundationEssentials
import KioskCore
import KioskPosix

#if canImport(Glibc)
import Glibc
#endif

/// The journal on disk: read at start, appended to by each batch, emptied by checkpoints.
/// Its bytes are `StateJournal`'s (StateJournalFormat.swift).
extension FileStateStore {
    /// The journal's file name (not a key's: those end in `.state`).
    public static let journalName = "journal.log"

    var journalPath: String { "\(directory)/\(Self.journalName)" }

    /// At start: the journal's values over the files' (the newest of each key). A torn tail (a
    /// batch that was never acknowledged) is cut off. Damage in the middle: every record that
    /// verifies is kept, the values are written into the state files, the journal is moved aside
    /// (`journal.log.corrupt-<timestamp>`) and an error names the records and keys lost. A first-
    /// format journal is written into the state files and replaced by a new one. With `strict`, a
    /// journal that is not a regular file or cannot be read throws `Unusable`; otherwise it is logged.
    func replayJournal(strict: Bool = false) throws(Unusable) {
        let p = journalPath
        let bytes: [UInt8]
        do {
            guard let b = try readFile(Self.journalName, limit: .max) else { return }
            bytes = b
        } catch {
            let message = "the state journal cannot be read: \(error)"
            if strict { throw Unusable(message: message) }
            problems.append(message)
            logger.error("\(message)", metadata: ["state.file": "\(p)"])
            return
        }
        let read = StateJournal.read(bytes)
        for e in read.entries {
            setCache(e.key, e.value)
            journaled.insert(e.key)
        }
        if let tail = read.tail {
            logger.warning("state journal \(p) ends with \(tail); \(bytes.count - read.length) byte(s) ignored (a batch that was never acknowledged)",
                           metadata: ["state.file": "\(p)"])
        }
        generation = read.generation
        nextRecord = (read.records.last?.number ?? 0) + 1
        journalBytes = read.length
        if !read.damage.isEmpty {
            let lost = read.damage.map { d -> String in
                let which = d.first == 0 ? "the journal's header" : d.first > d.last ? "the whole journal"
                    : d.first == d.last ? "record \(d.first)" : "records \(d.first)–\(d.last)"
                let keys = d.keys.isEmpty ? "" : ", which held \(d.keys.joined(separator: ", ")) (as far as can be read)"
                return "\(which) (bytes \(d.start)–\(d.end))\(keys)"
            }.joined(separator: "; ")
            var message = "state journal \(p) is damaged: \(lost) could not be verified and were skipped; \(read.records.count) record(s) before and after were read, so those keys hold the value of the newest record that verified"
            if writable {
                message += moveDamagedJournalAside()
            } else {
                message += "; left as it is (the state directory is not writable)"
            }
            problems.append(message)
            logger.error("\(message)", metadata: ["state.file": "\(p)"])
            return
        }
        guard writable else { return }
        if read.format == .legacy {
            // The first format: into the state files, and a new journal from the next batch.
            let todo = journaledValues()
            do {
                try installFiles(todo)
                journaled.removeAll()
                generation = nil
                try startJournal()
                logger.info("state journal \(p) of the first format written into the state files (\(todo.count) key(s)); a new journal follows")
            } catch {
                logger.error("cannot write the first-format state journal \(p) into the state files; it is read again at the next start",
                             metadata: ["state.file": "\(p)", "error": "\(error)"])
                writeBackPending = true
            }
            return
        }
        guard read.generation != nil else {
            // Empty, or a header torn while the journal was made: a new journal at the first batch.
            return
        }
        journalOnDisk = true
        if bytes.count > read.length {
            // Cut the torn tail off, so that the next record follows the last one that verifies.
            trace?("truncate \(p)")
            do {
                guard let f = try openRegular(Self.journalName, O_WRONLY) else { journalOnDisk = false; return }
                guard sys.ftruncate(f.raw, off_t(read.length)) == 0 else { throw failure("ftruncate", p) }
                guard sys.fsync(f.raw) == 0 else {
                    let err = failure("fsync", p)
                    fsyncFailed(err)
                    throw err
                }
            } catch {
                logger.error("cannot cut the torn end off the state journal; a new journal follows", metadata: ["state.file": "\(p)", "error": "\(error)"])
                journalOnDisk = false
                writeBackPending = true
            }
        }
        startCheckpoint = !journaled.isEmpty
    }

    /// The recovered values into the state files, then the damaged journal renamed aside and the
    /// directory synced. What to add to the error message.
    private func moveDamagedJournalAside() -> String {
        let aside = "\(Self.journalName).corrupt-\(Self.timestamp())"
        do {
            try installFiles(journaledValues())
        } catch {
            writeBackPending = true
            return "; the values read could not be written into the state files (\(error)), so the journal stays in place"
        }
        journaled.removeAll()
        guard sys.renameat(dirFD, Self.journalName, aside) == 0 else {
            writeBackPending = true
            return "; the values read are in the state files, but the journal could not be moved aside: \(Self.failed("rename", journalPath))"
        }
        guard sys.fsync(dirFD) == 0 else {
            fsyncFailed(failure("fsync", directory))
            return "; the journal was moved aside to \(directory)/\(aside), but the directory could not be synced"
        }
        journalBytes = 0
        return "; the values read are in the state files and the journal was moved aside to \(directory)/\(aside)"
    }

    /// The values of the journaled keys, for the state files.
    func journaledValues() -> [(key: String, name: String, value: String)] {
        journaled.sorted().compactMap { k in (cacheValue(k) ?? nil).map { (k, Self.fileName(for: k), $0) } }
    }

    /// Opens the journal for appending: this store's journal on disk, or a new one (`startJournal`).
    func openJournal() throws {
        guard journalFD < 0 else { return }
        trace?("open \(journalPath)")
        if journalOnDisk, let file = try openRegular(Self.journalName, O_WRONLY | O_APPEND) {
            journal = consume file
            return
        }
        try startJournal()
    }

    /// A new, empty journal of the next generation: its header written to `journal.log.new` and
    /// synced, renamed over `journal.log`, the directory synced. Never made in place of the old
    /// one, so that no disk can mix the old journal's blocks with the new one's after a power cut:
    /// the name holds one or the other, whole. A failed `fsync` is final (`fsyncFailed`).
    func startJournal() throws {
        let p = journalPath, new = Self.journalName + ".new"
        journal = nil
        let gen = generation.map { $0 &+ 1 } ?? UInt64.random(in: 1...UInt64.max >> 1)
        let header = StateJournal.encodeHeader(generation: gen)
        trace?("open \(p).new")
        guard let file = try openRegular(new, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, mode: 0o640) else {
            throw failure("open", "\(p).new", ENOENT)
        }
        if let w = writeAll(file.raw, header) {
            _ = sys.unlinkat(dirFD, new)
            throw failure("write", "\(p).new", w.errno)
        }
        trace?("fsync \(p).new")
        guard sys.fsync(file.raw) == 0 else {
            let err = failure("fsync", "\(p).new")
            fsyncFailed(err)
            _ = sys.unlinkat(dirFD, new)
            throw err
        }
        trace?("rename \(p).new \(p)")
        guard sys.renameat(dirFD, new, Self.journalName) == 0 else {
            let err = failure("rename \(p).new to", p)
            _ = sys.unlinkat(dirFD, new)
            throw err
        }
        // From here the name holds the new journal (or, until the directory is synced, the old one).
        journal = consume file
        journalOnDisk = true
        generation = gen
        nextRecord = 1
        journalBytes = header.count
        trace?("fsync-dir \(directory)")
        guard sys.fsync(dirFD) == 0 else {
            let err = failure("fsync", directory)
            fsyncFailed(err)
            throw err
        }
    }

    /// Appends one record and syncs the journal. On failure the record is taken back (the journal
    /// cut to its length before and synced) and the error thrown; a failed `fsync` is final
    /// (`fsyncFailed`), and when the take-back cannot be synced either, `unknownOutcome`.
    func appendToJournal(_ entries: [(key: String, value: String)]) throws {
        let p = journalPath
        if journalNeedsReset {
            if checkpointing { throw CheckpointInFlight() }
            guard checkpointLocked() else {
                throw KioskError.state("the state journal \(p) could not be emptied after a failed write; the change was not saved")
            }
            journalNeedsReset = false
        }
        try openJournal()
        let record = StateJournal.encodeRecord(entries, generation: generation ?? 0, number: nextRecord)
        let before = journalBytes
        trace?("append \(p)")
        if let w = writeAll(journalFD, record) {
            // Part of a record never verifies, but one after it would read as damage: cut it off.
            if w.written > 0 {
                trace?("undo truncate \(p)")
                if sys.ftruncate(journalFD, off_t(before)) != 0 {
                    journalNeedsReset = true
                } else if sys.fsync(journalFD) != 0 {
                    fsyncFailed(failure("fsync", p))
                }
            }
            throw failure("write", p, w.errno)
        }
        trace?("fsync \(p)")
        guard sys.fsync(journalFD) == 0 else {
            let e = errno
            let err = failure("fsync", p, e)
            fsyncFailed(err)
            trace?("undo truncate \(p)")
            if sys.ftruncate(journalFD, off_t(before)) == 0 {
                trace?("undo fsync \(p)")
                if sys.fsync(journalFD) == 0 {
                    throw KioskError(.state, "\(err.message); the batch was taken back", errno: e)
                }
            }
            try unknownOutcome("\(err.message), and taking the batch back out of the state journal \(p) could not be made durable")
            return
        }
        journalBytes = before + record.count
        nextRecord += 1
    }

    /// Empties the journal after a checkpoint: a new journal in its place (`startJournal`).
    /// False (logged) when that failed; the journal's values are in the state files by then, so
    /// whichever journal a start reads changes nothing.
    func resetJournal() -> Bool {
        do {
            try startJournal()
            return true
        } catch {
            logger.warning("cannot start a new state journal after a checkpoint; the old one is read again at the next start",
                           metadata: ["state.file": "\(journalPath)", "error": "\(error)"])
            return false
        }
    }
}
