import Dispatch
import FoundationEssentials
import Glibc
import KioskCore

/// Where a store's checkpoints run.
public enum CheckpointRunner: Sendable {
    /// On a queue of the store's own, after the batch that made one due was answered (kioskd).
    case background
    /// Only when `checkpointIfDue` is called (tests that choose the moment).
    case manual
}

/// Checkpoints: the journal's values written into the state files, then the journal emptied.
///
/// A checkpoint is due once the journal holds `checkpointBytes`, and after a start that read
/// records. It never runs inside a commit: its files are written and synced without the store's
/// lock, while batches go on being appended; the journal is emptied (under the lock) only when
/// nothing was appended meanwhile — otherwise the next round writes the newer values, and the
/// third round holds the lock throughout, so that a steady stream of batches cannot starve it.
///
/// A failure leaves the values in the journal (nothing is lost) and is tried again after 1, 2, 4
/// … 60 s; `checkpointProblem` says why meanwhile, and the log says so once a minute at most. A
/// journal past `maxJournalBytes` while checkpoints fail refuses changes (`durability`) until one
/// succeeds, so that the journal a start must read stays bounded.
extension FileStateStore {
    /// Whether a checkpoint should run now (the lock held).
    var checkpointDue: Bool {
        writable && !stopped && !journaled.isEmpty && status.withLock({ $0.final == nil })
            && (startCheckpoint || journalBytes >= checkpointBytes)
    }

    /// Schedules a due checkpoint on the store's queue (the lock held; nothing for `.manual`).
    func scheduleCheckpoint() {
        guard checkpointDue, let queue = checkpointQueue, !checkpointScheduled else { return }
        checkpointScheduled = true
        let run: @Sendable () -> Void = { [weak self] in _ = self?.checkpointRound() }
        if let at = checkpointRetryAt, at > Date() {
            queue.asyncAfter(deadline: .now() + at.timeIntervalSinceNow, execute: run)
        } else {
            queue.async(execute: run)
        }
    }

    /// Runs a due checkpoint now (the `.manual` runner's tests). True when one ran and succeeded.
    @discardableResult
    public func checkpointIfDue() -> Bool { checkpointRound() }

    /// Waits until no checkpoint is scheduled or running (tests).
    public func waitForCheckpoints() {
        while true {
            checkpointQueue?.sync {}
            if lock.withLock({ _ in !checkpointScheduled && !checkpointing }) { return }
            usleep(1000)
        }
    }

    /// One checkpoint, if due: files without `lock` (`files` held), the journal emptied with it.
    func checkpointRound() -> Bool {
        files.withLock { _ in
            for round in 0..<2 {
                // What to write, and the journal's length, with the lock; then the files without it.
                let start = lock.withLock { _ -> (todo: [(key: String, name: String, value: String)], mark: JournalMark)? in
                    if round == 0 {
                        checkpointScheduled = false
                        guard checkpointDue else { return nil }
                        if let at = checkpointRetryAt, at > Date(), runner == .background {
                            scheduleCheckpoint()
                            return nil
                        }
                    }
                    checkpointing = true
                    return (journaledValues(), journalMark)
                }
                guard let start else { return false }
                var failure: Error?
                do { try installFiles(start.todo) } catch { failure = error }
                duringCheckpointFiles?()
                let finished = lock.withLock { _ -> Bool? in
                    checkpointing = false
                    if let failure {
                        checkpointFailed(failure, keys: start.todo.count)
                        return false
                    }
                    // Nothing appended meanwhile: the files hold every journaled value.
                    if start.mark == journalMark { return finishCheckpoint() }
                    return !stopped && status.withLock({ $0.final == nil }) ? nil : false
                }
                if let finished { return finished }
            }
            // The third round holds the lock throughout: a steady stream of batches cannot starve it.
            return lock.withLock { _ in !stopped && status.withLock({ $0.final == nil }) ? checkpointLocked() : false }
        }
    }

    /// Where the journal stands: a checkpoint whose files were written while it stood still has
    /// every journaled value in them.
    struct JournalMark: Equatable { var bytes: Int; var generation: UInt64?; var next: UInt32 }
    var journalMark: JournalMark { JournalMark(bytes: journalBytes, generation: generation, next: nextRecord) }

    /// The whole checkpoint with the lock held, and `files` held or no checkpoint writing files
    /// (close, retire, remove, a journal to be reset, a checkpoint's third round).
    func checkpointLocked() -> Bool {
        precondition(!checkpointing, "a checkpoint's files are being written")
        guard !journaled.isEmpty else { return journalOnDisk ? resetJournal() : true }
        let todo = journaledValues()
        do { try installFiles(todo) } catch {
            checkpointFailed(error, keys: todo.count)
            return false
        }
        return finishCheckpoint()
    }

    /// The journal's values are in the state files: it is emptied.
    private func finishCheckpoint() -> Bool {
        guard resetJournal() else {
            // The files hold the journal's values, so a start reading it changes nothing; the keys
            // stay journaled so that their next values go to the journal too.
            checkpointFailed(KioskError.state("the state journal \(journalPath) could not be emptied"), keys: journaled.count)
            return false
        }
        journaled.removeAll()
        startCheckpoint = false
        if checkpointFailures > 0 {
            logger.notice("the state journal's values are in the state files again after \(checkpointFailures) failed attempt(s)",
                          metadata: ["state_dir": "\(directory)"])
        }
        checkpointFailures = 0
        checkpointRetryAt = nil
        lastCheckpointLog = nil
        unloggedCheckpointFailures = 0
        status.withLock { $0.checkpoint = nil; $0.blocked = nil }
        return true
    }

    /// A failed checkpoint: retried later, reported in `checkpointProblem`, logged at most once a
    /// minute; past `maxJournalBytes` changes are refused until one succeeds.
    private func checkpointFailed(_ error: Error, keys: Int) {
        checkpointFailures += 1
        let delay = Double(min(60, 1 << min(checkpointFailures - 1, 6)))
        checkpointRetryAt = Date().addingTimeInterval(delay)
        let why = "the state journal's values (\(keys) key(s)) cannot be written into their state files (\(checkpointFailures) attempt(s)): \(error)"
        let full = journalBytes >= maxJournalBytes
        status.withLock {
            $0.checkpoint = why
            if full { $0.blocked = "the state journal \(journalPath) holds \(journalBytes) bytes and \(why); changes are refused until that succeeds" }
        }
        let now = Date()
        if let last = lastCheckpointLog, now.timeIntervalSince(last) < 60 {
            unloggedCheckpointFailures += 1
        } else {
            let more = unloggedCheckpointFailures > 0 ? " (\(unloggedCheckpointFailures) more failure(s) since the last message)" : ""
            logger.warning("\(why); they stay in the journal, nothing is lost; trying again in \(Int(delay)) s\(more)",
                           metadata: ["state.file": "\(journalPath)", "error": "\(error)"])
            lastCheckpointLog = now
            unloggedCheckpointFailures = 0
        }
        scheduleCheckpoint()
    }
}
