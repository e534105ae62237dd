import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskPosix
import KioskScenes
import KioskState
import KioskTestTraits
import Synchronization
import Testing

/// A durable store whose next save can be held until the test releases it, or made to fail.
final class HeldStore: StateStore, Sendable {
    private let base: MemoryStateStore
    private let held = Mutex(false)
    private let failure = Mutex<Int32?>(nil)
    /// Signalled when a held save begins.
    let entered = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)
    /// Saves and batches carried out, in order (a batch as its keys).
    let log = Mutex<[[String]]>([])

    init(_ values: [String: String] = [:]) { base = MemoryStateStore(values) }

    /// The next save waits for `release()` (at most 20 s, so a broken test cannot hang).
    func hold() { held.withLock { $0 = true } }
    func release() { gate.signal() }
    /// Every save fails with `code` (nil: they succeed again).
    func fail(_ code: Int32?) { failure.withLock { $0 = code } }

    private func gateAndCheck(_ keys: [String], _ path: String) throws {
        if held.withLock({ h in defer { h = false }; return h }) {
            entered.signal()
            _ = gate.wait(timeout: .now() + 20)
        }
        if let code = failure.withLock({ $0 }) {
            throw KioskError(.state, Posix.error("open", path: "/state/\(path).tmp", errno: code).message, errno: code)
        }
        log.withLock { $0.append(keys) }
    }

    var values: [String: String] { base.values }
    func load(_ key: String) -> String? { base.load(key) }
    func save(_ key: String, _ value: String) throws {
        try gateAndCheck([key], key)
        try base.save(key, value)
    }
    func saveBatch(_ changes: [(key: String, value: String)]) throws {
        try gateAndCheck(changes.map(\.key), changes.first?.key ?? "")
        for c in changes { try base.save(c.key, c.value) }
    }
}

/// Scene, theme and clock-mode choices with the command pipeline running, as in kioskd: a
/// choice is saved on the pipeline's thread and applied (and answered) only once it is on disk;
/// the render loop keeps drawing meanwhile. Swipes save without holding the loop.
@Suite(.ownThreads, .serialized) struct ChoicePipelineTests {
    /// A daemon over `store` on its loop thread, showing the clock, with the pipeline started.
    static func start(_ store: StateStore, _ dir: String = tempDir()) throws -> LoopThread {
        let text = """
            state_dir = "\(dir)/state"
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
            """
        let daemon = try DaemonRig.make(text, in: dir, state: store, logger: quietLogger)
        let t = LoopThread(daemon)
        return t
    }

    /// `body`'s value on the loop, or nil when the loop did not run it within `seconds`.
    static func within<T: Sendable>(_ t: LoopThread, _ seconds: Double, _ body: @escaping @Sendable (Daemon) -> T) -> T? {
        let done = DispatchSemaphore(value: 0)
        let out = Mutex<T?>(nil)
        t.daemon.post { d in
            out.withLock { $0 = body(d) }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else { return nil }
        return out.withLock { $0 }
    }

    /// What each command asks, and how to see it applied.
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var command: ControlCommand
        var applied: @Sendable (Daemon) -> Bool
    }
    static let cases: [Case] = [
        Case(description: "scene", command: .scene(name: "score")) { $0.manager.current.name == "score" },
        Case(description: "theme", command: .theme(name: "dark")) { $0.activeThemeName == "dark" },
        Case(description: "clock mode", command: .clockMode(mode: "literal", scene: nil)) {
            ($0.manager.scenes.first { $0.name == "clock" } as? ClockScene)?.colorMode == .literal
        },
    ]

