import Dispatch
import FoundationEssentials
import Glibc
import KioskCore
import KioskPosix
import Synchronization

/// A thread of its own (`name`, e.g. `kioskd-work`: what `top -H` shows) that carries out the
/// render loop's slow work in the order it was given — a screenshot's PNG encoding, a painting's
/// encoding, write and fsync, the config and theme files a reload reads — and posts each result
/// back to `loop`. The thread starts with the first work given.
///
/// Invariant: `then` runs on the loop's thread, after its work, in the order the work was given.
public final class WorkerThread: OffLoopWork, Sendable {
    public let name: String
    private let loop: any KioskLoop

    private struct State {
        var queue: [@Sendable () -> Void] = []
        var started = false
        var finishing = false
        var finished = false
    }
    private let state = Mutex(State())
    /// One signal per job queued, and one when finishing.
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    public init(name: String, loop: any KioskLoop) {
        self.name = name
        self.loop = loop
    }

    public func run<T: Sendable>(_ work: @escaping @Sendable () -> T, then: @escaping (T) -> Void) {
        let back = LoopBound(then, loop: loop)
        let job: @Sendable () -> Void = {
            let result = work()
            back.post { $0(result) }
        }
        // nil: finishing, so carried out here; otherwise whether the thread must be started.
        let start: Bool? = state.withLock { s in
            if s.finishing { return nil }
            s.queue.append(job)
            defer { s.started = true }
            return !s.started
        }
        guard let start else {
            then(work())
            return
        }
        if start { startThread() }
        wake.signal()
    }

    /// Work given and not finished yet.
    public var pending: Int { state.withLock { $0.queue.count } }

    public func finish(timeout: Double) {
        let started = state.withLock { s -> Bool in
            s.finishing = true
            return s.started && !s.finished
        }
        guard started else { return }
        wake.signal()
        _ = ended.wait(timeout: .now() + timeout)
    }

    private func startThread() {
        do {
            try NamedThread.detach(name: name) { [self] in serve() }
        } catch {
            // No thread: the work given so far and all later work is carried out by its giver,
            // as when finishing.
            let queued = state.withLock { s -> [@Sendable () -> Void] in
                s.finishing = true
                s.finished = true
                defer { s.queue = [] }
                return s.queue
            }
            for job in queued { job() }
        }
    }

    /// The thread: each job in turn, until `finish` finds the queue empty.
    private func serve() {
        while true {
            wake.wait()
            let job = state.withLock { s -> (@Sendable () -> Void)? in
                s.queue.isEmpty ? nil : s.queue.removeFirst()
            }
            if let job {
                job()
                continue
            }
            // Woken with nothing queued: only `finish` does that.
            let done = state.withLock { s -> Bool in
                guard s.finishing && s.queue.isEmpty else { return false }
                s.finished = true
                return true
            }
            if done { break }
        }
        ended.signal()
    }
}
