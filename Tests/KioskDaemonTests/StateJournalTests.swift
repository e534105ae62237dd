import Foundation
import KioskCore
@testable import KioskDaemon
import KioskTesting
import Logging
import Synchronization
import Testing

/// The state journal behind `FileStateStore.saveBatch` (the command pipeline's group commit):
/// one record and one `fsync` per batch, checkpoints into the state files, and what a restart
/// reads after a crash or a failed system call at any step.
@Suite struct StateJournalTests {
    func journal(_ dir: String) -> String { "\(dir)/\(FileStateStore.journalName)" }
    func bytes(_ path: String) -> [UInt8] { FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? [] }
    func stateFile(_ store: FileStateStore, _ key: String) -> String? {
        FileManager.default.contents(atPath: store.path(for: key)).flatMap { try? FileStateStore.decode([UInt8]($0)) }
    }

    @Test func recordsReadBackExactlyWhateverTheKeysAndValuesHold() {
        let entries: [(key: String, value: String)] = [("counter.score.HOME", "12"), ("k", ""), ("ünï.cödé", "line\none\n"),
                                                       ("kioskd-journal 1 1 3 0", "kioskd-journal 1 1 3 0\n"), ("big", String(repeating: "x", count: 70_000))]
        let bytes = FileStateStore.journalRecord(Array(entries.prefix(2))) + FileStateStore.journalRecord(Array(entries.suffix(3)))
        let read = FileStateStore.readJournal(bytes)
        #expect(read.problem == nil && read.length == bytes.count)
        #expect(read.entries.map(\.key) == entries.map(\.key) && read.entries.map(\.value) == entries.map(\.value))
    }

    /// A record cut anywhere (a crash while it was being written) or damaged is the journal's end:
    /// the records before it are read, nothing after.
    @Test func aRecordCutAnywhereOrDamagedEndsTheJournal() {
        let first = FileStateStore.journalRecord([("a", "1"), ("b", "2")])
        let second = FileStateStore.journalRecord([("a", "3")])
        for cut in 0..<second.count {
            let read = FileStateStore.readJournal(first + second.prefix(cut))
            #expect(read.entries.map(\.value) == ["1", "2"] && read.length == first.count, "cut at \(cut)")
            #expect((read.problem != nil) == (cut > 0), "cut at \(cut): \(read.problem ?? "no problem")")
        }
        for flip in [0, 20, second.count - 1] {
            var damaged = second
            damaged[flip] ^= 0x20
            let read = FileStateStore.readJournal(first + damaged + FileStateStore.journalRecord([("a", "4")]))
            #expect(read.entries.map(\.value) == ["1", "2"] && read.problem != nil, "byte \(flip) damaged")
        }
    }

