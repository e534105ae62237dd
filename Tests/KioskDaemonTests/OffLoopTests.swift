import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskPosix
import KioskRender
@testable import KioskScenes
import KioskState
import KioskTesting
import KioskTestTraits
import Synchronization
import Testing

/// The daemon's worker, with a gate: while held, the next job waits (at most 20 s, so a broken
/// test cannot hang) before it runs; every job is counted.
final class HeldWork: OffLoopWork, Sendable {
    private let inner: WorkerThread
    private let gate = Gate()

    final class Gate: Sendable {
        let held = Mutex(false)
        let open = DispatchSemaphore(value: 0)
        /// Signalled when a held job begins.
        let entered = DispatchSemaphore(value: 0)
        /// Jobs begun.
        let jobs = Mutex(0)
    }

    init(loop: any KioskLoop) { inner = WorkerThread(name: "kioskd-work", loop: loop) }

    func hold() { gate.held.withLock { $0 = true } }
    func release() { gate.open.signal() }
    var entered: DispatchSemaphore { gate.entered }
    var jobs: Int { gate.jobs.withLock { $0 } }

    func run<T: Sendable>(_ work: @escaping @Sendable () -> T, then: @escaping (T) -> Void) {
        inner.run({ [gate] () -> T in
            gate.jobs.withLock { $0 += 1 }
            if gate.held.withLock({ h in defer { h = false }; return h }) {
                gate.entered.signal()
                _ = gate.open.wait(timeout: .now() + 20)
            }
            return work()
        }, then: then)
    }

    func finish(timeout: Double) { inner.finish(timeout: timeout) }
}

/// The render loop only draws, reads input and flips: a screenshot's PNG encoding, a painting's
/// encoding, write and fsync, and the files a reload reads are done on the daemon's worker, with
/// the command pipeline started as in kioskd. While that work is held, the loop keeps running
/// what is posted to it and the clock keeps drawing frames; the answer comes only once the work
/// is done, and a failure is answered naming what failed.
@Suite(.ownThreads, .serialized) struct OffLoopTests {
    static let config = """
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scenes]
        order = ["clock", "paint"]
        [scene.clock]
        kind = "clock"
        [scene.paint]
        kind = "paint"
        """

    /// A daemon showing the clock, with a paint scene beside it, on its loop thread with the
    /// pipeline started; `work` replaces its worker when given.
    static func start(_ dir: String, loop: EventLoop? = nil, work: OffLoopWork? = nil) throws -> LoopThread {
        let text = "state_dir = \"\(dir)/state\"\n" + config
        let daemon = try DaemonRig.make(text, in: dir, state: MemoryStateStore(), loop: try loop ?? EventLoop(), logger: quietLogger)
        if let work { daemon.work = work }
        let t = LoopThread(daemon)
        return t
    }

    static func paint(_ d: Daemon) -> PaintScene { d.manager.scenes.compactMap { $0 as? PaintScene }.first! }

    /// The loop runs what is posted to it and the clock draws at least one more frame (it ticks
    /// each second), within 5 s.
    static func loopKeepsDrawing(_ t: LoopThread, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        let before = ChoicePipelineTests.within(t, 2) { $0.manager.frameCount }
        #expect(before != nil, "the render loop ran nothing while the work was held", sourceLocation: sourceLocation)
        guard let before else { return }
        let drew = waitFor(5) { (ChoicePipelineTests.within(t, 1) { $0.manager.frameCount } ?? 0) > before }
        #expect(drew, "the clock drew no frame while the work was held", sourceLocation: sourceLocation)
    }

