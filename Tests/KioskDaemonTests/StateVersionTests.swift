import Foundation
import KioskConfig
import KioskCore
import Logging
import KioskDaemonTesting
import KioskState
import KioskTestTraits
import KioskTesting
import Testing

/// The state directory's version file (`StateVersion`): written by the kioskd that opens the
/// directory; a directory a newer kioskd (or state format) wrote is refused — a config error
/// naming both versions, nothing there changed.
@Suite(.ownThreads) struct StateVersionTests {
    func versionFile(_ d: String) -> String? { try? String(contentsOfFile: "\(d)/\(StateVersion.fileName)", encoding: .utf8) }

    /// A directory with a value saved in the journal and in a state file, and `version` as its version file.
    func stateWritten(by version: String, format: Int = StateVersion.format) throws -> String {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        try s.save("counter.score.HOME", "7")
        try s.saveBatch([("counter.score.AWAY", "3")])
        s.close()
        try StateVersion.encode(format: format, version: version).write(toFile: "\(d)/\(StateVersion.fileName)", atomically: false, encoding: .utf8)
        return d
    }

    @Test func aNewDirectoryGetsThisVersion() throws {
        let d = tempDir() + "/state"
        let s = try FileStateStore(directory: d, logger: quietLogger)
        #expect(versionFile(d) == "format \(StateVersion.format)\nversion \(KioskVersion.current)\n")
        s.close()
    }

    @Test(arguments: [("99.0.0", StateVersion.format), (KioskVersion.current + ".1", StateVersion.format), (KioskVersion.current, StateVersion.format + 1)])
    func aDirectoryWrittenByANewerKioskdIsRefusedAndLeftAlone(version: String, format: Int) throws {
        let d = try stateWritten(by: version, format: format)
        try? FileManager.default.removeItem(atPath: "\(d)/\(FileStateStore.lockName)")
        let before = directorySnapshot(d)
        for access in [FileStateStore.Access.readWrite, .readWriteOrReadOnly] {
            do {
                _ = try FileStateStore(directory: d, logger: quietLogger, access: access)
                Issue.record("a directory written by kioskd \(version) (format \(format)) was opened by kioskd \(KioskVersion.current)")
            } catch let e as KioskError {
                #expect(e.kind == .config, "exit status 78: \(e)")
                #expect(e.message.contains("written by kioskd \(version) (state format \(format))"), "\(e.message)")
                #expect(e.message.contains("this kioskd \(KioskVersion.current) (state format \(StateVersion.format))"), "\(e.message)")
                #expect(e.message.contains(d), "\(e.message)")
            }
        }
        #expect(directorySnapshot(d) == before, "nothing in the directory changed, not even a lock file")
    }

    @Test func aDirectoryWrittenByAnOlderKioskdIsReadAndTakesThisVersion() throws {
        let d = try stateWritten(by: "0.0.1")
        let s = try FileStateStore(directory: d, logger: quietLogger)
        #expect(s.load("counter.score.HOME") == "7")
        #expect(s.load("counter.score.AWAY") == "3")
        #expect(versionFile(d) == StateVersion.encode())
        s.close()
    }

    @Test func anUnreadableVersionFileIsRefusedNotGuessed() throws {
        let d = try stateWritten(by: KioskVersion.current)
        try "garbage".write(toFile: "\(d)/\(StateVersion.fileName)", atomically: false, encoding: .utf8)
        try? FileManager.default.removeItem(atPath: "\(d)/\(FileStateStore.lockName)")
        let before = directorySnapshot(d)
        #expect(throws: KioskError.self) { _ = try FileStateStore(directory: d, logger: quietLogger) }
        #expect(directorySnapshot(d) == before)
    }

    @Test func theVersionFileReadsBackAndIgnoresLinesItDoesNotKnow() {
        #expect(StateVersion.decode("format 2\nversion 1.2.3\nwritten 2027-01-01\n").map { "\($0.format) \($0.version)" } == "2 1.2.3")
        #expect(StateVersion.decode("version 1.2.3\n") == nil)
        #expect(StateVersion.refusal(directory: "/s", found: (1, "0.1.0"), format: 1, version: "0.1.1") == nil)
        #expect(StateVersion.refusal(directory: "/s", found: (1, "0.1.1"), format: 1, version: "0.1.0") != nil)
    }

    /// The daemon itself: exit status 78 and one line naming both versions; the directory as it was.
    @Test(.enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
    func kioskdExits78OnAStateDirectoryANewerKioskdWrote() throws {
        let d = try stateWritten(by: "99.0.0")
        try? FileManager.default.removeItem(atPath: "\(d)/\(FileStateStore.lockName)")
        let before = directorySnapshot(d)
        let path = write("state_dir = \"\(d)\"\n[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n[control]\nsocket = \"\(d).sock\"\n", tempDir())
        let p = try SpawnedProcess(Binaries.kioskd, ["--config", path],
                                   environment: ProcessInfo.processInfo.environment.filter { $0.key != "JOURNAL_STREAM" }, stderr: .pipe)
        let text = p.errors()
        p.wait()
        #expect(p.exitStatus == 78, "\(text)")
        #expect(text.hasPrefix("kioskd: the state directory \(d) was written by kioskd 99.0.0 (state format \(StateVersion.format)), newer than this kioskd \(KioskVersion.current)"), "\(text)")
        #expect(directorySnapshot(d) == before)
    }

    @Test func aConfigForANewerConfigFormatIsRefusedByName() throws {
        let d = tempDir()
        let path = write("config_format = 2\nfuture_key = 1\n[scene.clock]\nkind = \"clock\"\n", d)
        let msg = configError { _ = try DaemonConfig.load(path: path, environment: [:]) }
        #expect(msg == "\(path):1: key 'config_format': this config is written for config format 2; this kioskd \(KioskVersion.current) reads config format \(DaemonConfig.configFormat): install the kioskd it was written for, or edit it for this one", "\(msg ?? "accepted")")
        let ok = write("config_format = 1\n[scene.clock]\nkind = \"clock\"\n", tempDir())
        #expect(configError { _ = try DaemonConfig.load(path: ok, environment: [:]) } == nil)
    }
}