    @Test(arguments: cases)
    func aChoiceIsAnsweredOnlyAfterItsSaveAndTheLoopKeepsDrawingMeanwhile(_ c: Case) throws {
        let store = HeldStore([Daemon.sceneKey: "clock"])
        let t = try Self.start(store)
        defer { store.release(); t.stop() }
        #expect(t.run { $0.manager.current.name } == "clock")
        #expect(t.run { !c.applied($0) })
        let answer = Mutex<ControlResponse?>(nil)
        store.hold()
        t.daemon.post { d in d.handle(c.command) { r in answer.withLock { $0 = r } } }
        #expect(store.entered.wait(timeout: .now() + 5) == .success, "the choice's save did not begin")

        // The save is held: the loop still runs what is posted to it and draws the clock.
        let before = Self.within(t, 2) { $0.manager.frameCount }
        #expect(before != nil, "the render loop ran nothing while the save was held")
        if let before {
            let drew = waitFor(5) { (Self.within(t, 1) { $0.manager.frameCount } ?? 0) > before }
            #expect(drew, "no frame was drawn while the save was held")
        }
        #expect(answer.withLock { $0 } == nil, "answered before the save was done")
        #expect(Self.within(t, 2) { c.applied($0) } == false, "applied before the save was done")

        store.release()
        #expect(waitFor(5) { answer.withLock { $0 } != nil }, "no answer after the save")
        let r = answer.withLock { $0 }
        #expect(r?.status == 200, "\(r.map { String(decoding: $0.body, as: UTF8.self) } ?? "")")
        #expect(r?.jsonObject?["saved"] == nil, "a durable choice is answered without \"saved\"")
        #expect(t.run { c.applied($0) })
    }

    /// A full disk refuses the choice through the pipeline as it did on the loop: 507 naming the
    /// error and what stays; nothing is applied. Another error is 500.
    @Test(arguments: [(ENOSPC, 507), (EDQUOT, 507), (EIO, 500)])
    func aChoiceWhoseCommitFailsIsRefusedAndNotApplied(_ code: Int32, _ status: Int) throws {
        let store = HeldStore([Daemon.sceneKey: "clock"])
        let t = try Self.start(store)
        defer { t.stop() }
        store.fail(code)
        let answer = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(.scene(name: "score")) { r in answer.withLock { $0 = r } } }
        #expect(waitFor(5) { answer.withLock { $0 } != nil })
        let r = answer.withLock { $0 }
        #expect(r?.status == status)
        let error = r?.jsonObject?["error"] as? String ?? ""
        #expect(error.hasPrefix("cannot save the choice of scene 'score': ") && error.contains(String(cString: strerror(code)))
                && error.hasSuffix("; the scene stays 'clock'"), "\(error)")
        #expect(t.run { $0.manager.current.name } == "clock")
        #expect(store.values[Daemon.sceneKey] == "clock")
        // The theme and the clock mode likewise.
        let theme = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(.theme(name: "dark")) { r in theme.withLock { $0 = r } } }
        #expect(waitFor(5) { theme.withLock { $0 } != nil })
        #expect(theme.withLock { $0 }?.status == status)
        #expect(t.run { $0.activeThemeName } != "dark")
        let mode = Mutex<ControlResponse?>(nil)
        t.daemon.post { d in d.handle(.clockMode(mode: "literal", scene: nil)) { r in mode.withLock { $0 = r } } }
        #expect(waitFor(5) { mode.withLock { $0 } != nil })
        #expect(mode.withLock { $0 }?.status == status)
        #expect((mode.withLock { $0 }?.jsonObject?["error"] as? String)?.hasSuffix("; the clock mode stays 'scaled'") == true)
    }

    /// Without durable state a choice is applied at once and says it is not kept.
    @Test func aVolatileChoiceIsAppliedAtOnceAndSaysItIsNotKept() throws {
        let t = try Self.start(MemoryStateStore(durability: .volatile))
        defer { t.stop() }
        let r = t.run { d -> ControlResponse? in
            var got: ControlResponse?
            d.handle(.scene(name: "score")) { got = $0 }
            return got
        }
        #expect(r?.status == 200)
        #expect(r?.jsonObject?["saved"] as? Bool == false)
        #expect((r?.jsonObject?["note"] as? String)?.hasPrefix("state = \"volatile\"") == true)
        #expect(t.run { $0.manager.current.name } == "score")
    }

    /// A swipe (or a key, or the rotation) changes the scene at once; its save is made on the
    /// pipeline's thread and the loop does not wait for it.
    @Test func aSwipesSaveDoesNotHoldTheLoop() throws {
        let store = HeldStore([Daemon.sceneKey: "clock"])
        let t = try Self.start(store)
        defer { store.release(); t.stop() }
        store.hold()
        t.daemon.post { d in d.manager.next() }
        #expect(store.entered.wait(timeout: .now() + 5) == .success, "the scene was not saved")
        #expect(Self.within(t, 2) { $0.manager.current.name } == "score", "the loop waited for the save")
        store.release()
        #expect(waitFor(5) { store.values[Daemon.sceneKey] == "score" })
    }
}
