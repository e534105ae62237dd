import Foundation
import KioskCore
@testable import KioskDaemon
import KioskPosix
import KioskState
import KioskTestTraits
import Logging
import Synchronization
import Testing

/// kioskd's threads carry their names where `top -H` and /proc/PID/task/TID/comm show them: each
/// test reads the name from inside work that runs on the thread.
@Suite(.ownThreads) struct ThreadNameTests {
    /// The calling thread's name as /proc shows it.
    static func ownName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
    }

    @Test func commitThreadIsNamedKioskdCommit() throws {
        let seen = Mutex<String?>(nil)
        let store = CommandPipelineTests.HeldBatchStore { seen.withLock { if $0 == nil { $0 = ThreadNameTests.ownName() } } }
        let pipeline = CommandPipeline(store: store, logger: Logger(label: "test")) { $0() }
        pipeline.start()
        let answered = DispatchSemaphore(value: 0)
        pipeline.submitWrites([("daemon.scene", "paint")], delivery: .here) { _ in answered.signal() }
        #expect(answered.wait(timeout: .now() + 10) == .success)
        pipeline.stop()
        #expect(seen.withLock { $0 } == "kioskd-commit")
        #expect(store.load("daemon.scene") == "paint")
    }

    @Test func workerThreadsCarryTheirNames() throws {
        let loop = try EventLoop()
        let ran = DispatchSemaphore(value: 0)
        try NamedThread.detach(name: "kiosk-test-loop") { try? loop.run(); ran.signal() }
        let work = WorkerThread(name: "kioskd-work", loop: loop)
        let save = WorkerThread(name: "kioskd-save", loop: loop)
        let names = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        loop.post {
            for worker in [work, save] {
                worker.run({ ThreadNameTests.ownName() }, then: { name in
                    names.withLock { $0.append(name) }
                    done.signal()
                })
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success && done.wait(timeout: .now() + 10) == .success)
        work.finish(timeout: 5)
        save.finish(timeout: 5)
        loop.post { loop.stop() }
        #expect(ran.wait(timeout: .now() + 10) == .success)
        #expect(names.withLock { $0.sorted() } == ["kioskd-save", "kioskd-work"])
    }
}
