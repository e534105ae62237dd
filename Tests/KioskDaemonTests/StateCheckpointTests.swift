import Foundation
import KioskCore
@testable import KioskDaemon
import KioskState
import KioskTesting
import Logging
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Checkpoints run after the answer and beside the commits, never inside one; one that keeps
/// failing is reported, logged once a minute at most, and cannot let the journal grow without bound.
@Suite struct StateCheckpointTests {
    func journalSize(_ d: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: "\(d)/\(FileStateStore.journalName)")[.size] as? Int) ?? -1
    }

    /// A store whose checkpoint waits in the `fsync` of a state file's temp file (a slow SD card):
    /// `entered` is signalled when it does, `release` lets it go on. Every such fsync is held
    /// while `hold` is true; with `once`, only the first.
    final class Hold: Sendable {
        let holding = Mutex(true)
    }

    func storeHoldingCheckpointFsync(_ d: String, once: Bool) throws
        -> (store: FileStateStore, entered: DispatchSemaphore, release: DispatchSemaphore, hold: Hold) {
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let hold = Hold()
        let sys = FileStateStore.Syscalls.system
        let s = try FileStateStore(directory: d, logger: quietLogger, syscalls: .init(
            openat: sys.openat, write: sys.write,
            fsync: { fd in
                var st = stat()
                // A state file's temp file is the only regular file besides the journal and the lock.
                if fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG,
                   (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"))?.hasSuffix(".state.tmp") == true,
                   hold.holding.withLock({ h in defer { if once { h = false } }; return h }) {
                    entered.signal()
                    _ = release.wait(timeout: .now() + 20)
                }
                return sys.fsync(fd)
            },
            renameat: sys.renameat, unlinkat: sys.unlinkat, mkdir: sys.mkdir))
        return (s, entered, release, hold)
    }

    /// A checkpoint held in the `fsync` of a state file (a slow SD card) does not hold up the
    /// next batch; what was appended meanwhile survives a kill.
    @Test func aBatchIsCommittedWhileACheckpointWaitsForTheDisk() throws {
        let d = tempDir()
        let (s, entered, release, holdStateFiles) = try storeHoldingCheckpointFsync(d, once: false)
        s.checkpointBytes = 1
        try s.saveBatch([("home", "1"), ("away", "1")])
        #expect(entered.wait(timeout: .now() + 10) == .success, "the checkpoint did not start after the answer")
        let committed = DispatchSemaphore(value: 0)
        Thread { try? s.saveBatch([("home", "2")]); committed.signal() }.start()
        let inTime = committed.wait(timeout: .now() + 3) == .success
        holdStateFiles.holding.withLock { $0 = false }
        release.signal()
        #expect(inTime, "a batch waited for the checkpoint's fsync")
        if !inTime { _ = committed.wait(timeout: .now() + 10) }
        s.waitForCheckpoints()
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: quietLogger, checkpoints: .manual)
        #expect(restarted.load("home") == "2" && restarted.load("away") == "1")
    }

    /// A batch that finds its journal deleted while a checkpoint writes state files must write
    /// every value back, which cannot run beside the checkpoint: it waits for the checkpoint's
    /// files (the store's `files` mutex), then writes back, and a restart reads every value.
    @Test func aBatchThatMustWriteBackWaitsForTheCheckpointsFiles() throws {
        let d = tempDir()
        let (s, entered, release, _) = try storeHoldingCheckpointFsync(d, once: true)
        s.checkpointBytes = 1
        try s.saveBatch([("home", "1"), ("away", "1")])
        #expect(entered.wait(timeout: .now() + 10) == .success, "the checkpoint did not start after the answer")
        #expect(unlink("\(d)/\(FileStateStore.journalName)") == 0)
        let committed = DispatchSemaphore(value: 0)
        let failure = Mutex<String?>(nil)
        Thread {
            do { try s.saveBatch([("home", "2")]) } catch { failure.withLock { $0 = "\(error)" } }
            committed.signal()
        }.start()
        #expect(committed.wait(timeout: .now() + 0.3) == .timedOut, "the write-back ran beside the checkpoint's files")
        release.signal()
        #expect(committed.wait(timeout: .now() + 10) == .success)
        #expect(failure.withLock { $0 } == nil)
        s.waitForCheckpoints()
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: quietLogger, checkpoints: .manual)
        #expect(restarted.load("home") == "2" && restarted.load("away") == "1")
    }

    /// State files that can never be renamed into place: the values stay in the journal, the
    /// failure is reported and logged once (not once per batch), and past `maxJournalBytes`
    /// changes are refused — until a checkpoint succeeds again.
    @Test func aCheckpointThatKeepsFailingIsReportedAndBoundsTheJournal() throws {
        let d = tempDir()
        let renames = Mutex(false)
        let sys = FileStateStore.Syscalls.system
        let lines = CapturedLog()
        let s = try FileStateStore(directory: d, logger: lines.logger, syscalls: .init(
            openat: sys.openat, write: sys.write, fsync: sys.fsync,
            renameat: { dfd, from, to in
                if from.hasSuffix(".state.tmp") && !renames.withLock({ $0 }) { errno = EACCES; return -1 }
                return sys.renameat(dfd, from, to)
            },
            unlinkat: sys.unlinkat, mkdir: sys.mkdir), checkpoints: .manual)
        s.checkpointBytes = 100
        s.maxJournalBytes = 4000
        var acknowledged = 0
        var refusal = ""
        for i in 1...400 {
            do {
                try s.saveBatch([("count", "\(i)")])
                acknowledged = i
            } catch {
                refusal = "\(error)"
                break
            }
            s.checkpointIfDue()
        }
        #expect(acknowledged > 50 && acknowledged < 400, "\(acknowledged) batches before the refusal")
        #expect(refusal.contains("changes are refused") && refusal.contains("Permission denied"), "\(refusal)")
        #expect(journalSize(d) < 4000 + 100, "the journal holds \(journalSize(d)) bytes")
        #expect(s.durability != .durable)
        #expect(s.checkpointProblem?.contains("cannot be written into their state files") == true, "\(s.checkpointProblem ?? "nil")")
        let warnings = lines.all.filter { $0.contains("cannot be written into their state files") }
        #expect(warnings.count == 1, "\(warnings.count) log lines for \(acknowledged) failed checkpoints")
        // The disk recovers: the next checkpoint empties the journal and changes are taken again.
        renames.withLock { $0 = true }
        #expect(s.checkpointIfDue())
        #expect(s.durability == .durable && s.checkpointProblem == nil)
        try s.saveBatch([("count", "\(acknowledged + 1)")])
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: quietLogger, checkpoints: .manual)
        #expect(restarted.load("count") == "\(acknowledged + 1)")
    }
}
