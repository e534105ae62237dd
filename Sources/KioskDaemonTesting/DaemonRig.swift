import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskDaemon
import KioskPosix
import KioskState
import KioskTesting
import Logging
import Testing

/// The one way tests make and start a daemon: as kioskd does (`DaemonRunner`), with its command
/// pipeline started, so that every change a test makes takes the road production takes — the
/// one entrance, the pipeline, a shown message. On the epoll `EventLoop` or, where the test
/// wants virtual time, on a `ManualEventLoop`; the pipeline's commit loop is then a
/// `ManualEventLoop` too, stepped by the test (`step`, `answer`, `commitBatches`).
public enum DaemonRig {
    /// A daemon of the config `text` (written to `dir/kioskd.toml`), made as kioskd makes it:
    /// its state through `DaemonRunner.makeState` unless `state` is given, its displays and input
    /// as the config says (`DaemonRunner.makeDaemon`). Not started (`startAsKioskd`). `time`:
    /// the scenes' clock (a `ManualEventLoop` for virtual time throughout; default the system's).
    public static func make(_ text: String, in dir: String, state: StateStore? = nil, loop: (any KioskLoop)? = nil,
                            time: TimeSource? = nil, logger: Logger) throws -> Daemon {
        let path = "\(dir)/kioskd.toml"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        let config = try DaemonConfig.load(path: path, environment: [:])
        let store = try state ?? DaemonRunner.makeState(config, logger: logger)
        let loop = try loop ?? EventLoop()
        return try DaemonRunner.makeDaemon(config: config, state: store, loop: loop, time: time ?? SystemTimeSource(), logger: logger)
    }

    /// `make`, then `startAsKioskd` and one `step` (the first frame drawn).
    public static func start(_ text: String, in dir: String, state: StateStore? = nil, loop: (any KioskLoop)? = nil,
                             time: TimeSource? = nil, logger: Logger) throws -> Daemon {
        let daemon = try make(text, in: dir, state: state, loop: loop, time: time, logger: logger)
        daemon.startAsKioskd()
        try daemon.step()
        return daemon
    }
}

extension Daemon {
    /// Starts the daemon as kioskd's render loop does (`DaemonRunner`): `start()`, then the
    /// command pipeline, then the components (`add`: the web's, MQTT's). `committedByTest`: the pipeline commits on a `ManualEventLoop` that the
    /// test steps (`step`, `answer`, `commitBatches`) — virtual time, one thread; false: on its
    /// own thread, as in kioskd (for a daemon whose loop runs on a thread of its own).
    public func startAsKioskd(committedByTest: Bool = true) {
        start()
        startPipeline(commitLoop: committedByTest ? ManualEventLoop() : nil)
        startComponents()
    }

    /// Steps the pipeline's commit loop when the test drives it (`startAsKioskd`): every batch
    /// queued is committed, and the answers and values are posted to the daemon's loop. Returns
    /// how many commits ran (0: nothing was queued, or the pipeline commits on its own thread).
    @discardableResult
    public func commitBatches() -> Int {
        (pipeline.commitLoop as? ManualEventLoop)?.runPending() ?? 0
    }

    /// One step: every batch the pipeline holds committed (when the test steps its commit loop),
    /// then one iteration of the loop (what was posted and deferred: the answers and the values
    /// shown), without moving a virtual clock. `waitMs`: how long the epoll loop may wait for
    /// something to happen (an answer from the pipeline's thread).
    public func step(waitMs: Int32 = 0) throws {
        commitBatches()
        if let manual = loop as? ManualEventLoop {
            manual.step()
        } else if let epoll = eventLoop {
            try epoll.runOnce(timeoutMs: waitMs)
        }
    }

    /// `handle(_:reply:)` — the road of every transport — driven to its answer on the calling
    /// thread, which runs the daemon's loop: steps until the answer came (work on the daemon's
    /// worker threads — a theme read, a screenshot — is waited for); fails the test when none
    /// came within 10 s.
    public func answer(_ command: ControlCommand, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> ControlResponse {
        var answer: ControlResponse?
        handle(command) { answer = $0 }
        let until = nowNanos(.monotonic) + 10_000_000_000
        while answer == nil && nowNanos(.monotonic) < until {
            try step(waitMs: 5)
            if answer == nil, loop is ManualEventLoop { usleep(1000) }
        }
        return try #require(answer, "no answer to \(command) within 10 s", sourceLocation: sourceLocation)
    }

    /// The value of a counter as the daemon answers it (`kioskctl counter NAME get`).
    public func counterValue(_ name: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) throws -> Int? {
        try answer(.counter(name: name, op: .get, value: nil), sourceLocation: sourceLocation).jsonObject?["value"] as? Int
    }
}
