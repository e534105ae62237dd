import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import Logging
import ServiceLifecycle
import Testing

@Suite struct ServiceShutdownTests {
    /// Runs the render loop and control server as a ServiceGroup; returns after `body` and the group's end.
    func runGroup(_ daemon: Daemon, graceSeconds: Int, _ body: @escaping @Sendable (ServiceGroup) async throws -> Void) async throws -> Double {
        var limits = ControlLimits()
        limits.requestTimeout = .seconds(2)
        let server = DaemonRunner.makeControlServer(settings: daemon.config.control, limits: limits, daemon: daemon, logger: quietLogger)
        var config = ServiceGroupConfiguration(services: [
            .init(service: RenderLoopService(daemon: daemon, notifier: SystemdNotifier(logger: quietLogger), logger: quietLogger)),
            .init(service: ControlServerService(server: server)),
        ], logger: quietLogger)
        config.maximumGracefulShutdownDuration = .seconds(graceSeconds)
        let group = ServiceGroup(configuration: config)
        async let run: Void = group.run()
        try await body(group)
        let t0 = Date()
        await group.triggerGracefulShutdown()
        try? await run
        return Date().timeIntervalSince(t0)
    }

    func waitForFirstFrame(_ daemon: Daemon) async throws {
        for _ in 0..<200 where !FileManager.default.fileExists(atPath: daemon.config.control.socketPath) || daemon.manager.frameCount == 0 {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    @Test func gracefulStopShutsDownDisplayAndRemovesSocket() async throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        let took = try await runGroup(daemon, graceSeconds: 5) { _ in
            try await self.waitForFirstFrame(daemon)
            let r = try ControlClient(socketPath: "\(d)/c.sock", timeout: 5).send(method: .POST, path: "/counter/HOME/inc")
            #expect(r.jsonObject?["value"] as? Int == 1)
        }
        #expect(took < 3, "stopped in \(took) s")
        #expect(daemon.display.logicalSize == nil, "display shut down (headless: disconnected)")
        #expect(!FileManager.default.fileExists(atPath: "\(d)/c.sock"))
        // The acknowledged change is on disk.
        let again = try FileStateStore(directory: "\(d)/state", logger: quietLogger)
        #expect(again.load("counter.score.HOME") == "1")
    }

    @Test func hungRenderLoopDoesNotHoldTheStopPastTheBound() async throws {
        let d = tempDir()
        let daemon = try makeDaemon(d)
        let took = try await runGroup(daemon, graceSeconds: 1) { _ in
            try await self.waitForFirstFrame(daemon)
            // The loop hangs for 10 s (as a stuck driver call would).
            daemon.loop.post { sleep(10) }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(took < 6, "the group gave up waiting after its 1 s bound instead of the 10 s hang (took \(took) s)")
    }
}
