import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
import KioskRender
import KioskScenes
import KioskTesting
import KioskTestTraits
import Synchronization
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

    /// An MQTT command on a kiosk's own topics with an id (a Home Assistant button's press) is
    /// applied once however often the broker delivers it (QoS 1 redelivers after a broker
    /// restart); without an id each delivery is a change.
    @Test func anMQTTChangeWithAnIDIsAppliedOnceHoweverOftenItIsDelivered() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        // The statuses answered (on the loop or the pipeline's thread: the test drives both).
        let statuses = Mutex<[Int]>([])
        func deliver(_ d: Daemon, _ payload: String) throws {
            let id = try MQTTBridge.changeID(Array(payload.utf8), topic: "counter/HOME/inc").get()
            try #require(d.intake).submit("HOME", .increment, id: id, answerOn: .decided) { answer in statuses.withLock { $0.append(answer.status) } }
        }
        // On the follower: twice before the primary answers, once more after.
        try deliver(f, #"{"id": "press-1"}"#)
        try deliver(f, #"{"id": "press-1"}"#)
        rig.settle()
        try deliver(f, #"{"id": "press-1"}"#)
        rig.settle()
        #expect(value(p, "HOME") == 1 && value(f, "HOME") == 1)
        // On the primary, the same id is another press (each kiosk's ids are its own).
        try deliver(p, #"{"id": "press-1"}"#)
        try deliver(p, #"{"id": "press-1"}"#)
        rig.settle()
        #expect(value(p, "HOME") == 2 && value(f, "HOME") == 2)
        // Without an id, every delivery counts.
        try deliver(f, "PRESS")
        try deliver(f, "PRESS")
        rig.settle()
        #expect(value(p, "HOME") == 4 && value(f, "HOME") == 4)
        let answered = statuses.withLock { $0 }
        #expect(answered.allSatisfy { $0 == 200 || $0 == 202 } && answered.filter { $0 == 200 }.count == 6, "\(answered)")
    }

    @Test func anMQTTChangeIDIsReadFromAJSONObjectOnly() throws {
        func id(_ payload: String, _ topic: String = "counter/HOME/inc") -> Result<String?, MQTTBridge.CommandError> {
            MQTTBridge.changeID(Array(payload.utf8), topic: topic)
        }
        #expect(try id(#"{"id": "press-1"}"#).get() == "press-1")
        #expect(try id("PRESS").get() == nil)
        #expect(try id("").get() == nil)
        #expect(try id(#"{"other": 1}"#).get() == nil)
        #expect(try id(#"{"id": "x"}"#, "counter/HOME/set").get() == nil, "a set's payload is its value")
        guard case .failure(let long) = id(#"{"id": "\#(String(repeating: "a", count: 33))"}"#) else { Issue.record("a 33-byte id was taken"); return }
        #expect(long.message.hasPrefix("counter/HOME/inc: field 'id' must be a string of 1 to 32 bytes"))
        guard case .failure(let bad) = id("{not json") else { Issue.record("a broken object was taken"); return }
        #expect(bad.message.hasPrefix("counter/HOME/inc: the payload is not a JSON object"))
        guard case .failure(let number) = id(#"{"id": 7}"#) else { Issue.record("a number was taken as an id"); return }
        #expect(number.message.contains("got a number (7);"), "the value named with its JSON type")
    }
}
