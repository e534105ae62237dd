import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskScenes
import KioskState
import Logging
import KioskTestTraits
import Testing
import KioskPosix

/// Every file in `dir` (recursively) with its bytes: what "nothing was touched" compares.
func directorySnapshot(_ dir: String) -> [String: Data] {
    var out: [String: Data] = [:]
    guard let e = FileManager.default.enumerator(atPath: dir) else { return out }
    for case let name as String in e {
        out[name] = FileManager.default.contents(atPath: "\(dir)/\(name)") ?? Data("<dir or unreadable>".utf8)
    }
    return out
}

/// A headless daemon on `text` (a config file written to `dir`), started as kioskd starts it
/// (the rig: the pipeline's batches committed by the test) and with its first frame drawn.
func startDaemon(_ dir: String, logger: Logger = quietLogger, _ text: String) throws -> Daemon {
    try DaemonRig.start(text, in: dir, logger: logger)
}

/// The reported pair: scene "a.b" with counter "c" and scene "a" with counter "b.c" (made
/// directly: the config itself now refuses such names, the store must still keep them apart).
func dottedCounters(_ state: StateStore, both: Bool = true, logger: Logger = quietLogger) throws -> [CounterScene] {
    // As the registry makes counter scenes: old keys moved first, then each given its kept values.
    let pairs = [(scene: "a.b", counter: "c")] + (both ? [(scene: "a", counter: "b.c")] : [])
    _ = StateMigration.migrate(pairs.map { StateMigration.Counter(scene: $0.scene, counter: $0.counter) }, state: state, logger: logger)
    return try pairs.map { p in
        let settings = try CounterSettings(scene: p.scene, counters: [.init(name: p.counter, label: p.counter)], digits: 2)
        let values = CounterScene.storedValues(scene: p.scene, settings: settings, stored: state.load, logger: logger)
        return CounterScene(name: p.scene, settings: settings, values: values, intents: { _ in })
    }
}

let someTime = WallTime(realtimeNs: 1_704_067_200_000_000_000, monotonicNs: 10_000_000_000)

@Suite(.ownThreads) struct StateSafetyTests {
    // MARK: distinct counters never share a file

    @Test func countersWhoseNamesJoinToTheSameTextKeepTheirOwnValues() throws {
        let d = tempDir()
        let first = try FileStateStore(directory: d, logger: quietLogger)
        let scenes = try dottedCounters(first)
        try first.save(scenes[0].stateKey("c"), "7")
        try first.save(scenes[1].stateKey("b.c"), "3")
        first.close()
        let again = try FileStateStore(directory: d, logger: quietLogger)
        let restarted = try dottedCounters(again)
        #expect(try restarted[0].value(of: "c") == 7)
        #expect(try restarted[1].value(of: "b.c") == 3)
        again.close()
    }

    // MARK: symlinks and permissions

    @Test func aSymlinkPlantedAtTheTempNameIsNotFollowed() throws {
        let d = tempDir()
        let outside = tempDir("outside")
        let victim = write("precious", outside, "victim")
        let s = try FileStateStore(directory: d, logger: quietLogger)
        let key = "counter.score.HOME"
        try FileManager.default.createSymbolicLink(atPath: s.path(for: key) + ".tmp", withDestinationPath: victim)
        var saved = true
        do { try s.save(key, "5") } catch {
            saved = false
            #expect("\(error)".contains(s.path(for: key)), "\(error)")
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
        if saved {
            #expect(try FileStateStore.decode([UInt8](FileManager.default.contents(atPath: s.path(for: key))!)) == "5")
        }
    }

    @Test func aStateDirectoryWritableByOthersIsRefused() throws {
        let d = tempDir()
        chmod(d, 0o777)
        let msg = configError { _ = try FileStateStore(directory: d, logger: quietLogger) }
        #expect(msg?.contains(d) == true, "\(msg ?? "no error")")
        #expect(msg?.contains("writable by others") == true, "\(msg ?? "no error")")
        #expect(directorySnapshot(d).isEmpty, "nothing was created in a refused directory")
    }

    @Test(.enabled(if: getuid() == 0, "only root can give a link to another user"))
    func aStateDirectoryReachedThroughAnotherUsersSymlinkIsRefused() throws {
        let d = tempDir()
        let real = "\(d)/real", link = "\(d)/link"
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: false)
        #expect(symlink(real, link) == 0)
        #expect(lchown(link, 65534, 65534) == 0)
        let msg = configError { _ = try FileStateStore(directory: link, logger: quietLogger) }
        #expect(msg == "the state directory \(link) is a symbolic link owned by uid 65534, neither this user (uid 0) nor root; refusing to keep state through it")
        #expect(directorySnapshot(real).isEmpty)
        // The same link owned by root is fine.
        #expect(lchown(link, 0, 0) == 0)
        let s = try FileStateStore(directory: link, logger: quietLogger)
        try s.save("k", "1")
        #expect(FileManager.default.fileExists(atPath: "\(real)/k.state"))
        s.close()
    }

