import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskFleet
import KioskTesting
import KioskTestTraits
import Testing

/// The fleet as one of the daemon's components (`FleetComponent`): started with the others'
/// context, stopped with them, and refusing to start without the daemon's counters.
@Suite(.ownThreads) struct FleetComponentTests {
    @Test func theFleetIsAComponentStoppedWithTheOthersAnsweringWhatWaits() throws {
        let rig = FleetRig()
        let f = try rig.daemon(role: .follower, id: "f", connected: false)
        #expect(f.components.map(\.componentName).contains("fleet"))
        #expect(f.fleet?.kioskID == "f")
        // A change waiting for the primary (the broker is out of reach) is answered "pending" when
        // the components stop, not left hanging.
        var answers: [ControlResponse] = []
        f.handle(.counter(name: "HOME", op: .inc, value: nil)) { answers.append($0) }
        rig.loop.step()
        #expect(answers.isEmpty && f.fleet?.pendingCount == 1)
        var stopped = false
        f.stopComponents { stopped = true }
        #expect(stopped)
        #expect(answers.map(\.status) == [202])
    }

    @Test func withoutTheDaemonsCountersTheFleetDoesNotStartAndSaysWhatIsMissing() throws {
        let rig = FleetRig()
        let d = try rig.daemon(role: .primary, id: "p", joins: false)
        let full = d.componentContext()
        let bare = ComponentContext(loop: full.loop, logger: full.logger, submit: full.submit, handle: full.handle, changes: full.changes,
                                    kioskState: full.kioskState, status: full.status, warnings: full.warnings,
                                    displayDescription: full.displayDescription, outputs: full.outputs,
                                    themeDirectory: full.themeDirectory, corner: full.corner)
        let fleet = try #require(d.config.fleet)
        let c = FleetComponent(settings: fleet, kioskID: "p", transport: try #require(rig.transports["p"]))
        let e = #expect(throws: KioskError.self) { try c.start(context: bare) }
        #expect(e?.message.contains("ComponentContext.sharedCounters") == true)
        #expect(c.engine == nil)
        // With them it starts: the shared counter is the engine's.
        try c.start(context: full)
        #expect(c.engine?.sharedCounters == ["HOME"])
    }
}