    @Test func aPaintingSaveHeldOnItsWriteDoesNotHoldTheLoopAndIsAnsweredOnceOnDisk() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let t = try Self.start(dir)
        let entered = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let held = Mutex(true)
        defer { gate.signal(); t.stop() }
        t.run { d in
            // The write waits for the test: as a disk whose fsync takes long would.
            Self.paint(d).files.writeFault = { _ in
                if held.withLock({ h in defer { h = false }; return h }) {
                    entered.signal()
                    _ = gate.wait(timeout: .now() + 20)
                }
                return nil
            }
        }
        let answer = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(.paint(op: .save, name: "held.png")) { r in answer.withLock { $0 = r } } }
        #expect(entered.wait(timeout: .now() + 5) == .success, "the painting's write did not begin")

        Self.loopKeepsDrawing(t)
        #expect(answer.withLock { $0 } == nil, "answered before the painting was written")
        // A slow disk delays no screenshot and no reload: they are not queued behind the save.
        #expect(Self.ask(t, .screenshot(), within: 5)?.status == 200, "a screenshot waited for the painting's write")
        #expect(Self.ask(t, .reload, within: 5)?.status == 200, "a reload waited for the painting's write")
        #expect(answer.withLock { $0 } == nil, "answered before the painting was written")

        gate.signal()
        #expect(waitFor(5) { answer.withLock { $0 } != nil }, "no answer after the write")
        let r = answer.withLock { $0 }
        let path = "\(dir)/state/paintings/held.png"
        #expect(r?.status == 200, "\(r.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
        #expect(r?.jsonObject?["path"] as? String == path)
        // On disk when answered: the PNG of the paint area (the screen less the toolbar).
        let img = try Canvas.loadPNG(path: path)
        let area = t.run { d in Self.paint(d).paintArea.width * 10_000 + Self.paint(d).paintArea.height }
        #expect(img.size.width * 10_000 + img.size.height == area)
    }

    /// A write that fails is answered with the error naming the file, the call and errno; the
    /// half-written file is gone. A name that exists is 409, as before.
    @Test(arguments: [(ENOSPC, 500), (EIO, 500)])
    func aPaintingSaveThatFailsOnTheWorkerIsAnsweredWithTheError(_ code: Int32, _ status: Int) throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let t = try Self.start(dir)
        defer { t.stop() }
        t.run { d in Self.paint(d).files.writeFault = { _ in code } }
        let r = Self.ask(t, .paint(op: .save, name: "full.png"))
        let path = "\(dir)/state/paintings/full.png"
        #expect(r?.status == status)
        #expect(r?.jsonObject?["error"] as? String == "cannot write \(path): write: \(String(cString: strerror(code))) (errno \(code))")
        #expect(!FileManager.default.fileExists(atPath: path))

        t.run { d in Self.paint(d).files.writeFault = nil }
        #expect(Self.ask(t, .paint(op: .save, name: "mine.png"))?.status == 200)
        let again = Self.ask(t, .paint(op: .save, name: "mine.png"))
        #expect(again?.status == 409)
        #expect(again?.jsonObject?["error"] as? String == "cannot write \(dir)/state/paintings/mine.png: a file of that name already exists (errno 17); paintings are never overwritten")
    }

    /// Paintings waiting for a slow disk hold their pixels; beyond the bound a save is refused
    /// (503, naming how many wait and where) and writes nothing, while the one waiting is still
    /// written and answered.
    @Test func aSaveBeyondThePaintingsWaitingIsRefused() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let t = try Self.start(dir)
        let entered = DispatchSemaphore(value: 0), gate = DispatchSemaphore(value: 0)
        let held = Mutex(true)
        defer { gate.signal(); t.stop() }
        t.run { d in
            let p = Self.paint(d)
            p.maxSavingBytes = 1
            p.files.writeFault = { _ in
                if held.withLock({ h in defer { h = false }; return h }) {
                    entered.signal()
                    _ = gate.wait(timeout: .now() + 20)
                }
                return nil
            }
        }
        let first = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(.paint(op: .save, name: "first.png")) { r in first.withLock { $0 = r } } }
        #expect(entered.wait(timeout: .now() + 5) == .success, "the first painting's write did not begin")
        let second = Self.ask(t, .paint(op: .save, name: "second.png"), within: 5)
        #expect(second?.status == 503)
        #expect((second?.jsonObject?["error"] as? String)?.hasPrefix("cannot save the painting now: 1 painting (0 MiB) is still being written to \(dir)/state/paintings; not saved") == true,
                "\(second.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
        gate.signal()
        #expect(waitFor(5) { first.withLock { $0 } != nil })
        #expect(first.withLock { $0 }?.status == 200)
        #expect(FileManager.default.fileExists(atPath: "\(dir)/state/paintings/first.png"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/state/paintings/second.png"))
    }

    /// The answer to `command` through `Daemon.handle(_:reply:)`, within `seconds`.
    static func ask(_ t: LoopThread, _ command: ControlCommand, within seconds: Double = 10) -> ControlResponse? {
        let answer = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(command) { r in answer.withLock { $0 = r } } }
        _ = waitFor(seconds) { answer.withLock { $0 } != nil }
        return answer.withLock { $0 }
    }

    /// A screenshot is the frame shown when it was asked for, encoded on the worker; while the
    /// encoding is held the loop keeps drawing and nothing is answered. Screenshots asked for in
    /// the same turn of the loop share one encoding.
    @Test func aScreenshotIsEncodedOffTheLoopAndAnsweredWhenDone() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        let held = HeldWork(loop: loop)
        let t = try Self.start(dir, loop: loop, work: held)
        defer { held.release(); t.stop() }
        held.hold()
        let answers = Mutex<[ControlResponse]>([])
        let shown = Mutex<PixelCopy?>(nil)
        t.daemon.post { d in
            for _ in 0..<5 { d.handle(.screenshot()) { r in answers.withLock { $0.append(r) } } }
            shown.withLock { $0 = d.manager.canvas?.pixelCopy() }
        }
        #expect(held.entered.wait(timeout: .now() + 5) == .success, "the screenshot's encoding did not begin")

        Self.loopKeepsDrawing(t)
        #expect(answers.withLock { $0 }.isEmpty, "answered before the PNG was encoded")

        held.release()
        #expect(waitFor(5) { answers.withLock { $0 }.count == 5 }, "not every screenshot was answered")
        #expect(held.jobs == 1, "five screenshots of one frame were encoded \(held.jobs) times")
        let first = try #require(answers.withLock { $0 }.first)
        #expect(first.status == 200 && first.contentType == "image/png")
        #expect(answers.withLock { $0 }.allSatisfy { $0 == first })
        // The PNG is the frame as it was asked for (pixel for pixel).
        let file = "\(dir)/shot.png"
        try Data(first.body).write(to: URL(fileURLWithPath: file))
        let img = try Canvas.loadPNG(path: file)
        let frame = try #require(shown.withLock { $0 })
        #expect(img.pixelCopy().size == frame.size)
        #expect(img.pixelCopy().bytes.enumerated().filter { $0.offset % 4 != 3 }.map(\.element)
                == frame.bytes.enumerated().filter { $0.offset % 4 != 3 }.map(\.element), "the PNG is not the frame shown when it was asked for")
    }

    /// A reload reads the config and theme files on the worker and applies them on the loop;
    /// reloads asked for while that reading has not begun share it. A bad config is answered
    /// 422 naming the file, as before.
    @Test func reloadsReadTheirFilesOffTheLoop() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let loop = try EventLoop()
        let held = HeldWork(loop: loop)
        let t = try Self.start(dir, loop: loop, work: held)
        defer { held.release(); t.stop() }
        // The reloaded config shows the paint scene first and names a theme file.
        try FileManager.default.createDirectory(atPath: "\(dir)/themes", withIntermediateDirectories: true)
        write("base = \"dark\"\n[palette]\nbackground = \"#102030\"\n", dir, "themes/night.toml")
        write("state_dir = \"\(dir)/state\"\ntheme = \"night\"\ntheme_dir = \"\(dir)/themes\"\n" + Self.config.replacingOccurrences(of: "order = [\"clock\", \"paint\"]", with: "order = [\"paint\", \"clock\"]"), dir)
        held.hold()
        let answers = Mutex<[ControlResponse]>([])
        t.daemon.post { d in
            for _ in 0..<3 { d.handle(.reload) { r in answers.withLock { $0.append(r) } } }
        }
        #expect(held.entered.wait(timeout: .now() + 5) == .success, "the reload's reading did not begin")
        Self.loopKeepsDrawing(t)
        #expect(answers.withLock { $0 }.isEmpty, "answered before the files were read")
        #expect(t.run { $0.themeName } != "night")

        held.release()
        #expect(waitFor(5) { answers.withLock { $0 }.count == 3 }, "not every reload was answered")
        #expect(held.jobs == 1, "three reloads asked for at once read the files \(held.jobs) times")
        for r in answers.withLock({ $0 }) {
            #expect(r.status == 200)
            #expect((r.jsonObject?["message"] as? String)?.hasPrefix("reloaded \(dir)/kioskd.toml: scenes paint, clock, theme night") == true, "\(String(decoding: r.body, as: UTF8.self))")
        }
        #expect(t.run { $0.themeName } == "night")
        #expect(t.run { $0.manager.theme.palette.background } == Color(hex: "#102030"))

        write("state_dir = \"\(dir)/state\"\n[display]\nbackground = 3\n", dir)
        let bad = Self.ask(t, .reload)
        #expect(bad?.status == 422)
        #expect((bad?.jsonObject?["error"] as? String)?.hasPrefix("\(dir)/kioskd.toml:") == true, "\(bad.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
        #expect(t.run { $0.themeName } == "night")
    }

    /// A reload that brings a counter whose value was saved under an earlier version's key moves
    /// it on the worker, before the scenes are made: the counter shows it, the value is under the
    /// new key and the old file is renamed `.migrated`.
    @Test func aReloadMovesValuesSavedUnderOldKeysOffTheLoop() throws {
        let dir = tempDir()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let old = try FileStateStore(directory: "\(dir)/state", logger: quietLogger)
        try old.save("counter.a.b.c", "7")
        old.close()
        let store = try FileStateStore(directory: "\(dir)/state", logger: quietLogger)
        let text = "state_dir = \"\(dir)/state\"\n" + Self.config
        let loop = try EventLoop()
        let held = HeldWork(loop: loop)
        let daemon = try DaemonRig.make(text, in: dir, state: store, loop: loop, logger: quietLogger)
        daemon.work = held
        let t = LoopThread(daemon)
        defer { held.release(); t.stop() }
        write(text.replacingOccurrences(of: "order = [\"clock\", \"paint\"]", with: "order = [\"clock\", \"paint\", \"a.b\"]")
              + "\n[scene.\"a.b\"]\nkind = \"counter\"\n[[scene.\"a.b\".counter]]\nname = \"c\"\n", dir)
        let r = Self.ask(t, .reload)
        #expect(r?.status == 200, "\(r.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
        #expect(held.jobs == 1)
        #expect(t.run { d in (d.manager.scenes.first { $0.name == "a.b" } as? CounterScene).flatMap { try? $0.value(of: "c") } } == 7)
        #expect(store.load(CounterScene.stateKey(scene: "a.b", counter: "c")) == "7")
        #expect(FileManager.default.fileExists(atPath: "\(dir)/state/counter.a.b.c.state.migrated"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/state/counter.a.b.c.state"))
    }
}