    // MARK: one daemon per state directory

    @Test func aSecondStoreOnTheSameDirectoryFailsAndTouchesNothing() throws {
        let d = tempDir()
        let first = try FileStateStore(directory: d, logger: quietLogger)
        try first.save("counter.score.HOME", "17")
        try first.save("counter.score.HOME", "18")
        // A damaged current file: a second instance that loaded it would move it aside and restore the backup.
        _ = FileManager.default.createFile(atPath: first.path(for: "counter.score.HOME"), contents: Data("junk".utf8))
        let before = directorySnapshot(d)
        var message: String?
        do {
            let second = try FileStateStore(directory: d, logger: quietLogger)
            _ = second.load("counter.score.HOME")
        } catch {
            message = "\(error)"
        }
        #expect(message == "another kioskd (pid \(getpid())) is using the state directory \(d)")
        #expect(directorySnapshot(d) == before)
        _ = first
    }

    /// A child process started elsewhere in this process shares the lock's open file description
    /// until its exec closes it; a store closed in that moment unlocks explicitly, so a store
    /// reopened at once (a restart in tests, a reload) gets the directory. Here a forked child
    /// keeps the description until it is killed; a second store in the same process still refuses.
    @Test func aLockSharedWithAChildIsFreeOnceItsStoreCloses() throws {
        let d = tempDir()
        let first = try FileStateStore(directory: d, logger: quietLogger)
        try first.save("k", "1")
        let child = fork()
        if child == 0 { while true { pause() } }
        #expect(child > 0)
        defer { kill(child, SIGKILL); var status: Int32 = 0; waitpid(child, &status, 0) }
        first.close()
        let second = try FileStateStore(directory: d, logger: quietLogger)
        #expect(second.load("k") == "1")
        #expect(configError { _ = try FileStateStore(directory: d, logger: quietLogger) } == "another kioskd (pid \(getpid())) is using the state directory \(d)")
        second.close()
    }

    @Test func aLockFileLeftByAnotherUserStillLocks() throws {
        let d = tempDir()
        try FileStateStore(directory: d, logger: quietLogger).close() // leaves kioskd.lock behind
        // Opening it for writing is refused (as for a lock file root left behind).
        var sys = FileStateStore.Syscalls.system
        let real = sys.openat
        sys.openat = { dfd, name, flags, mode in
            if name == FileStateStore.lockName && flags & O_ACCMODE == O_RDWR { errno = EACCES; return -1 }
            return real(dfd, name, flags, mode)
        }
        let first = try FileStateStore(directory: d, logger: quietLogger, syscalls: sys)
        #expect(first.durability == .durable)
        try first.save("k", "1")
        #expect(configError { _ = try FileStateStore(directory: d, logger: quietLogger) }?.hasPrefix("another kioskd (pid ") == true)
        first.close()
    }

    // MARK: a deleted state directory

    @Test func aDeletedStateDirectoryIsRecreatedWithEveryValue() throws {
        let d = tempDir()
        let dir = "\(d)/state"
        let s = try FileStateStore(directory: dir, logger: quietLogger)
        try s.save("counter.score.HOME", "1")
        try s.save("counter.score.AWAY", "5")
        try FileManager.default.removeItem(atPath: dir)
        try s.save("counter.score.HOME", "2")
        var st = stat()
        #expect(stat(dir, &st) == 0 && st.st_mode & 0o7777 == 0o750)
        #expect(try FileStateStore.decode([UInt8](FileManager.default.contents(atPath: s.path(for: "counter.score.HOME")) ?? Data())) == "2")
        // The other acknowledged value is written back too.
        #expect(try FileStateStore.decode([UInt8](FileManager.default.contents(atPath: s.path(for: "counter.score.AWAY")) ?? Data())) == "5")
        s.close()
    }

