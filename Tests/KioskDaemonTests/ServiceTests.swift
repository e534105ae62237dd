import Foundation
import KioskControl
import KioskCore
import KioskState
import KioskHTTP
import KioskTesting
@testable import KioskDaemon
import KioskPosix
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle
import KioskTestTraits
import Testing

@Suite(.ownThreads) struct ServiceShutdownTests {
    /// Runs the render loop and control server as a ServiceGroup; once the first frame is on
    /// screen and the socket is in place runs `body`, then stops the group and returns how long
    /// the stop took.
    func runGroup(_ daemon: Daemon, graceSeconds: Int, logger: Logger = quietLogger,
                  _ body: @escaping @Sendable (LoopBound<Daemon>) async throws -> Void) async throws -> Double {
        var limits = ControlLimits()
        limits.requestTimeout = .seconds(2)
        let server = DaemonRunner.makeControlServer(settings: daemon.config.control, limits: limits, daemon: daemon, logger: logger)
        let ready = NIOLockedValueBox(false)
        daemon.onReady = { ready.withLockedValue { $0 = true } }
        let socket = daemon.config.control.socketPath
        let bound = LoopBound(daemon, loop: daemon.loop)
        var config = ServiceGroupConfiguration(services: [
            .init(service: RenderLoopService(daemon: daemon, notifier: SystemdNotifier(logger: quietLogger), logger: logger)),
            .init(service: ControlServerService(server: server)),
        ], logger: logger)
        config.maximumGracefulShutdownDuration = .seconds(graceSeconds)
        let group = ServiceGroup(configuration: config)
        async let run: Void = group.run()
        // The first frame (READY=1) and the socket: bounded waits that fail the test (generous:
        // the services start on the shared concurrency pool, which other tests may keep busy).
        let drawn = try await eventually(seconds: 60) { ready.withLockedValue { $0 } }
        try #require(drawn, "no first frame within 60 s")
        let listening = try await eventually(seconds: 30) { FileManager.default.fileExists(atPath: socket) }
        try #require(listening, "no control socket at \(socket) within 30 s")
        try await body(bound)
        let t0 = Date()
        await group.triggerGracefulShutdown()
        try await run
        return Date().timeIntervalSince(t0)
    }

    @Test func gracefulStopShutsDownDisplayAndRemovesSocket() async throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        let logs = CapturedLog(level: .debug)
        // The bound is far above the stop's own time: what is checked is that nothing waited
        // one out (the logs), not the wall-clock time of a busy test machine.
        let took = try await runGroup(daemon, graceSeconds: 30, logger: logs.logger) { _ in
            let r = try ControlClient(socketPath: "\(d)/c.sock", timeout: 5).send(method: .POST, path: "/counter/HOME/inc")
            #expect(r.jsonObject?["value"] as? Int == 1)
        }
        // Nothing waited out a bound: no request was left to drain, the loop stopped by itself.
        #expect(!logs.all.contains { $0.contains("control requests unfinished at stop") }, "\(logs.all)")
        #expect(!logs.all.contains { $0.contains("render loop did not stop in time") }, "\(logs.all)")
        #expect(took < 30, "stopped in \(took) s")
        #expect(daemon.display.logicalSize == nil, "display shut down (headless: disconnected)")
        #expect(!FileManager.default.fileExists(atPath: "\(d)/c.sock"))
        // The acknowledged change is on disk.
        let again = try FileStateStore(directory: "\(d)/state", logger: quietLogger)
        #expect(again.load("counter.score.HOME") == "1")
    }

    @Test func hungRenderLoopDoesNotHoldTheStopPastTheBound() async throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        let logs = CapturedLog(level: .debug)
        let release = DispatchSemaphore(value: 0)
        let took = try await runGroup(daemon, graceSeconds: 1, logger: logs.logger) { daemon in
            // The loop hangs (as a stuck driver call would) until the test releases it.
            let hung = NIOLockedValueBox(false)
            daemon.loop.post {
                hung.withLockedValue { $0 = true }
                _ = release.wait(timeout: .now() + 60)
            }
            let entered = try await eventually(seconds: 5) { hung.withLockedValue { $0 } }
            #expect(entered, "the loop did not pick up the hanging work")
        }
        release.signal()
        #expect(took < 30, "the group gave up waiting after its 1 s bound instead of the 60 s hang (took \(took) s)")
        #expect(logs.all.contains { $0.contains("render loop did not stop in time") }, "\(logs.all)")
    }
}

/// Polls `condition` every 10 ms (without blocking a thread) for at most `seconds`; returns its last value.
func eventually(seconds: Double, _ condition: @Sendable () -> Bool) async throws -> Bool {
    let end = Date().addingTimeInterval(seconds)
    while Date() < end {
        if condition() { return true }
        try await Task.sleep(nanoseconds: 10_000_000)
    }
    return condition()
}