/// The worker thread: work runs in the order given, away from the loop; each result comes back
/// on the loop's thread, in the same order; `finish` carries out what was given before it ends
/// the thread, and work given afterwards runs at once on the caller's thread.
@Suite(.ownThreads) struct WorkerThreadTests {
    @Test func workRunsInOrderOffTheLoopAndResultsComeBackOnItInOrder() throws {
        let loop = try EventLoop()
        let ran = DispatchSemaphore(value: 0)
        Thread { try? loop.run(); ran.signal() }.start()
        let worker = WorkerThread(name: "kioskd-work", loop: loop)
        let loopThread = Mutex<pthread_t?>(nil)
        let seen = Mutex<[(job: Int, onLoop: Bool, workOnLoop: Bool)]>([])
        let done = DispatchSemaphore(value: 0)
        loop.post {
            loopThread.withLock { $0 = pthread_self() }
            for i in 0..<20 {
                worker.run({ () -> (Int, Bool) in
                    usleep(UInt32(20 - i) * 200) // later work is quicker: order must not follow speed
                    let here = pthread_self()
                    return (i, loopThread.withLock { pthread_equal($0!, here) != 0 })
                }, then: { r in
                    let here = pthread_self()
                    seen.withLock { $0.append((r.0, loopThread.withLock { pthread_equal($0!, here) != 0 }, r.1)) }
                    if r.0 == 19 { done.signal() }
                })
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        let s = seen.withLock { $0 }
        #expect(s.map(\.job) == Array(0..<20))
        #expect(s.allSatisfy { $0.onLoop && !$0.workOnLoop })

        // Finishing: what was given is carried out first; afterwards work runs on the caller.
        let order = Mutex<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        loop.post {
            worker.run({ usleep(100_000); order.withLock { $0.append("queued") } }, then: { _ in })
            worker.finish(timeout: 5)
            order.withLock { $0.append("finished") }
            worker.run({ order.withLock { $0.append("inline") } }, then: { _ in finished.signal() })
        }
        #expect(finished.wait(timeout: .now() + 10) == .success)
        #expect(order.withLock { $0 } == ["queued", "finished", "inline"])
        loop.stop()
        #expect(ran.wait(timeout: .now() + 5) == .success)
    }
}
