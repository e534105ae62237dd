import Foundation
import KioskCore
@testable import KioskDaemon
import KioskState
import Testing

@Suite struct FileStateStoreTests {
    @Test func restartRestoresValues() throws {
        let d = tempDir()
        let a = try FileStateStore(directory: d, logger: quietLogger)
        try a.save("counter.score.HOME", "42")
        try a.save("daemon.scene", "score")
        try a.save("counter.score.HOME", "43")
        a.close() // a restart: the lock is given back
        let b = try FileStateStore(directory: d, logger: quietLogger)
        #expect(b.load("counter.score.HOME") == "43")
        #expect(b.load("daemon.scene") == "score")
        #expect(b.load("never.saved") == nil)
        #expect(b.problems.isEmpty)
    }

    @Test func saveIsDurableBeforeReturning() throws {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        var steps: [String] = []
        s.trace = { steps.append($0) }
        try s.save("k", "1")
        try s.save("k", "2")
        let p = s.path(for: "k")
        #expect(steps == [
            "open \(p).tmp", "write \(p).tmp", "fsync \(p).tmp", "rename \(p).tmp \(p)", "fsync-dir \(d)",
            "open \(p).tmp", "write \(p).tmp", "fsync \(p).tmp", "rename \(p) \(p).bak", "rename \(p).tmp \(p)", "fsync-dir \(d)",
        ])
        // The previous good value is kept as the backup.
        #expect(try FileStateStore.decode([UInt8](FileManager.default.contents(atPath: p + ".bak")!)) == "1")
        #expect(try FileStateStore.decode([UInt8](FileManager.default.contents(atPath: p)!)) == "2")
        #expect(!FileManager.default.fileExists(atPath: p + ".tmp"))
    }

    @Test(arguments: ["truncated", "garbage", "flipped", "empty"])
    func corruptFileIsMovedAsideAndBackupUsed(_ damage: String) throws {
        let d = tempDir()
        let a = try FileStateStore(directory: d, logger: quietLogger)
        try a.save("counter.score.HOME", "17")
        try a.save("counter.score.HOME", "18")
        let p = a.path(for: "counter.score.HOME")
        var bytes = [UInt8](FileManager.default.contents(atPath: p)!)
        switch damage {
        case "truncated": bytes.removeLast()
        case "garbage": bytes = Array("\u{0}\u{1}zz".utf8)
        case "flipped": bytes[bytes.count - 1] = UInt8(ascii: "9")
        default: bytes = []
        }
        _ = FileManager.default.createFile(atPath: p, contents: Data(bytes))
        a.close()
        let b = try FileStateStore(directory: d, logger: quietLogger)
        // The last good value (the backup), never zero or nil.
        #expect(b.load("counter.score.HOME") == "17")
        #expect(b.problems.count == 1)
        #expect(b.problems.first?.contains(p) == true)
        b.close()
        let files = try FileManager.default.contentsOfDirectory(atPath: d)
        #expect(files.contains { $0.hasPrefix(FileStateStore.fileName(for: "counter.score.HOME") + ".corrupt-") }, "\(files)")
        // The good copy is back in place for the next start.
        let c = try FileStateStore(directory: d, logger: quietLogger)
        #expect(c.load("counter.score.HOME") == "17")
        #expect(c.problems.isEmpty)
    }

    @Test func interruptedSaveFallsBackToBackup() throws {
        let d = tempDir()
        let a = try FileStateStore(directory: d, logger: quietLogger)
        try a.save("x", "5")
        try a.save("x", "6")
        let p = a.path(for: "x")
        // A crash between "current → .bak" and "tmp → current": no current file, an unacknowledged tmp.
        try FileManager.default.removeItem(atPath: p)
        _ = FileManager.default.createFile(atPath: p + ".tmp", contents: Data(FileStateStore.encode("7")))
        a.close()
        let b = try FileStateStore(directory: d, logger: quietLogger)
        #expect(b.load("x") == "5")
        #expect(!FileManager.default.fileExists(atPath: p + ".tmp"))
    }

    @Test func keysBecomeSafeFileNames() {
        #expect(FileStateStore.fileName(for: "counter.score.HOME") == "counter.score.HOME.state")
        #expect(FileStateStore.fileName(for: "../etc/passwd") == "%2E.%2Fetc%2Fpasswd.state")
        #expect(FileStateStore.fileName(for: "a b/ü") == "a%20b%2F%C3%BC.state")
    }

    @Test func unwritableDirectoryIsReported() {
        // /proc refuses new directories to root too.
        let msg = configError { _ = try FileStateStore(directory: "/proc/kioskd-state", logger: quietLogger) }
        #expect(msg?.contains("/proc/kioskd-state") == true)
    }
}
