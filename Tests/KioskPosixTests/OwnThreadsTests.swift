import Foundation
import KioskTestTraits
import Testing

/// `.ownThreads` takes a suite's bodies off Swift's cooperative pool (the process-wide pool
/// that in-process servers' async handlers need); without it they run on the pool.
@Suite(.ownThreads) struct OwnThreadsTests {
    @Test func synchronousBodiesRunOnThreadsOfTheirOwn() {
        #expect(ThreadPerJobExecutor.onOwnThread)
    }

    @Test func asynchronousBodiesToo() async throws {
        #expect(ThreadPerJobExecutor.onOwnThread)
        try await Task.sleep(nanoseconds: 1_000_000)
        #expect(ThreadPerJobExecutor.onOwnThread)
    }

    @Test(arguments: [1, 2]) func everyCaseOfAParameterisedTest(_ n: Int) {
        #expect(ThreadPerJobExecutor.onOwnThread, "case \(n)")
    }
}

@Suite struct PoolThreadsTests {
    @Test func withoutTheTraitBodiesRunOnThePool() {
        #expect(!ThreadPerJobExecutor.onOwnThread)
    }
}
