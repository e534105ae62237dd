import Foundation
import Testing

/// Runs every job on a new thread of its own. Jobs of one task still run one after another
/// (a task enqueues its next job only when the last one suspends or ends), so a test body runs
/// as before; only its thread is no longer one of Swift's cooperative pool.
public final class ThreadPerJobExecutor: TaskExecutor {
    public static let shared = ThreadPerJobExecutor()
    private static let marker = "kiosk.ownThread"

    /// Whether the calling code runs on one of this executor's threads.
    public static var onOwnThread: Bool { Thread.current.threadDictionary[marker] != nil }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread {
            Thread.current.threadDictionary[Self.marker] = true
            job.runSynchronously(on: executor)
        }.start()
    }
}

/// For suites whose tests block their thread: sleeps, polls, waits on child processes and
/// sockets. The whole test binary shares Swift's cooperative pool, which has one thread per
/// core (two on CI). Two such tests blocking it starve every in-process server whose request
/// handlers are async code (the web page, service lifecycle), and their tests then time out
/// for no fault of the code under test. With this trait the suite's test bodies run on
/// threads of their own (`ThreadPerJobExecutor`) and leave the pool to async code.
///
/// At most one such test per core runs at once, as many as the pool allowed before: these
/// tests start processes and measure waits, and the machine's load stays what their timings
/// were written for. A test waiting for its turn is suspended, not blocking a thread.
public struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }
    private static let turns = Turns(ProcessInfo.processInfo.activeProcessorCount)

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        await Self.turns.take()
        do {
            try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) {
                try await function()
            }
        } catch {
            await Self.turns.give()
            throw error
        }
        await Self.turns.give()
    }
}

/// A counting semaphore for async code: `take` suspends until a turn is free.
actor Turns {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = max(1, count) }

    func take() async {
        if free > 0 { free -= 1; return }
        await withCheckedContinuation { waiting.append($0) }
    }

    func give() {
        if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// Runs the suite's (or test's) bodies off Swift's cooperative pool; see `OwnThreadsTrait`.
    public static var ownThreads: Self { OwnThreadsTrait() }
}
