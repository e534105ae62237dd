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

/// The fleet wired into daemons: a primary and a follower on one loop and a broker in memory.
@Suite(.ownThreads) struct FleetDaemonTests {
    func daemon(_ dir: String, role: FleetSettings.Role, loop: ManualEventLoop) throws -> Daemon {
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [scene.score]
        kind = "counter"
        digits = 2
        min = 1
        roll_ms = 0
        [[scene.score.counter]]
        name = "HOME"
        [[scene.score.counter]]
        name = "AWAY"
        """, dir)
        var config = try DaemonConfig.load(path: path, environment: [:])
        var fleet = FleetSettings(group: "hall", role: role)
        fleet.counters = ["HOME"]
        config.fleet = fleet
        return try Daemon(config: config, display: try HeadlessDisplay(size: Size(width: 64, height: 48)), input: nil,
                          state: MemoryStateStore(), loop: loop, time: loop, logger: quietLogger)
    }

    func value(_ d: Daemon, _ name: String) -> Int? { d.kioskState().counters.first { $0.name == name }?.value }

    @Test func controlTouchAndTheOfflineMarkGoThroughTheFleet() throws {
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let broker = FakeFleetBroker()
        let p = try daemon(tempDir(), role: .primary, loop: loop)
        let f = try daemon(tempDir(), role: .follower, loop: loop)
        let pt = FakeFleetTransport(broker), ft = FakeFleetTransport(broker)
        pt.connected = true
        p.start(); f.start()
        try p.startFleet(transport: pt, kioskID: "p")
        try f.startFleet(transport: ft, kioskID: "f")
        #expect(f.manager.stateWarning == "offline")
        ft.setConnected(true)
        #expect(f.manager.stateWarning == nil)
        broker.deliver()

        // kioskctl on the follower: answered only when the primary's state is back.
        var answers: [ControlResponse] = []
        f.handle(.counter(name: "HOME", op: .inc, value: nil)) { answers.append($0) }
        loop.step() // taken at the end of the iteration
        #expect(answers.isEmpty && value(f, "HOME") == 1)
        broker.deliver()
        #expect(answers.map(\.status) == [200])
        #expect(try answers.first?.decode(CounterAnswer.self) == CounterAnswer(counter: "HOME", value: 2))
        #expect(value(p, "HOME") == 2 && value(f, "HOME") == 2)

        // A counter that is not shared changes locally at once.
        f.handle(.counter(name: "AWAY", op: .inc, value: nil)) { answers.append($0) }
        #expect(answers.map(\.status) == [200, 200] && value(f, "AWAY") == 2 && value(p, "AWAY") == 1)

        // A tap on the follower's HOME goes to the primary; nothing changes before it answers.
        let scene = try #require(f.manager.scenes.first as? CounterScene)
        #expect(scene.handle(.gesture(.tap(x: 0.25, y: 0.5)), now: f.manager.time.now()) == false)
        #expect(value(f, "HOME") == 2)
        broker.deliver()
        #expect(value(p, "HOME") == 3 && value(f, "HOME") == 3)

        // Broker lost: the mark is shown, and the screen differs there until it is back.
        loop.step()
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
        _ = p.handle(.counter(name: "AWAY", op: .inc, value: nil))
        p.manager.renderIfPossible()
        #expect(try p.manager.screenshotPNG() == online)
    }

    @Test func twoPrimariesShowTheMarkAndTheStatusWarning() throws {
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let broker = FakeFleetBroker()
        let a = try daemon(tempDir(), role: .primary, loop: loop)
        let b = try daemon(tempDir(), role: .primary, loop: loop)
        let at = FakeFleetTransport(broker), bt = FakeFleetTransport(broker)
        at.connected = true
        bt.connected = true
        a.start(); b.start()
        try a.startFleet(transport: at, kioskID: "a")
        a.manager.renderIfPossible()
        let alone = try a.manager.screenshotPNG()
        #expect(a.status().warnings == nil && a.kioskState().fleetWarning == nil)
        try b.startFleet(transport: bt, kioskID: "b")
        broker.deliver()
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
        loop.step()
        #expect(answers.map(\.status) == [409] && value(a, "HOME") == 1)
        // Offline too: both marks.
        at.setConnected(false)
        #expect(a.manager.stateWarning == "offline · two primaries")
    }
}