    @Test func aStartReadsTheJournalOverTheFilesCutsAnIncompleteEndAndCheckpoints() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        try s.save("a", "old")
        try s.saveBatch([("a", "1"), ("b", "2")])
        try s.saveBatch([("a", "3")])
        // Killed now (no close, so no checkpoint); a third batch was cut while being written.
        let whole = bytes(journal(d))
        let cut = FileStateStore.journalRecord([("a", "99"), ("b", "99")]).prefix(30)
        let h = FileHandle(forWritingAtPath: journal(d))!
        h.seekToEndOfFile(); h.write(Data(cut)); h.closeFile()
        #expect(stateFile(s, "a") == "old" && stateFile(s, "b") == nil)
        let lines = CapturedLog()
        let ro = try FileStateStore(directory: d, logger: lines.logger, access: .readOnly)
        #expect(ro.load("a") == "3" && ro.load("b") == "2")
        #expect(bytes(journal(d)).count == whole.count + cut.count, "a read-only store changes nothing")
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: lines.logger)
        #expect(restarted.load("a") == "3" && restarted.load("b") == "2")
        #expect(lines.all.contains { $0.hasPrefix("warning: ") && $0.contains("ends with an incomplete record") && $0.contains("30 byte(s) ignored") }, "\(lines.all)")
        // Checkpointed at the start: the files hold the values, the journal is empty.
        #expect(stateFile(restarted, "a") == "3" && stateFile(restarted, "b") == "2")
        #expect(bytes(journal(d)).isEmpty)
        // The next batch is read back after another crash (nothing of the cut record remains).
        try restarted.saveBatch([("b", "5")])
        restarted.abandon()
        let again = try FileStateStore(directory: d, logger: quietLogger)
        #expect(again.load("a") == "3" && again.load("b") == "5")
    }

    @Test func theJournalIsWrittenToTheStateFilesEveryCheckpointBytes() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        s.checkpointBytes = 400
        var steps: [String] = []
        s.trace = { steps.append($0) }
        var checkpoints = 0
        for i in 1...40 {
            steps.removeAll()
            try s.saveBatch([("home", "\(i)"), ("away", "\(2 * i)")])
            if steps.contains(where: { $0.hasPrefix("truncate ") }) {
                checkpoints += 1
                #expect(stateFile(s, "home") == "\(i)" && stateFile(s, "away") == "\(2 * i)")
                #expect(bytes(journal(d)).isEmpty)
            }
            #expect(bytes(journal(d)).count < 400)
        }
        #expect(checkpoints >= 5 && checkpoints <= 12, "\(checkpoints) checkpoints")
        s.close()
        // A clean stop checkpoints too.
        #expect(stateFile(s, "home") == "40" && stateFile(s, "away") == "80" && bytes(journal(d)).isEmpty)
    }

    /// `save` of a key whose newest value is in the journal goes to the journal too: otherwise a
    /// start would read the journal's older value over the newer file.
    @Test func aSaveOfAJournaledKeyIsNotUndoneByTheJournalAtTheNextStart() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        try s.saveBatch([("daemon.scene", "clock")])
        try s.save("daemon.scene", "score")
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: quietLogger)
        #expect(restarted.load("daemon.scene") == "score")
    }

    @Test func aRemovedDirectoryGetsEveryValueBackAndANewJournal() throws {
        let base = tempDir()
        let d = "\(base)/state"
        let s = try FileStateStore(directory: d, logger: quietLogger)
        try s.saveBatch([("a", "1"), ("b", "2")])
        try FileManager.default.removeItem(atPath: d)
        try s.saveBatch([("a", "3")])
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: quietLogger)
        #expect(restarted.load("a") == "3" && restarted.load("b") == "2")
    }

    /// Every step of two batches (the second with a checkpoint) fails in turn, once or with every
    /// call after it failing too: whether the batch was answered saved or refused is what a
    /// restart after a kill reads — and every earlier acknowledged value is still there.
    @Test(arguments: [EIO, ENOSPC])
    func theAnswerAlwaysMatchesWhatARestartReads(_ code: Int32) throws {
        func steps() throws -> [String] {
            let d = tempDir()
            let s = try FileStateStore(directory: d, logger: quietLogger)
            s.checkpointBytes = 60
            try s.save("c", "0")
            var steps: [String] = []
            s.trace = { steps.append($0) }
            try s.saveBatch([("a", "1"), ("b", "1")])
            try s.saveBatch([("a", "2"), ("c", "2")])
            s.abandon()
            return steps
        }
        let all = try steps()
        #expect(all.contains { $0.hasPrefix("truncate ") } && all.contains { $0.hasPrefix("rename ") }, "the second batch checkpoints: \(all)")
        for (i, step) in all.enumerated() {
            for failRest in [false, true] {
                let d = tempDir()
                let faults = StateFaults()
                let s = try FileStateStore(directory: d, logger: quietLogger, syscalls: faults.syscalls)
                s.checkpointBytes = 60
                try s.save("c", "0")
                s.trace = faults.trace
                faults.failAt = i + 1
                faults.failRest = failRest
                faults.code = code
                var said: [Bool] = []
                for batch in [[("a", "1"), ("b", "1")], [("a", "2"), ("c", "2")]] {
                    do { try s.saveBatch(batch); said.append(true) } catch { said.append(false) }
                }
                s.abandon()
                let what = "failure (errno \(code)\(failRest ? ", and every call after it" : "")) at step \(i + 1) '\(step)'"
                let fresh = try FileStateStore(directory: d, logger: quietLogger)
                let expected: [String: String?] = [
                    "a": said[1] ? "2" : (said[0] ? "1" : nil),
                    "b": said[0] ? "1" : nil,
                    "c": said[1] ? "2" : "0",
                ]
                for (k, v) in expected.sorted(by: { $0.key < $1.key }) {
                    #expect(fresh.load(k) == v, "\(what): answers \(said), a restart reads \(k) = \(fresh.load(k) ?? "nothing")")
                }
                fresh.close()
            }
        }
    }

    /// The render loop reads known values while a commit is held in its `fsync` on the
    /// pipeline's thread: it does not wait for the disk.
    @Test func aKnownValueIsReadWhileACommitWaitsForTheDisk() throws {
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let holding = Mutex(false)
        let sys = FileStateStore.Syscalls.system
        let s = try FileStateStore(directory: tempDir(), logger: quietLogger, syscalls: .init(
            openat: sys.openat, write: sys.write,
            fsync: { fd in
                if holding.withLock({ $0 }) { entered.signal(); _ = release.wait(timeout: .now() + 20) }
                return sys.fsync(fd)
            },
            renameat: sys.renameat, unlinkat: sys.unlinkat, mkdir: sys.mkdir))
        try s.saveBatch([("daemon.scene", "clock"), ("home", "1")])
        holding.withLock { $0 = true }
        let committed = DispatchSemaphore(value: 0)
        Thread { try? s.saveBatch([("home", "2")]); committed.signal() }.start()
        #expect(entered.wait(timeout: .now() + 5) == .success)
        let read = DispatchSemaphore(value: 0)
        let values = Mutex<[String?]>([])
        Thread {
            let v = [s.load("daemon.scene"), s.load("home")]
            values.withLock { $0 = v }
            read.signal()
        }.start()
        let readInTime = read.wait(timeout: .now() + 2) == .success
        holding.withLock { $0 = false }
        release.signal()
        #expect(readInTime, "a read of a known value waited for the commit in flight")
        #expect(committed.wait(timeout: .now() + 5) == .success)
        _ = read.wait(timeout: .now() + 5)
        #expect(values.withLock { $0 } == ["clock", "1"])
        #expect(s.load("home") == "2")
    }
}
