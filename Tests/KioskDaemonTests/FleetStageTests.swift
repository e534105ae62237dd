import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskScenes
import KioskState
import KioskTesting
import Testing

/// The fleet as a stage of the command pipeline: its commits are held by the test (as the
/// pipeline's thread would hold them while the disk works), so what is decided, shown, published
/// and answered before and after each commit is in the test's hands.
@Suite struct FleetStageTests {
    /// Commits the engine asked for, not yet done.
    final class HeldCommits {
        var held: [(writes: [(key: String, value: String)], done: (Error?) -> Void)] = []
        var store: MemoryStateStore
        init(_ engine: FleetEngine, store: MemoryStateStore) {
            self.store = store
            engine.commit = { [unowned self] writes, done in self.held.append((writes, done)) }
        }
        /// Finishes the oldest held commit: written to the store, or failed with `error`.
        func finish(failing error: Error? = nil) {
            let c = held.removeFirst()
            if error == nil { for w in c.writes { try? store.save(w.key, w.value) } }
            c.done(error)
        }
    }

    struct DiskFull: Error, CustomStringConvertible { var description: String { "No space left on device" } }

    func states(_ broker: FakeFleetBroker) -> [FleetCounterState] {
        broker.log.filter { $0.topic == "kioskd/group/hall/counter/HOME" }
            .compactMap { try? JSONDecoder().decode(FleetCounterState.self, from: Data($0.payload)) }
    }

    @Test func commandsArrivingDuringACommitAreDecidedInOrderAndCommittedTogether() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        let commits = HeldCommits(primary.engine, store: store)
        var results: [String: Result<Int, KioskError>] = [:]
        func apply(_ op: FleetCommand.Op, _ id: String, _ value: Int? = nil) {
            primary.engine.apply(FleetCommand(op: op, value: value, id: id), to: "HOME") { results[id] = $0 }
        }
        apply(.inc, "a")
        #expect(commits.held.count == 1 && results.isEmpty, "answered only after the commit")
        #expect(primary.value == 0, "shown only after the commit")
        let published = states(broker).count
        apply(.inc, "b"); apply(.set, "c", 40); apply(.inc, "b"); apply(.dec, "d"); apply(.set, "e", 99_999)
        #expect(commits.held.count == 1, "the others wait for the commit in flight")
        commits.finish()
        #expect(results["a"] == .success(1) && primary.value == 1)
        #expect(states(broker).count == published + 1 && states(broker).last?.seq == 1)
        // The waiting commands, decided in order from the committed value, in one commit.
        #expect(commits.held.count == 1)
        let writes = Dictionary(commits.held[0].writes.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        #expect(writes["counter.score.HOME"] == "39")
        #expect(results["b"] == nil)
        commits.finish()
        // The second b is a known id by then: it changes nothing and is answered with the value then.
        #expect(results["b"] == .success(40) && results["c"] == .success(40) && results["d"] == .success(39))
        guard case .failure(let e) = results["e"] else { Issue.record("the set beyond 4 digits was not refused"); return }
        #expect(e.message.contains("above the largest value 9999"))
        #expect(primary.value == 39 && primary.engine.seq(of: "HOME") == 4, "b applied once although sent twice")
        let last = try #require(states(broker).last)
        #expect(last.seq == 4 && last.value == 39 && ["b", "c", "d"].allSatisfy(last.ids.contains) && last.refused?["e"] != nil)
        // What a restart reads: the record and the counter's value, committed together.
        let again = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        #expect(again.value == 39 && again.engine.seq(of: "HOME") == 4)
        #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: "c"), to: "HOME")?.get() == 39, "a known id changes nothing")
    }

