import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
import KioskRender
import KioskScenes
import KioskTesting
import KioskTestTraits
import Testing

/// The fleet wired into daemons as kioskd runs them (`FleetRig`: the command pipeline started,
/// a broker in memory, virtual time): a primary and a follower.
@Suite(.ownThreads) struct FleetDaemonTests {
    func value(_ d: Daemon, _ name: String) -> Int? { d.kioskState().counters.first { $0.name == name }?.value }

    @Test func controlTouchAndTheOfflineMarkGoThroughTheFleet() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p", minimum: 1)
        let f = try rig.daemon(role: .follower, id: "f", minimum: 1, connected: false)
        let ft = try #require(rig.transports["f"])
        #expect(f.manager.stateWarning == "offline")
        ft.setConnected(true)
        #expect(f.manager.stateWarning == nil)
        rig.settle()

        // kioskctl on the follower: answered only when the primary's state is back.
        var answers: [ControlResponse] = []
        f.handle(.counter(name: "HOME", op: .inc, value: nil)) { answers.append($0) }
        rig.loop.step() // sent to the primary
        #expect(answers.isEmpty && value(f, "HOME") == 1)
        rig.settle()
        #expect(answers.map(\.status) == [200])
        #expect(try answers.first?.decode(CounterAnswer.self) == CounterAnswer(counter: "HOME", value: 2))
        #expect(value(p, "HOME") == 2 && value(f, "HOME") == 2)

        // A counter that is not shared changes locally, once its batch is committed.
        f.handle(.counter(name: "AWAY", op: .inc, value: nil)) { answers.append($0) }
        rig.settle()
        #expect(answers.map(\.status) == [200, 200] && value(f, "AWAY") == 2 && value(p, "AWAY") == 1)

        // A tap on the follower's HOME goes to the primary; nothing changes before it answers.
        let scene = try #require(f.manager.scenes.first as? CounterScene)
        #expect(scene.handle(.gesture(.tap(x: 0.25, y: 0.5)), now: f.manager.time.now()) == false)
        #expect(value(f, "HOME") == 2)
        rig.settle()
        #expect(value(p, "HOME") == 3 && value(f, "HOME") == 3)

        // Broker lost: the mark is shown, and the screen differs there until it is back.
        rig.loop.step()
        p.manager.renderIfPossible(); f.manager.renderIfPossible()
        let online = try f.manager.screenshotPNG()
        ft.setConnected(false)
        #expect(f.manager.stateWarning == "offline")
        f.manager.renderIfPossible()
        #expect(try f.manager.screenshotPNG() != online)
        ft.setConnected(true)
        #expect(f.manager.stateWarning == nil)
        f.manager.renderIfPossible()
        #expect(try f.manager.screenshotPNG() == online)
        // Primary and follower show the same pixels for the same values.
        p.handle(.counter(name: "AWAY", op: .inc, value: nil)) { answers.append($0) }
        rig.settle()
        p.manager.renderIfPossible()
        #expect(try p.manager.screenshotPNG() == online)
    }

    @Test func twoPrimariesShowTheMarkAndTheStatusWarning() throws {
        let rig = FleetRig()
        let a = try rig.daemon(role: .primary, id: "a", minimum: 1)
        let b = try rig.daemon(role: .primary, id: "b", minimum: 1, joins: false)
        a.manager.renderIfPossible()
        let alone = try a.manager.screenshotPNG()
        #expect(a.status().warnings == nil && a.kioskState().fleetWarning == nil)
        try rig.joinFleet(b)
        rig.broker.deliver()
        for (d, other) in [(a, "b"), (b, "a")] {
            #expect(d.manager.stateWarning == "two primaries")
            let warnings = d.status().warnings ?? []
            #expect(warnings.count == 1 && warnings[0].hasPrefix("two primaries in fleet group 'hall': \(other) and "), "\(warnings)")
            #expect(d.kioskState().fleetWarning == warnings.first)
        }
        a.manager.renderIfPossible()
        #expect(try a.manager.screenshotPNG() != alone, "the mark is not on screen")
        var answers: [ControlResponse] = []
        a.handle(.counter(name: "HOME", op: .inc, value: nil)) { answers.append($0) }
        rig.loop.step()
        #expect(answers.map(\.status) == [409] && value(a, "HOME") == 1)
        // Offline too: both marks.
        try #require(rig.transports["a"]).setConnected(false)
        #expect(a.manager.stateWarning == "offline · two primaries")
    }
}
