import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskScenes
import KioskState
import KioskTesting
import Testing

/// Forged and foreign fleet states, and two primaries in one group.
@Suite struct FleetTrustTests {
    let stateTopic = "kioskd/group/hall/counter/HOME"

    func forge(_ broker: FakeFleetBroker, value: Int, seq: Int, primary: String? = nil, ids: [String] = []) throws {
        let s = FleetCounterState(value: value, seq: seq, ids: ids, primary: primary)
        broker.publish(stateTopic, Array(try JSONEncoder().encode(s)), retain: true)
        broker.deliver()
    }

    // MARK: the rule, plain values

    @Test func ruleRefusesForeignPrimariesImpossibleSeqsAndJumps() {
        let shown = FleetStateRule.Shown(seq: 100, primary: "p", secondsAgo: 2)
        func judge(_ seq: Int, _ primary: String?, expected: String? = "p", shown: FleetStateRule.Shown = shown) -> FleetStateRule.Verdict {
            FleetStateRule.judge(FleetCounterState(value: 1, seq: seq, ids: [], primary: primary), expected: expected, shown: shown)
        }
        #expect(judge(101, "p") == .show)
        #expect(judge(100, "p") == .older)
        #expect(judge(7, "p") == .older)
        // 2 s after seq 100: 10 000 + 2 × 1 000 = 12 000 changes at most.
        #expect(judge(100 + 12_000, "p") == .show)
        guard case .refused(let jump) = judge(100 + 12_001, "p") else { Issue.record("a jump of 12 001 in 2 s was shown"); return }
        #expect(jump.contains("jumps from 100 to 12101, more than the 12000 changes"))
        guard case .refused(let other) = judge(101, "x") else { Issue.record("a state of kiosk 'x' was shown"); return }
        #expect(other.contains("published by 'x', not by the group's primary 'p' (fleet.primary)"))
        guard case .refused(let none) = judge(101, nil) else { Issue.record("a state naming no primary was shown"); return }
        #expect(none.contains("names no primary; fleet.primary is 'p'"))
        guard case .refused(let huge) = judge(1 << 62, "p", expected: nil) else { Issue.record("seq 2^62 was shown"); return }
        #expect(huge.contains("seq 4611686018427387904 is outside 0…1099511627776"))
        #expect(judge(-1, "p", expected: nil) != .show)
        // Without fleet.primary, any primary; the seq rules still hold.
        #expect(judge(101, "x", expected: nil) == .show)
        #expect(judge(1 << 40, "x", expected: nil, shown: .init(seq: 0, primary: nil, secondsAgo: nil)) == .show)
        // The configured primary replaces a state shown from elsewhere (a forged one kept earlier), whatever the seqs.
        #expect(judge(3, "p", shown: .init(seq: 1 << 40, primary: nil, secondsAgo: 1)) == .show)
        #expect(judge(3, "p", shown: .init(seq: 50, primary: "x", secondsAgo: 1)) == .show)
    }

    @Test func conflictHoldsWhileTheOtherPrimaryIsSeen() {
        var c = PrimaryConflict()
        #expect(c.others(atNs: 0).isEmpty)
        c.saw("b", atNs: 1_000_000_000)
        #expect(c.others(atNs: 30_999_999_999) == ["b"])
        #expect(c.others(atNs: 31_000_000_000).isEmpty)
        c.saw("a", atNs: 20_000_000_000)
        c.expire(atNs: 31_000_000_000)
        #expect(c.lastSeen == ["a": 20_000_000_000])
    }

    // MARK: a primary whose record is lost

