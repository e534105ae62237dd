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

/// The state directory as a hostile operator or an unlucky disk leaves it: the journal deleted
/// or the folder emptied while kioskd runs, one byte of the journal flipped, a FIFO or a
/// directory where a file belongs.
@Suite struct StateHostileTests {
    func journal(_ dir: String) -> String { "\(dir)/\(FileStateStore.journalName)" }
    func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }

    /// 60 batches, the journal deleted (as a `*.log` cleaner would), 60 more, then a kill: the
    /// restart reads all 120.
    @Test(arguments: [false, true])
    func changesAcknowledgedAfterTheJournalOrEveryFileIsDeletedSurviveAKill(emptyTheFolder: Bool) throws {
        let d = tempDir()
        let lines = CapturedLog()
        let s = try FileStateStore(directory: d, logger: lines.logger)
        s.checkpointBytes = 1 << 30
        for i in 1...60 { try s.saveBatch([("count", "\(i)"), ("first", "\(i)")]) }
        if emptyTheFolder {
            for name in try FileManager.default.contentsOfDirectory(atPath: d) { try FileManager.default.removeItem(atPath: "\(d)/\(name)") }
        } else {
            try FileManager.default.removeItem(atPath: journal(d))
        }
        for i in 61...120 { try s.saveBatch([("count", "\(i)")]) }
        s.abandon()
        let restarted = try FileStateStore(directory: d, logger: quietLogger)
        #expect(restarted.load("count") == "120")
        #expect(restarted.load("first") == "60")
        #expect(lines.all.contains { $0.hasPrefix("error: ") && $0.contains(journal(d)) }, "\(lines.all)")
    }

    /// One flipped byte in record 100 of 200: every other record is read (the later ones too, as
    /// each holds whole values), the journal is kept aside, and the error names the record and
    /// its keys.
    @Test func aDamagedRecordInTheMiddleLosesOnlyItsOwnValues() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        s.checkpointBytes = 1 << 30
        var ends: [Int] = [0]
        for i in 1...200 {
            var batch = [("count", "\(i)")]
            if i <= 100 { batch.append(("upTo100", "\(i)")) }
            if i == 100 { batch.append(("only100", "x")) }
            try s.saveBatch(batch)
            ends.append(size(journal(d)))
        }
        s.abandon()
        var bytes = [UInt8](FileManager.default.contents(atPath: journal(d))!)
        let whole = bytes
        bytes[(ends[99] + ends[100]) / 2] ^= 0x04
        try Data(bytes).write(to: URL(fileURLWithPath: journal(d)))
        let lines = CapturedLog()
        let restarted = try FileStateStore(directory: d, logger: lines.logger)
        #expect(restarted.load("count") == "200")
        #expect(restarted.load("upTo100") == "99")
        #expect(restarted.load("only100") == nil)
        let errors = lines.all.filter { $0.hasPrefix("error: ") }
        #expect(errors.contains { $0.contains("record 100") && $0.contains("only100") && $0.contains("upTo100") }, "\(lines.all)")
        let aside = try FileManager.default.contentsOfDirectory(atPath: d).filter { $0.hasPrefix(FileStateStore.journalName + ".corrupt-") }
        #expect(aside.count == 1, "\(aside)")
        #expect(aside.first.map { [UInt8](FileManager.default.contents(atPath: "\(d)/\($0)")!) } == bytes, "the damaged journal is kept as it was")
        #expect(bytes != whole)
        // What was read is durable again: a second start after a kill reads the same.
        restarted.abandon()
        let again = try FileStateStore(directory: d, logger: quietLogger)
        #expect(again.load("count") == "200" && again.load("upTo100") == "99")
    }

    /// Runs `work` on a thread of its own; false when it has not finished after `seconds`
    /// (`unblock` is then called so that the thread can end).
    func finishes(within seconds: Double, unblock: () -> Void, _ work: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread { work(); done.signal() }.start()
        if done.wait(timeout: .now() + seconds) == .success { return true }
        unblock()
        _ = done.wait(timeout: .now() + 10)
        return false
    }

    /// A FIFO as the journal: the start does not hang; the error names the file.
    @Test func aFIFOAsTheJournalIsAnErrorAtOnce() throws {
        let d = tempDir()
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        chmod(d, 0o750)
        #expect(mkfifo(journal(d), 0o600) == 0)
        let error = Mutex<String?>(nil)
        let finished = finishes(within: 5, unblock: {
            let fd = open(journal(d), O_RDWR | O_NONBLOCK)
            close(fd)
        }) {
            do { _ = try FileStateStore(directory: d, logger: quietLogger) } catch let e { error.withLock { $0 = "\(e)" } }
        }
        #expect(finished, "opening a state directory whose journal is a FIFO hung")
        let message = error.withLock { $0 } ?? "no error"
        #expect(message.contains(journal(d)) && message.contains("FIFO"), "\(message)")
    }

    /// A FIFO as a counter's state file: loading it does not hang; the error names the file.
    @Test func aFIFOAsAStateFileIsReportedAtOnce() throws {
        let d = tempDir()
        let lines = CapturedLog()
        let s = try FileStateStore(directory: d, logger: lines.logger)
        #expect(mkfifo(s.path(for: "count"), 0o600) == 0)
        let value = Mutex<String?>("not read")
        let finished = finishes(within: 5, unblock: {
            let fd = open(s.path(for: "count"), O_RDWR | O_NONBLOCK)
            close(fd)
        }) { let v = s.load("count"); value.withLock { $0 = v } }
        #expect(finished, "loading a state file that is a FIFO hung")
        #expect(value.withLock { $0 } == nil)
        #expect(lines.all.contains { $0.hasPrefix("error: ") && $0.contains(s.path(for: "count")) && $0.contains("FIFO") }, "\(lines.all)")
    }

    /// A directory as the journal: the store opened as the daemon opens it says so in its
    /// durability (not "durable"), and refuses changes with the reason.
    @Test func aDirectoryAsTheJournalIsNotDurable() throws {
        let d = tempDir()
        try FileManager.default.createDirectory(atPath: journal(d), withIntermediateDirectories: true)
        chmod(d, 0o750)
        let s = try FileStateStore(directory: d, logger: quietLogger, access: .readWriteOrReadOnly)
        #expect(s.durability != .durable)
        #expect(throws: KioskError.self) { try s.saveBatch([("count", "1")]) }
        if case .unavailable(let why) = s.durability {
            #expect(why.contains(journal(d)) && why.contains("directory"), "\(why)")
        }
    }
}
