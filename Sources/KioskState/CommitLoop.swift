import Dispatch
import FoundationEssentials
import KioskCore
import KioskPosix

#if canImport(Glibc)
import Glibc
#endif

/// The command pipeline's commit loop: batches are decided and committed as work posted to a
/// `KioskLoop` of the pipeline's own — in kioskd an epoll `EventLoop` run by the `kioskd-commit`
/// thread (`start()`), in a test a `ManualEventLoop` (`start(on:)`) that the test steps, so that
/// each commit happens at a step the test chooses, on the test's thread, without sleeping.
///
/// A submission posts one commit to the loop unless one is posted and not begun yet; the commit
/// takes everything queued by then as one batch, so changes that arrive while a batch is being
/// committed (its fsync in flight) make the next batch together: one post, one `saveBatch`.
extension CommandPipeline {
    /// Starts committing on an epoll `EventLoop` run by a thread of its own (`kioskd-commit`,
    /// what `top -H` shows). When the loop cannot be made (no file descriptors), every change is
    /// refused with the reason.
    public func start() {
        let loop: EventLoop
        do {
            loop = try EventLoop()
        } catch {
            logger.critical("cannot start the commit loop; every change is refused", metadata: ["error": "\(error)"])
            refuseAll(because: "the commit loop could not start (\(error))")
            return
        }
        shared.withLock { $0.ownThread = true }
        do {
            try NamedThread.detach(name: "kioskd-commit") { [self] in
                do { try loop.run() } catch {
                    logger.critical("the commit loop stopped", metadata: ["error": "\(error)"])
                }
                shared.withLock { $0.ownThread = false }
                ended.signal()
            }
        } catch {
            shared.withLock { $0.ownThread = false }
            logger.critical("cannot start the commit loop; every change is refused", metadata: ["error": "\(error)"])
            refuseAll(because: "the commit loop could not start (\(error))")
            return
        }
        start(on: loop)
    }

    /// Commits on `loop` (a test's `ManualEventLoop`: each step of it commits what was queued
    /// before the step, as one batch). What was submitted before is committed at its next turn.
    public func start(on loop: any KioskLoop) {
        shared.withLock { s in
            precondition(s.loop == nil, "CommandPipeline.start called twice")
            s.loop = loop
            if s.hasQueued { postCommit(&s) }
        }
    }

    /// The loop batches are committed on (nil before `start`).
    public var commitLoop: (any KioskLoop)? { shared.withLock { $0.loop } }

    /// Posts a commit of what is queued to the commit loop, unless one is posted and not begun
    /// (called with `shared` held: a `stop` cannot slip between the submission and its post).
    func postCommit(_ s: inout Shared) {
        guard !s.commitPosted, let loop = s.loop else { return }
        s.commitPosted = true
        loop.post { [self] in _ = commitQueued() }
    }

    /// Refuses every later submission at once ("kioskd is stopping"); what was submitted before
    /// is still committed and answered. With the `kioskd-commit` thread: waits (at most `timeout`
    /// seconds) until it has committed that and ended. On a test's loop: the test's next steps
    /// commit it.
    public func stop(timeout: Double = 5) {
        let waitForThread = shared.withLock { s -> Bool in
            guard s.refusal == nil else { return s.ownThread }
            s.refusal = "kioskd is stopping"
            guard s.ownThread, let loop = s.loop as? EventLoop else { return false }
            // After the commit already posted (the loop runs what is posted in order).
            loop.stop()
            return true
        }
        guard waitForThread else { return }
        // Passed on, for another `stop` waiting at the same time.
        if ended.wait(timeout: .now() + timeout) == .success { ended.signal() }
    }
}