    @Test func aFailedCommitRefusesItsChangesAndTheNextStartsFromTheValueBefore() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        let commits = HeldCommits(primary.engine, store: store)
        var results: [String: Result<Int, KioskError>] = [:]
        for id in ["a", "b"] { primary.engine.apply(FleetCommand(op: .inc, id: id), to: "HOME") { results[id] = $0 } }
        commits.finish()
        #expect(results["a"] == .success(1))
        primary.engine.apply(FleetCommand(op: .inc, id: "c"), to: "HOME") { results["c"] = $0 }
        commits.finish(failing: DiskFull()) // the commit of b
        guard case .failure(let e) = results["b"] else { Issue.record("b was not refused"); return }
        #expect(e.message.contains("cannot save the fleet record") && e.message.contains("No space left") && e.message.contains("the value stays 1"))
        #expect(primary.value == 1 && primary.engine.seq(of: "HOME") == 1)
        commits.finish()
        #expect(results["c"] == .success(2) && primary.value == 2 && primary.engine.seq(of: "HOME") == 2)
        // b was not kept: a resend of it is applied (once).
        primary.engine.apply(FleetCommand(op: .inc, id: "b"), to: "HOME") { results["b"] = $0 }
        commits.finish()
        #expect(results["b"] == .success(3))
    }

    @Test func aFollowerShowsTheNewestStateAfterItsCommitAndAnswersThen() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, store: store)
        let commits = HeldCommits(follower.engine, store: store)
        let answers = Answers()
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        let id = try #require(broker.log.last.flatMap { try? JSONDecoder().decode(FleetCommand.self, from: Data($0.payload)) }?.id)
        follower.engine.receive(FleetCounterState(value: 5, seq: 5, ids: [], primary: nil), for: "HOME")
        #expect(follower.value == 0, "not shown before it is kept")
        // Meanwhile: an older state (judged against the one being kept), then a newer one with the id.
        follower.engine.receive(FleetCounterState(value: 3, seq: 4, ids: []), for: "HOME")
        follower.engine.receive(FleetCounterState(value: 8, seq: 7, ids: [id]), for: "HOME")
        #expect(answers.list.isEmpty)
        commits.finish()
        #expect(follower.value == 5 && commits.held.count == 1)
        #expect(answers.list.isEmpty, "the id's state is not shown yet")
        commits.finish()
        #expect(follower.value == 8 && follower.engine.seq(of: "HOME") == 7)
        #expect(answers.list.map(\.status) == [200])
        let again = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, store: store, connected: false)
        #expect(again.value == 8 && again.engine.seq(of: "HOME") == 7)
    }

    /// The primary's record is written incrementally: its head and the id chunk(s) a commit's ids
    /// went into, never the whole history.
    @Test func aCommitWritesTheRecordsHeadAndOnlyTheChunkItsIDsWentInto() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        var largest = 0
        primary.engine.commit = { writes, done in
            largest = max(largest, writes.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count })
            for w in writes { try? store.save(w.key, w.value) }
            done(nil)
        }
        for i in 0..<1000 {
            _ = primary.engine.applyNow(FleetCommand(op: .inc, id: String(repeating: "z", count: 58) + String(format: "%06d", i)), to: "HOME")
        }
        #expect(primary.value == 1000)
        #expect(largest <= 4096 + 400, "the largest commit wrote \(largest) bytes")
        let head = try #require(store.values[FleetEngine.recordKey(group: "hall", counter: "HOME")])
        #expect(head.utf8.count < 200 && !head.contains("zzz"), "\(head)")
    }

    /// With short ids at least `appliedIdLimit` (1 024) are remembered across a restart; the
    /// oldest beyond that are forgotten.
    @Test func theLatestAppliedIdLimitIdsAreRememberedAcrossARestart() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        for i in 0..<1200 { _ = primary.engine.applyNow(FleetCommand(op: .inc, id: "f-\(i)"), to: "HOME") }
        #expect(primary.value == 1200)
        let again = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        for i in [1199, 700, 1200 - 1024] {
            #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: "f-\(i)"), to: "HOME")?.get() == 1200, "f-\(i) was applied again")
        }
        #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: "f-0"), to: "HOME")?.get() == 1201, "the oldest id is forgotten")
    }

    /// A record kept by an earlier kioskd (its ids in the record itself) is read, and written as
    /// a head and chunks at the next commit.
    @Test func aRecordKeptWholeByAnEarlierKioskdIsReadAndRewrittenInChunks() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let key = FleetEngine.recordKey(group: "hall", counter: "HOME")
        let store = MemoryStateStore([key: #"{"value":2,"seq":2,"ids":["a","b"]}"#, "counter.score.HOME": "2"])
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        #expect(primary.value == 2 && primary.engine.seq(of: "HOME") == 2)
        #expect(try primary.engine.applyNow(FleetCommand(op: .inc, id: "a"), to: "HOME")?.get() == 2, "a known id of the old record")
        #expect(try primary.engine.applyNow(FleetCommand(op: .inc, id: "c"), to: "HOME")?.get() == 3)
        #expect(store.values.keys.filter { $0.hasPrefix("fleet.hall.HOME.ids.") }.count == FleetEngine.IDChunks.count)
        #expect(store.values[key].map { !$0.contains("\"a\"") } == true)
        let again = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        for id in ["a", "b", "c"] {
            #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: id), to: "HOME")?.get() == 3, "\(id) was applied again")
        }
    }
}