    @Test func aWriteBackThatFailsHalfwayIsFinishedAtTheNextSave() throws {
        let d = tempDir()
        let dir = "\(d)/state"
        let faults = StateFaults()
        let s = try FileStateStore(directory: dir, logger: quietLogger, syscalls: faults.syscalls)
        try s.save("counter.score.AWAY", "5")
        try s.save("counter.score.HOME", "1")
        try FileManager.default.removeItem(atPath: dir)
        s.trace = faults.trace
        faults.code = EIO
        faults.failWhen = { $0 == "write \(s.path(for: "counter.score.HOME")).tmp" }
        #expect(configError { try s.save("daemon.scene", "score") }?.contains("Input/output error") == true)
        faults.failWhen = nil
        try s.save("daemon.scene", "score")
        s.close()
        let fresh = try FileStateStore(directory: dir, logger: quietLogger)
        #expect(fresh.load("counter.score.AWAY") == "5")
        #expect(fresh.load("counter.score.HOME") == "1")
        #expect(fresh.load("daemon.scene") == "score")
        fresh.close()
    }

    @Test func aSceneChoiceThatCannotBeSavedIsRefusedAndNotShown() throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        daemon.startAsKioskd()
        try daemon.step()
        #expect(daemon.manager.current.name == "score")
        // The state directory is gone and a file sits in its place: it cannot be recreated.
        try FileManager.default.removeItem(atPath: "\(d)/state")
        write("not a directory", d, "state")
        let r = try daemon.answer(.scene(name: "clock"))
        #expect(r.status == 500)
        #expect((r.jsonObject?["error"] as? String)?.contains("\(d)/state") == true, "\(r.jsonObject ?? [:])")
        #expect(daemon.manager.current.name == "score")
        let t = try daemon.answer(.theme(name: "dark"))
        #expect(t.status == 500)
        #expect(daemon.status().theme == "default")
    }

    // MARK: a state directory that cannot be written

    private func clockConfig(_ d: String, _ extra: String = "") -> String {
        """
        state_dir = "\(d)/file/state"
        \(extra)
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scenes]
        order = ["clock", "score"]
        [scene.clock]
        kind = "clock"
        [scene.score]
        kind = "counter"
        digits = 2
        [[scene.score.counter]]
        name = "HOME"
        """
    }

    @Test func anUnusableStateDirectoryStillShowsTheSceneAndRefusesCounterChanges() throws {
        let d = tempDir()
        write("a file where the state directory's parent should be", d, "file")
        let daemon = try startDaemon(d, clockConfig(d))
        #expect(daemon.manager.frameCount >= 1)
        #expect(daemon.manager.current.name == "clock")
        let r = try daemon.answer(.counter(name: "HOME", op: .inc, value: nil))
        #expect(r.status == 500)
        let err = r.jsonObject?["error"] as? String ?? ""
        #expect(err.contains("not being saved") && err.contains("\(d)/file/state") && err.contains("the value stays 0"), "\(err)")
        #expect(daemon.handle(.counter(name: "HOME", op: .get, value: nil)).jsonObject?["value"] as? Int == 0)
        let state = daemon.status().state
        #expect(state.durable == false)
        #expect(state.reason?.contains("\(d)/file/state") == true, "\(state)")
        #expect(state.mode == "not saved")
        // A scene choice need not last: it is shown, and the answer says it is not kept.
        let scene = try daemon.answer(.scene(name: "score"))
        #expect(scene.status == 200 && scene.jsonObject?["saved"] as? Bool == false)
        #expect((scene.jsonObject?["note"] as? String)?.contains("state is not being saved") == true, "\(scene.jsonObject ?? [:])")
        #expect(daemon.manager.current.name == "score")
        daemon.shutdown()
    }

    @Test func volatileStateAcceptsChangesInMemory() throws {
        let d = tempDir()
        write("a file where the state directory's parent should be", d, "file")
        let daemon = try startDaemon(d, clockConfig(d, "state = \"volatile\""))
        #expect(daemon.manager.frameCount >= 1)
        let r = try daemon.answer(.counter(name: "HOME", op: .inc, value: nil))
        #expect(r.status == 200 && r.jsonObject?["value"] as? Int == 1)
        let state = daemon.status().state
        #expect(state.mode == "volatile")
        #expect(state.durable == false)
        daemon.shutdown()
    }
}
