import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import Logging
import KioskTestTraits
import Synchronization
import Testing
import KioskPosix

/// Fails the store's system calls on demand: once the trace reaches step `failAt` (1-based), the
/// next call fails with `code` — or every call from then on when `failRest` is set (so the undo
/// after a failure fails too).
// @unchecked: a test sets it up and reads it back on its own thread; the store calls it from the
// same thread (the daemon loop is run by the test with runOnce), never concurrently.
final class StateFaults: @unchecked Sendable {
    var steps: [String] = []
    var failAt: Int?
    /// Or: fail the call of the first step this accepts.
    var failWhen: ((String) -> Bool)?
    var failRest = false
    var code: Int32 = EIO
    private var armed = false

    func trace(_ step: String) {
        steps.append(step)
        if steps.count == failAt || failWhen?(step) == true { armed = true }
    }

    private func gate<R>(_ failed: R, _ real: () -> R) -> R {
        guard armed else { return real() }
        if !failRest { armed = false }
        errno = code
        return failed
    }

    var syscalls: FileStateStore.Syscalls {
        let sys = FileStateStore.Syscalls.system
        return FileStateStore.Syscalls(
            openat: { d, n, f, m in self.gate(-1) { sys.openat(d, n, f, m) } },
            write: { fd, b, c in self.gate(-1) { sys.write(fd, b, c) } },
            fsync: { fd in self.gate(-1) { sys.fsync(fd) } },
            renameat: { d, a, b in self.gate(-1) { sys.renameat(d, a, b) } },
            unlinkat: { d, n in self.gate(-1) { sys.unlinkat(d, n) } },
            mkdir: { p, m in self.gate(-1) { sys.mkdir(p, m) } },
            ftruncate: { fd, n in self.gate(-1) { sys.ftruncate(fd, n) } })
    }
}

@Suite(.ownThreads) struct StateFaultTests {
    /// The trace of one save (over a previous value, or the first one).
    private func stepsOfASave(previous: Bool) throws -> [String] {
        let d = tempDir()
        let s = try FileStateStore(directory: d, logger: quietLogger)
        defer { s.close() }
        if previous { try s.save("k", "1") }
        var steps: [String] = []
        s.trace = { steps.append($0) }
        try s.save("k", "2")
        return steps
    }

