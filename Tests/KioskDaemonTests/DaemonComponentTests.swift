import Foundation
import KioskComponent
import KioskControl
import KioskCore
import KioskDaemon
import KioskDaemonTesting
import Synchronization
import Testing

/// The daemon's components: started after the pipeline in the order added, with a context that
/// reaches the daemon; stopped in reverse; the corner warning merged by its one writer.
struct DaemonComponentTests {
    /// Notes what the daemon does to it in `log`; `fail`: its start throws.
    final class Probe: DaemonComponent {
        let componentName: String
        let fail: Bool
        var log: (String) -> Void
        var context: ComponentContext?
        init(_ name: String, fail: Bool = false, log: @escaping (String) -> Void) {
            componentName = name
            self.fail = fail
            self.log = log
        }
        func start(context: ComponentContext) throws {
            if fail { throw KioskError.config("\(componentName) cannot start") }
            self.context = context
            log("start \(componentName)")
        }
        func stop(then done: @escaping () -> Void) {
            log("stop \(componentName)")
            done()
        }
    }

    private func config(_ d: String) -> String {
        """
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scene.score]
        kind = "counter"
        digits = 2
        [[scene.score.counter]]
        name = "HOME"
        """
    }

    @Test func startedAfterThePipelineInOrderAndStoppedInReverse() throws {
        let d = tempDir()
        var log: [String] = []
        let daemon = try DaemonRig.make(config(d), in: d, logger: quietLogger)
        let a = Probe("a") { log.append($0) }, broken = Probe("broken", fail: true) { log.append($0) }, b = Probe("b") { log.append($0) }
        daemon.add(a)
        daemon.add(broken)
        daemon.add(b)
        #expect(log.isEmpty, "nothing starts before the daemon does")
        daemon.startAsKioskd()
        #expect(log == ["start a", "start b"])
        #expect(daemon.components.map(\.componentName) == ["a", "b"], "one that cannot start is left out")
        let late = Probe("late") { log.append($0) }
        daemon.add(late)
        #expect(log.last == "start late", "added after the start: started at once")
        var stopped = false
        daemon.stopComponents { stopped = true }
        #expect(stopped)
        #expect(log.suffix(3) == ["stop late", "stop b", "stop a"])
    }

    @Test func theContextReachesTheDaemon() throws {
        let d = tempDir()
        let daemon = try DaemonRig.make(config(d), in: d, logger: quietLogger)
        let probe = Probe("probe") { _ in }
        daemon.add(probe)
        daemon.startAsKioskd()
        try daemon.step()
        let context = try #require(probe.context)
        // A counter change through the one entrance, answered once the pipeline committed it.
        let answer = Mutex<ControlResponse?>(nil)
        context.submit("HOME", .increment, nil) { r in answer.withLock { $0 = r } }
        for _ in 0..<20 where answer.withLock({ $0 }) == nil { try daemon.step() }
        #expect(answer.withLock { $0 }?.status == 200)
        try daemon.step()
        #expect(context.kioskState()?.counters.first { $0.name == "HOME" }?.value == 1)
        #expect(daemon.state.load("counter.score.HOME") == "1")
        // Any other command, answered on the loop.
        var scene: ControlResponse?
        context.handle(.status) { scene = $0 }
        #expect(scene?.status == 200)
        #expect(context.status()?.scene == "score")
        // The corner: a component's text merged after the state's, on every output.
        context.corner.set(.fleetOffline, "offline")
        #expect(daemon.manager.stateWarning == "offline")
        daemon.corner.set(.state, "state not saved")
        #expect(daemon.manager.stateWarning == "state not saved · offline")
        context.corner.set(.fleetOffline, nil)
        #expect(daemon.manager.stateWarning == "state not saved")
    }
}
