import Foundation
import KioskCore
@testable import KioskDaemon
import KioskState
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

    /// A journal of `records` (generation 7).
    func journalBytes(_ records: [[(key: String, value: String)]], generation: UInt64 = 7) -> [UInt8] {
        StateJournal.encodeHeader(generation: generation) + records.enumerated().flatMap {
            StateJournal.encodeRecord($0.element, generation: generation, number: UInt32($0.offset + 1))
        }
    }

    @Test func recordsReadBackExactlyWhateverTheKeysAndValuesHold() {
        let entries: [(key: String, value: String)] = [("counter.score.HOME", "12"), ("k", ""), ("ünï.cödé", "line\none\n"),
                                                       ("kioskdJ2", "kioskdJ2\n"), ("big", String(repeating: "x", count: 70_000))]
        let bytes = journalBytes([Array(entries.prefix(2)), Array(entries.suffix(3))])
        let read = StateJournal.read(bytes)
        #expect(read.tail == nil && read.damage.isEmpty && read.length == bytes.count && read.generation == 7)
        #expect(read.entries.map(\.key) == entries.map(\.key) && read.entries.map(\.value) == entries.map(\.value))
        #expect(read.records.map(\.number) == [1, 2])
    }

    /// The checksum is zlib's CRC-32 (the check value of "123456789" is CBF43926) and covers the
    /// record's header: a changed record number, generation or length fails it, not only a changed body.
    @Test func theChecksumIsCRC32OverTheRecordsHeaderAndBody() {
        #expect(StateJournal.crc(Array("123456789".utf8)[...]) == 0xCBF4_3926)
        let record = StateJournal.encodeRecord([("a", "1")], generation: 7, number: 1)
        for byte in [0, 4, 8, 16, 24, record.count - 1] {
            var damaged = record
            damaged[byte] ^= 0x01
            #expect(StateJournal.record(damaged, at: 0, generation: nil, minNumber: 0) == nil, "byte \(byte) changed")
        }
        #expect(StateJournal.record(record, at: 0, generation: 7, minNumber: 1)?.entries.map(\.value) == ["1"])
    }

    /// A record cut anywhere (a crash while it was being written) is a torn tail: the records
    /// before it are read, and nothing is called damaged.
    @Test func aRecordCutAnywhereIsATornTail() {
        let first = journalBytes([[("a", "1"), ("b", "2")]])
        let second = StateJournal.encodeRecord([("a", "3")], generation: 7, number: 2)
        for cut in 0..<second.count {
            let read = StateJournal.read(first + second.prefix(cut))
            #expect(read.entries.map(\.value) == ["1", "2"] && read.length == first.count, "cut at \(cut)")
            #expect((read.tail != nil) == (cut > 0) && read.damage.isEmpty, "cut at \(cut): \(read.tail ?? "no tail")")
        }
        // Records of the journal's previous generation after an emptying that did not reach the disk.
        let stale = StateJournal.encodeRecord([("a", "0")], generation: 6, number: 2)
        let read = StateJournal.read(first + stale)
        #expect(read.entries.map(\.value) == ["1", "2"] && read.damage.isEmpty && read.tail?.contains("earlier journal") == true)
    }

    /// A damaged record followed by records that verify is damage, not a tail: those after it are read.
    @Test func aDamagedRecordInTheMiddleKeepsTheRecordsAfterIt() {
        let records: [[(key: String, value: String)]] = [[("a", "1"), ("b", "2")], [("a", "3"), ("c", "x")], [("a", "4")]]
        let whole = journalBytes(records)
        let second = StateJournal.headerSize + StateJournal.encodeRecord(records[0], generation: 7, number: 1).count
        for flip in [0, 3, 8, 16, 20, 30] {
            var damaged = whole
            damaged[second + flip] ^= 0x20
            let read = StateJournal.read(damaged)
            #expect(read.entries.map(\.value) == ["1", "2", "4"] && read.tail == nil, "byte \(flip) of record 2 damaged")
            #expect(read.damage.count == 1 && read.damage.first?.first == 2 && read.damage.first?.last == 2, "byte \(flip): \(read.damage)")
        }
    }

    /// A journal of the first format (text headers) is still read, for its migration.
    @Test func aFirstFormatJournalIsRead() {
        func legacy(_ entries: [(String, String)]) -> [UInt8] {
            var body: [UInt8] = []
            for (k, v) in entries { body += Array("\(k.utf8.count) \(v.utf8.count)\n\(k)\(v)".utf8) }
            return Array("kioskd-journal 1 \(entries.count) \(body.count) \(String(FileStateStore.checksum(body), radix: 16))\n".utf8) + body
        }
        let read = StateJournal.read(legacy([("a", "1"), ("b", "2")]) + legacy([("a", "3")]))
        #expect(read.format == .legacy && read.entries.map(\.value) == ["1", "2", "3"])
    }

    @Test func aStartReadsTheJournalOverTheFilesCutsAnIncompleteEndAndCheckpoints() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        try s.save("a", "old")
        try s.saveBatch([("a", "1"), ("b", "2")])
        try s.saveBatch([("a", "3")])
        // Killed now (no close, so no checkpoint); a third batch was cut while being written.
        let whole = bytes(journal(d))
        let cut = StateJournal.encodeRecord([("a", "99"), ("b", "99")], generation: StateJournal.read(whole).generation!, number: 3).prefix(30)
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
        #expect(lines.all.contains { $0.hasPrefix("warning: ") && $0.contains("ends with an incomplete last record") && $0.contains("30 byte(s) ignored") }, "\(lines.all)")
        #expect(bytes(journal(d)).count == whole.count, "the torn tail is cut off")
        // Checkpointed after the start (on the store's queue): the files hold the values, the journal is empty.
        restarted.waitForCheckpoints()
        #expect(stateFile(restarted, "a") == "3" && stateFile(restarted, "b") == "2")
        #expect(bytes(journal(d)).count == StateJournal.headerSize)
        // The next batch is read back after another crash (nothing of the cut record remains).
        try restarted.saveBatch([("b", "5")])
        restarted.abandon()
        let again = try FileStateStore(directory: d, logger: quietLogger)
        #expect(again.load("a") == "3" && again.load("b") == "5")
    }

    @Test func theJournalIsWrittenToTheStateFilesEveryCheckpointBytes() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger, checkpoints: .manual)
        s.checkpointBytes = 400
        var steps: [String] = []
        s.trace = { steps.append($0) }
        var checkpoints = 0
        for i in 1...40 {
            steps.removeAll()
            try s.saveBatch([("home", "\(i)"), ("away", "\(2 * i)")])
            #expect(!steps.contains { $0.contains(".state") }, "no checkpoint inside a commit: \(steps)")
            // After the answer, as the command pipeline's queue is empty.
            if s.checkpointIfDue() {
                checkpoints += 1
                #expect(stateFile(s, "home") == "\(i)" && stateFile(s, "away") == "\(2 * i)")
                #expect(bytes(journal(d)).count == StateJournal.headerSize)
            }
            #expect(bytes(journal(d)).count < 400 + 60)
        }
        #expect(checkpoints >= 5 && checkpoints <= 12, "\(checkpoints) checkpoints")
        s.close()
        // A clean stop checkpoints too.
        #expect(stateFile(s, "home") == "40" && stateFile(s, "away") == "80" && bytes(journal(d)).count == StateJournal.headerSize)
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
            let s = try FileStateStore(directory: d, logger: quietLogger, checkpoints: .manual)
            s.checkpointBytes = 60
            try s.save("c", "0")
            var steps: [String] = []
            s.trace = { steps.append($0) }
            try s.saveBatch([("a", "1"), ("b", "1")])
            s.checkpointIfDue()
            try s.saveBatch([("a", "2"), ("c", "2")])
            s.checkpointIfDue()
            s.abandon()
            return steps
        }
        let all = try steps()
        #expect(all.filter { $0.hasPrefix("rename ") && $0.contains("/journal.log.new ") }.count == 3 && all.contains { $0.hasPrefix("rename ") && $0.contains(".state.tmp") },
                "both batches are followed by a checkpoint (a journal made, then renewed twice): \(all)")
        for (i, step) in all.enumerated() {
            for failRest in [false, true] {
                let d = tempDir()
                let faults = StateFaults()
                let s = try FileStateStore(directory: d, logger: quietLogger, syscalls: faults.syscalls, checkpoints: .manual)
                s.checkpointBytes = 60
                let unknown = Mutex(false)
                s.onUnknownOutcome = { _ in unknown.withLock { $0 = true } }
                try s.save("c", "0")
                s.trace = faults.trace
                faults.failAt = i + 1
                faults.failRest = failRest
                faults.code = code
                var said: [Bool] = []
                for batch in [[("a", "1"), ("b", "1")], [("a", "2"), ("c", "2")]] {
                    do { try s.saveBatch(batch); said.append(true) } catch { said.append(false) }
                    s.checkpointIfDue()
                    if unknown.withLock({ $0 }) { break }
                }
                s.abandon()
                // A take-back that could not be synced is never answered (kioskd exits): no answer to compare.
                if unknown.withLock({ $0 }) {
                    #expect(failRest && (step.hasPrefix("fsync ") || step.hasPrefix("fsync-dir")), "an unknown outcome after a failure at '\(step)'")
                    continue
                }
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