    /// A failure injected at every step of the write sequence, with EACCES, EIO and ENOSPC, failing
    /// once or with every later call failing too: what the answer said is what a fresh store reads.
    @Test(arguments: [EACCES, EIO, ENOSPC])
    func theAnswerAlwaysMatchesWhatARestartReads(_ code: Int32) throws {
        for previous in [true, false] {
            let steps = try stepsOfASave(previous: previous)
            #expect(steps.count == (previous ? 6 : 5), "\(steps)")
            for (i, step) in steps.enumerated() {
                for failRest in [false, true] {
                    let d = tempDir()
                    let faults = StateFaults()
                    let s = try FileStateStore(directory: d, logger: quietLogger, syscalls: faults.syscalls)
                    let unknown = Mutex(false)
                    s.onUnknownOutcome = { _ in unknown.withLock { $0 = true } }
                    if previous { try s.save("k", "1") }
                    s.trace = faults.trace
                    faults.failAt = i + 1
                    faults.failRest = failRest
                    faults.code = code
                    var said = true
                    var message = ""
                    do { try s.save("k", "2") } catch {
                        said = false
                        message = "\(error)"
                    }
                    // The directory sync and the undo's both failed: kioskd exits without an answer.
                    if unknown.withLock({ $0 }) {
                        #expect(failRest && step.hasPrefix("fsync-dir"), "an unknown outcome after a failure at '\(step)'")
                        s.abandon()
                        continue
                    }
                    s.close()
                    let fresh = try FileStateStore(directory: d, logger: quietLogger)
                    let loaded = fresh.load("k")
                    fresh.close()
                    let old: String? = previous ? "1" : nil
                    let what = "failure (errno \(code)\(failRest ? ", and every call after it" : "")) at step \(i + 1) '\(step)'"
                    #expect(loaded == (said ? "2" : old), "\(what): the answer said \(said ? "saved" : "refused: \(message)"), a restart reads \(loaded ?? "nothing")")
                    if !said {
                        #expect(message.contains(String(cString: strerror(code))) && message.contains(d), "\(what): \(message)")
                    }
                    // Up to the rename into place nothing can have been saved.
                    if !step.hasPrefix("fsync-dir") { #expect(!said, "\(what) was answered as saved") }
                    // A failed directory sync whose undo works is a refusal.
                    if step.hasPrefix("fsync-dir") && !failRest { #expect(!said && message.contains("put back"), "\(what): \(message)") }
                    #expect(!FileManager.default.fileExists(atPath: s.path(for: "k") + ".tmp"), "\(what): temp file left")
                }
            }
        }
    }

    /// The reported case: the directory sync fails after the rename (as with a directory that can
    /// be written and searched but not read). The counter's refusal must hold after a restart.
    @Test func aCounterChangeRefusedAfterTheRenameIsNotThereAfterARestart() throws {
        let d = tempDir()
        let config = try DaemonConfig.load(path: write("""
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "320x200"
            [scene.score]
            kind = "counter"
            digits = 2
            [[scene.score.counter]]
            name = "HOME"
            """, d), environment: [:])
        let faults = StateFaults()
        let store = try FileStateStore(directory: config.stateDirectory, logger: quietLogger, syscalls: faults.syscalls)
        let daemon = try DaemonRunner.makeDaemon(config: config, state: store, loop: try EventLoop(), logger: quietLogger)
        daemon.startAsKioskd()
        faults.code = EACCES
        faults.failWhen = { $0.hasPrefix("fsync-dir") }
        store.trace = faults.trace
        let r = try daemon.answer(.counter(name: "HOME", op: .inc, value: nil))
        #expect(r.status == 500)
        let err = r.jsonObject?["error"] as? String ?? ""
        #expect(err.contains("cannot save 1") && err.contains("the value stays 0") && err.contains("Permission denied"), "\(err)")
        daemon.shutdown()
        let again = try startDaemon(d, try String(contentsOfFile: config.file, encoding: .utf8))
        #expect(again.handle(.counter(name: "HOME", op: .get, value: nil)).jsonObject?["value"] as? Int == 0)
        again.shutdown()
    }

    /// A directory that cannot be opened for its sync (no read permission) is found at start, not
    /// after a rename: the store starts read-only and says why.
    @Test func aDirectoryThatCannotBeOpenedForItsSyncIsNotUsedForSaving() throws {
        let d = tempDir()
        let faults = StateFaults()
        faults.code = EACCES
        var sys = faults.syscalls
        let real = sys.openat
        sys.openat = { dfd, name, flags, mode in
            if name == d { errno = EACCES; return -1 }
            return real(dfd, name, flags, mode)
        }
        let msg = configError { _ = try FileStateStore(directory: d, logger: quietLogger, syscalls: sys) }
        #expect(msg == "cannot open the state directory \(d) to sync it after each save: open \(d) failed: Permission denied (errno 13)")
        let s = try FileStateStore(directory: d, logger: quietLogger, access: .readWriteOrReadOnly, syscalls: sys)
        #expect(s.durability == .unavailable(msg ?? ""))
        #expect(configError { try s.save("k", "1") } == "state is not being saved: \(msg ?? "")")
        #expect(directorySnapshot(d).isEmpty)
    }

    /// A full disk: the scene choice is refused with 507 and not shown; the counter keeps its value.
    @Test func aFullDiskRefusesSceneAndThemeChoices() throws {
        let d = tempDir()
        let config = try DaemonConfig.load(path: write("""
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "320x200"
            [scenes]
            order = ["score", "clock"]
            [scene.score]
            kind = "counter"
            [[scene.score.counter]]
            name = "HOME"
            [scene.clock]
            kind = "clock"
            """, d), environment: [:])
        let faults = StateFaults()
        let store = try FileStateStore(directory: config.stateDirectory, logger: quietLogger, syscalls: faults.syscalls)
        let daemon = try DaemonRunner.makeDaemon(config: config, state: store, loop: try EventLoop(), logger: quietLogger)
        daemon.startAsKioskd()
        faults.code = ENOSPC
        faults.failRest = true
        faults.failAt = 1
        store.trace = faults.trace
        let r = try daemon.answer(.scene(name: "clock"))
        #expect(r.status == 507)
        #expect((r.jsonObject?["error"] as? String)?.contains("No space left on device") == true, "\(r.jsonObject ?? [:])")
        #expect((r.jsonObject?["error"] as? String)?.contains("the scene stays 'score'") == true, "\(r.jsonObject ?? [:])")
        #expect(daemon.manager.current.name == "score")
        let t = try daemon.answer(.theme(name: "dark"))
        #expect(t.status == 507)
        #expect(daemon.manager.theme == .default)
        #expect(try daemon.answer(.counter(name: "HOME", op: .inc, value: nil)).status == 500)
        daemon.shutdown()
    }

    /// A theme choice is two values (the theme, and the config theme it was chosen under), kept
    /// in one batch of the pipeline: when the batch cannot be written neither takes effect, now
    /// or at the next start.
    @Test func aThemeChoiceWhoseBatchIsRefusedIsNotShownAfterARestart() throws {
        let d = tempDir()
        let text = """
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "320x200"
            [scene.clock]
            kind = "clock"
            """
        let config = try DaemonConfig.load(path: write(text, d), environment: [:])
        let faults = StateFaults()
        let store = try FileStateStore(directory: config.stateDirectory, logger: quietLogger, syscalls: faults.syscalls)
        let daemon = try DaemonRunner.makeDaemon(config: config, state: store, loop: try EventLoop(), logger: quietLogger)
        daemon.startAsKioskd()
        #expect(try daemon.answer(.theme(name: "light")).status == 200)
        faults.code = ENOSPC
        faults.failWhen = { $0.hasPrefix("append ") }
        store.trace = faults.trace
        let refused = try daemon.answer(.theme(name: "dark"))
        #expect(refused.status == 507, "\(refused.jsonObject ?? [:])")
        #expect(daemon.manager.theme == .light)
        daemon.shutdown()
        let again = try startDaemon(d, text)
        #expect(again.themeName == "light")
        #expect(again.manager.theme == .light)
        again.shutdown()
    }

    // MARK: keys

    /// Percent-decoding a file name gives back its key: the naming is injective.
    private func keyBytes(ofFile name: String) -> [UInt8] {
        let s = Array(name.utf8.dropLast(".state".utf8.count))
        var out: [UInt8] = []
        var i = 0
        while i < s.count {
            if s[i] == UInt8(ascii: "%"), let v = UInt8(String(decoding: s[(i + 1)...(i + 2)], as: UTF8.self), radix: 16) {
                out.append(v); i += 3
            } else {
                out.append(s[i]); i += 1
            }
        }
        return out
    }

    @Test func distinctScenesAndCountersNeverShareAStateFile() {
        let names = ["", ".", "..", "a", "b", "c", "a.b", "b.c", "a..b", "a.", ".a", "%", "%25", "%2E", "a%2Eb", "a%b",
                     "a/b", "a%2Fb", "/", "ü", "日本", "x y", "a\\b", ".hidden", "counter", "state", "kioskd.lock"]
        var byFile: [[UInt8]: (String, String)] = [:]
        for scene in names {
            for counter in names {
                let key = StateKey.join(["counter", scene, counter])
                let file = StateKey.fileName(for: key)
                #expect(keyBytes(ofFile: file) == Array(key.utf8), "\(file) does not read back as \(key)")
                #expect(!file.contains("/") && !file.hasPrefix(".") && file.hasSuffix(".state"), "\(file)")
                if let other = byFile[Array(file.utf8)] {
                    Issue.record("scene '\(scene)' counter '\(counter)' and scene '\(other.0)' counter '\(other.1)' share \(file)")
                }
                byFile[Array(file.utf8)] = (scene, counter)
            }
        }
        #expect(byFile.count == names.count * names.count)
        // The reported pair, and names without "." or "%" keep the names they always had.
        #expect(StateKey.join(["counter", "a.b", "c"]) != StateKey.join(["counter", "a", "b.c"]))
        #expect(StateKey.join(["counter", "score", "HOME"]) == "counter.score.HOME")
        #expect(StateKey.fileName(for: StateKey.join(["counter", "a.b", "c"])) == "counter.a%252Eb.c.state")
    }

    @Test func aCounterWhoseStateFileNameWouldBeTooLongIsRefusedInTheConfig() throws {
        let d = tempDir()
        let c = try loadConfig("""
            [scene.s]
            kind = "counter"
            [[scene.s.counter]]
            name = "HOME"
            """, dir: d)
        // A scene name long enough (whatever the config allows for names) that the file name is not.
        let context = SceneContext(name: String(repeating: "s", count: 230), stored: { _ in nil }, counterIntents: { _ in }, logger: quietLogger, dataDirectory: d)
        let msg = configError { _ = try CounterScene.make(c.scenes[0].table, context) }
        #expect(msg?.contains("kioskd.toml:4") == true && msg?.contains("cannot be saved") == true && msg?.contains("226") == true, "\(msg ?? "accepted")")
        #expect(StateKey.problem(StateKey.join(["counter", "score", "HOME"])) == nil)
    }

    // MARK: migration

    /// Writes a value the way earlier versions did: under "counter.SCENE.COUNTER".
    private func writeOld(_ dir: String, _ key: String, _ value: String) throws {
        let s = try FileStateStore(directory: dir, logger: quietLogger)
        try s.save(key, value)
        s.close()
    }

    @Test func aValueSavedUnderTheOldKeyIsMovedToTheNewOne() throws {
        let d = tempDir()
        try writeOld(d, "counter.a.b.c", "7")
        let old = "\(d)/counter.a.b.c.state"
        let first = try FileStateStore(directory: d, logger: quietLogger)
        let scenes = try dottedCounters(first, both: false)
        #expect(try scenes[0].value(of: "c") == 7)
        first.close()
        let moved = "\(d)/counter.a%252Eb.c.state"
        #expect(try FileStateStore.decode([UInt8](FileManager.default.contents(atPath: moved) ?? Data())) == "7")
        #expect(!FileManager.default.fileExists(atPath: old))
        #expect(FileManager.default.fileExists(atPath: old + ".migrated"), "\(directorySnapshot(d).keys.sorted())")
        // The next start reads the new file.
        let again = try FileStateStore(directory: d, logger: quietLogger)
        let restarted = try dottedCounters(again, both: false)
        #expect(try restarted[0].value(of: "c") == 7)
        try again.save(restarted[0].stateKey("c"), "8")
        again.close()
        let third = try FileStateStore(directory: d, logger: quietLogger)
        #expect(try dottedCounters(third, both: false)[0].value(of: "c") == 8)
        third.close()
    }

    @Test func anOldKeyTwoCountersClaimIsMovedToNeitherAndReported() throws {
        let d = tempDir()
        try writeOld(d, "counter.a.b.c", "7")
        let before = directorySnapshot(d)
        let log = CapturedLog()
        let state = try FileStateStore(directory: d, logger: log.logger)
        let scenes = try dottedCounters(state, logger: log.logger)
        #expect(try scenes[0].value(of: "c") == 0)
        #expect(try scenes[1].value(of: "b.c") == 0)
        state.close()
        #expect(directorySnapshot(d) == before)
        let errors = log.entries.filter { $0.level == .error }.map { "\($0.message)" }
        #expect(errors.count == 1, "\(errors)")
        #expect(errors.first?.contains("'counter.a.b.c' (\(d)/counter.a.b.c.state) could belong to counter 'c' of scene 'a.b' or counter 'b.c' of scene 'a'") == true, "\(errors)")
    }

    /// Through the registry (as at every start and reload): names without "." or "%" keep their files.
    @Test func plainNamesKeepTheirStateFiles() throws {
        let d = tempDir()
        try writeOld("\(d)/state", "counter.score.HOME", "42")
        let c = try loadConfig("""
            state_dir = "\(d)/state"
            [scene.score]
            kind = "counter"
            [[scene.score.counter]]
            name = "HOME"
            """, dir: d)
        let state = try FileStateStore(directory: c.stateDirectory, logger: quietLogger)
        let scenes = try SceneRegistry.standard.make(c.scenes, state: state, intents: { _ in }, logger: quietLogger, dataDirectory: d)
        #expect(try (scenes[0] as? CounterScene)?.value(of: "HOME") == 42)
        state.close()
        #expect(directorySnapshot("\(d)/state").keys.sorted() == ["counter.score.HOME.state", FileStateStore.lockName, StateVersion.fileName].sorted())
    }

    // MARK: the on-screen mark

    @Test func anUnsavedStateIsMarkedOnScreen() throws {
        let d = tempDir()
        write("a file where the state directory's parent should be", d, "file")
        let log = CapturedLog()
        let daemon = try startDaemon(d, logger: log.logger, """
            state_dir = "\(d)/file/state"
            [display]
            backend = "headless"
            headless_size = "320x200"
            [scene.score]
            kind = "counter"
            [[scene.score.counter]]
            name = "HOME"
            """)
        #expect(daemon.manager.stateWarning == "state not saved")
        #expect(try daemon.answer(.counter(name: "HOME", op: .inc, value: nil)).status == 500)
        #expect(try daemon.answer(.scene(name: "score")).status == 200)
        let canvas = try #require(daemon.manager.canvas)
        let corner = Rect(x: 160, y: 170, width: 160, height: 30)
        let highlight = daemon.manager.theme.palette.highlight
        let marked = Pixels.count(highlight, in: canvas, rect: corner, tolerance: 40)
        daemon.manager.stateWarning = nil
        try daemon.step()
        let unmarked = Pixels.count(highlight, in: canvas, rect: corner, tolerance: 40)
        #expect(marked > unmarked + 20, "highlight pixels in the corner: \(marked) with the mark, \(unmarked) without")
        // Said once in the log, as a warning.
        let said = log.all.filter { $0.contains("state is not being saved") }
        #expect(said.count == 1 && said.first?.hasPrefix("warning: ") == true, "\(said)")
        daemon.shutdown()
    }
}
