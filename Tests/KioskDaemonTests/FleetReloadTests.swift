import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskRender
import KioskScenes
import KioskTesting
import KioskTestTraits
import Testing

/// Config reloads of a fleet's primary and follower between changes from touch, the control
/// socket and the group's command topic: two daemons with their command pipelines on one
/// virtual-time loop and a broker in memory; the test commits each pipeline batch itself.
@Suite(.ownThreads) struct FleetReloadTests {
    func values(_ rig: FleetRig, _ p: Daemon, _ f: Daemon) -> [Int?] { [rig.value(p), rig.get(p), rig.value(f), rig.get(f), rig.retained?.value] }

    @Test func reloadsOfPrimaryAndFollowerBetweenChangesFromEveryRoadShowAndAnswerTheGroupsValue() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        let answers = Answers()
        func expectAll(_ n: Int, _ step: String, sourceLocation: Testing.SourceLocation = #_sourceLocation) {
            let v = values(rig, p, f)
            #expect(v == [n, n, n, n, n], "\(step): primary shown/answered, follower shown/answered, retained: \(v); expected \(n)",
                    sourceLocation: sourceLocation)
        }

        // Before any reload: touch on the follower, the socket on the primary, a group command.
        try rig.tap(f); rig.socket(p, answers); rig.groupCommand()
        rig.settle()
        expectAll(3, "before any reload")
        #expect(answers.list.map(\.status) == [200])

        // The follower reloads; then touch and the socket on it, the socket on the primary, a group command.
        #expect(throws: Never.self) { try f.reload().get() }
        expectAll(3, "after the follower's reload")
        try rig.tap(f); rig.socket(f, answers); rig.socket(p, answers); rig.groupCommand()
        rig.settle()
        expectAll(7, "after the follower's reload and four changes")
        #expect(answers.list.map(\.status) == [200, 200, 200])

        // A change of the follower in flight (sent, the primary's state not back) while it reloads.
        rig.socket(f, answers)
        rig.loop.runPending()
        #expect(throws: Never.self) { try f.reload().get() }
        rig.settle()
        expectAll(8, "a follower's change in flight across its reload")
        #expect(try answers.list.last?.decode(CounterAnswer.self).value == 8, "answered \(answers.list.last.map { String(decoding: $0.body, as: UTF8.self) } ?? "nothing")")

        // The primary reloads with a change of its own waiting for its commit, and a group command in flight.
        rig.socket(p, answers)
        rig.groupCommand()
        rig.loop.runPending()
        #expect(throws: Never.self) { try p.reload().get() }
        rig.settle()
        expectAll(10, "the primary's reload with changes in flight")
        #expect(try answers.list.last?.decode(CounterAnswer.self).value == 9)
        try rig.tap(p); rig.socket(p, answers); try rig.tap(f); rig.socket(f, answers); rig.groupCommand()
        rig.settle()
        expectAll(15, "after the primary's reload and five changes")
        #expect(answers.list.count == 7 && answers.list.allSatisfy { $0.status == 200 }, "\(answers.list.map(\.status))")
        // In the rig's order: the group command reaches the primary first (11), then its tap (12)
        // and socket change (13), then the follower's tap (14) and socket change (15).
        let last = try answers.list.suffix(2).map { try $0.decode(CounterAnswer.self).value }
        #expect(last == [13, 15], "answered \(last)")

        // A counter that is not shared stays each kiosk's own after the reloads.
        rig.socket(p, answers)
        p.handle(.counter(name: "AWAY", op: .inc, value: nil)) { answers.list.append($0) }
        rig.settle()
        #expect(p.kioskState().counters.first { $0.name == "AWAY" }?.value == 1)
        #expect(f.kioskState().counters.first { $0.name == "AWAY" }?.value == 0)
        expectAll(16, "the last change")
        // What a restart reads: each kiosk's kept value is the group's.
        for d in [p, f] {
            #expect(d.state.load("counter.score.HOME") == "16", "\(d.config.mqtt?.id ?? "?") keeps \(d.state.load("counter.score.HOME") ?? "nothing")")
        }
    }

    /// The fleet holds no scene: its values go to the daemon's one way to the screen, resolved
    /// by counter name when they arrive, so that the scenes a reload made show them (the old
    /// ones, let go, do not).
    @Test func fleetValuesAfterAReloadReachTheNewScenesByName() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        func score(_ d: Daemon) throws -> CounterScene { try #require(d.allScenes.first { $0.name == "score" } as? CounterScene) }
        let before = try [score(p), score(f)]
        for d in [p, f] { #expect(throws: Never.self) { try d.reload().get() } }
        let after = try [score(p), score(f)]
        #expect(zip(before, after).allSatisfy { $0 !== $1 }, "a reload makes new scenes")

        // A group command: the primary shows its commit, the follower the primary's state.
        rig.groupCommand()
        rig.settle()
        #expect(after.map { try? $0.value(of: "HOME") } == [1, 1], "the new scenes (primary, follower)")
        #expect(before.map { try? $0.value(of: "HOME") } == [0, 0], "the scenes before the reload")
        #expect(values(rig, p, f) == [1, 1, 1, 1, 1])
    }
}