    /// The primary's state folder wiped, or restored from an older backup, while the group goes
    /// on: at its first connection the broker hands it the group's retained state in its own
    /// name, ahead of its record. It takes that value and seq over and keeps them (before: it
    /// restarted at 0 or its old seq, logged its own state as forged, and the group split).
    @Test(arguments: [nil, 2])
    func aPrimaryBehindTheRetainedStateInItsNameTakesItOver(backupSeq: Int?) throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let first = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, primary: "p")
        for i in 0..<5 { _ = first.engine.applyNow(FleetCommand(op: .inc, id: "c\(i)"), to: "HOME") }
        broker.deliver()
        #expect(follower.value == 5 && follower.engine.seq(of: "HOME") == 5)
        first.engine.stop()
        first.transport.setConnected(false)

        let key = FleetEngine.recordKey(group: "hall", counter: "HOME")
        let store = backupSeq.map { MemoryStateStore([key: #"{"value":\#($0),"seq":\#($0),"ids":[]}"#, "counter.score.HOME": "\($0)"]) }
            ?? MemoryStateStore()
        let again = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        broker.deliver()
        #expect(again.value == 5 && again.engine.seq(of: "HOME") == 5, "value \(again.value), seq \(String(describing: again.engine.seq(of: "HOME")))")
        #expect(again.engine.refusedStates == 0, "its own retained state was called forged")
        #expect(store.values["counter.score.HOME"] == "5", "the state taken over is not kept")
        // A resent command of before changes nothing; a new one goes on from seq 5, and the follower shows it.
        #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: "c4"), to: "HOME")?.get() == 5)
        #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: "n1"), to: "HOME")?.get() == 6)
        broker.deliver()
        #expect(follower.value == 6 && follower.engine.seq(of: "HOME") == 6)
        #expect(follower.engine.refusedStates == 0)
        // Later, a state in its name published by another client is forged, not taken over.
        try forge(broker, value: 40, seq: 90, primary: "p")
        #expect(again.value == 6 && again.engine.refusedStates == 1)
    }

    // MARK: a follower and forged states

    @Test func forgedStatesAreIgnoredAndAnswersMatchTheScreen() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, store: store, primary: "p")
        broker.deliver()
        let answers = Answers()
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        broker.deliver()
        #expect(follower.value == 1 && primary.value == 1)

        // The forged state of the issue: no primary, seq 2^62.
        try forge(broker, value: 123, seq: 1 << 62)
        // Naming the primary, but seq beyond 2^40; and a jump too large for the time since.
        try forge(broker, value: 124, seq: 1 << 62, primary: "p")
        try forge(broker, value: 125, seq: 20_000, primary: "p")
        // Another kiosk's state (straight to the follower: the primary would see a second primary).
        follower.engine.receive(FleetCounterState(value: 126, seq: 2, ids: [], primary: "mallory"), for: "HOME")
        #expect(follower.value == 1 && follower.engine.seq(of: "HOME") == 1)
        #expect(follower.engine.refusedStates == 4)
        // The primary saw two states in its name beyond its own seq: logged as forged, nothing changed.
        #expect(primary.engine.refusedStates == 2 && primary.value == 1 && primary.engine.otherPrimaries.isEmpty)

        // The follower's changes still land; each answer is the value its screen then shows.
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        broker.deliver()
        #expect(answers.list.map(\.status) == [200, 200])
        #expect(try answers.list.map { try $0.decode(CounterAnswer.self).value } == [1, 2])
        #expect(follower.value == 2 && primary.value == 2)

        // A forged state naming a pending change does not confirm it.
        primary.transport.setConnected(false)
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        let id = try #require(lastCommandID(broker))
        #expect(follower.engine.pendingCount == 1)
        follower.engine.receive(FleetCounterState(value: 500, seq: 3, ids: [id], primary: "mallory"), for: "HOME")
        #expect(follower.engine.pendingCount == 1 && answers.list.count == 2 && follower.value == 2)
        #expect(follower.engine.refusedStates == 5)
    }

    func lastCommandID(_ broker: FakeFleetBroker) -> String? {
        broker.log.last { $0.topic.hasSuffix("/cmd") }.flatMap { try? JSONDecoder().decode(FleetCommand.self, from: Data($0.payload)) }?.id
    }

    @Test func olderStateNamingAChangeIsAnsweredWithTheShownValue() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, primary: "p")
        let answers = Answers()
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        follower.engine.receive(FleetCounterState(value: 9, seq: 9, ids: [], primary: "p"), for: "HOME")
        #expect(follower.value == 9)
        // A late state (seq 5 < 9) names the pending change: the answer is 9, what the screen shows.
        let id = try #require(lastCommandID(broker))
        follower.engine.receive(FleetCounterState(value: 5, seq: 5, ids: [id], primary: "p"), for: "HOME")
        #expect(answers.list.map(\.status) == [200])
        #expect(try answers.list[0].decode(CounterAnswer.self).value == 9)
        #expect(follower.value == 9)
    }

    /// A change made while seq 9 is shown comes back in a state with seq 5: the primary's seq
    /// went back (its record lost, no retained state to take over). The follower cannot show it:
    /// it does not answer 200 (before: 200 with 9, the group split while every answer said OK),
    /// the change stays unconfirmed (202) and is resent.
    @Test func aChangeThatComesBackInAStateBehindTheShownOneIsNotAnswered200() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, primary: "p")
        follower.engine.receive(FleetCounterState(value: 9, seq: 9, ids: [], primary: "p"), for: "HOME")
        let answers = Answers()
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        let id = try #require(lastCommandID(broker))
        follower.engine.receive(FleetCounterState(value: 1, seq: 5, ids: [id], primary: "p"), for: "HOME")
        #expect(answers.list.isEmpty, "answered \(answers.list.map(\.status)) for a change that is not shown")
        #expect(follower.value == 9 && follower.engine.refusedStates == 1)
        loop.advance(by: 5_000_000_000)
        #expect(answers.list.map(\.status) == [202])
        #expect(follower.engine.pendingCount == 1, "the change is no longer resent")
    }

    @Test func aForgedSeqKeptByAnEarlierVersionIsReplacedByThePrimary() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let key = FleetEngine.recordKey(group: "hall", counter: "HOME")
        let store = MemoryStateStore([key: #"{"value":123,"seq":4611686018427387904,"ids":[]}"#])
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, store: store)
        #expect(follower.value == 123 && follower.engine.seq(of: "HOME") == 0)
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        _ = try primary.engine.applyNow(FleetCommand(op: .set, value: 45, id: "p-1"), to: "HOME")?.get()
        broker.deliver()
        #expect(follower.value == 45 && follower.engine.seq(of: "HOME") == 1)
    }

    // MARK: two primaries

    @Test func twoPrimariesStopAcknowledgingUntilOneRemains() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let a = try FleetKiosk(.primary, id: "a", broker: broker, loop: loop)
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop)
        broker.deliver()
        let answers = Answers()
        a.engine.submit("HOME", .increment, reply: answers.reply)
        #expect(answers.list.map(\.status) == [200] && a.value == 1)
        let b = try FleetKiosk(.primary, id: "b", broker: broker, loop: loop)
        broker.deliver()
        #expect(a.engine.otherPrimaries == ["b"] && b.engine.otherPrimaries == ["a"])

        // Neither acknowledges a change: local (409, naming the other) or from a follower.
        a.engine.submit("HOME", .increment, reply: answers.reply)
        b.engine.submit("HOME", .increment, reply: answers.reply)
        #expect(answers.list.map(\.status) == [200, 409, 409])
        #expect(answers.list[1].errorMessage?.contains("group 'hall' has two primaries: kiosk 'b' publishes the group's states too (this kiosk is 'a')") == true)
        #expect(answers.list[2].errorMessage?.contains("kiosk 'a' publishes") == true)
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        broker.deliver()
        #expect(answers.list.count == 4 && answers.list[3].status == 422)
        #expect(answers.list[3].errorMessage?.contains("has two primaries") == true)
        #expect(a.value == 1 && b.value == 0)

        // Both keep seeing each other (they republish while in conflict).
        for _ in 0..<6 { _ = loop.advance(by: 10_000_000_000); broker.deliver() }
        #expect(a.engine.otherPrimaries == ["b"] && b.engine.otherPrimaries == ["a"])

        // b is gone (stopped, to become a follower): a takes changes again 30 s after b's last state.
        b.engine.stop()
        b.transport.setConnected(false)
        _ = loop.advance(by: 20_000_000_000)
        broker.deliver()
        #expect(a.engine.otherPrimaries == ["b"])
        _ = loop.advance(by: 20_000_000_000)
        broker.deliver()
        #expect(a.engine.otherPrimaries.isEmpty)
        a.engine.submit("HOME", .increment, reply: answers.reply)
        #expect(answers.list.last?.status == 200 && a.value == 2)
    }
}
