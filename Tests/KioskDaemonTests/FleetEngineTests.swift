import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskScenes
import KioskState
import KioskTesting
import Logging
import Testing

/// A broker in memory: topic filters with `+`, retained messages, and a delivery queue that the
/// test runs (`deliver()`), so redelivery and ordering are in the test's hands.
final class FakeFleetBroker {
    var retained: [String: [UInt8]] = [:]
    /// Deliveries waiting: the client, the topic, the payload and whether it is a retained message
    /// sent because of a subscription.
    var queue: [(FakeFleetTransport, String, [UInt8], Bool)] = []
    var clients: [FakeFleetTransport] = []
    /// Every message published, in order.
    var log: [(topic: String, payload: [UInt8], retain: Bool)] = []

    static func matches(_ filter: String, _ topic: String) -> Bool {
        let f = filter.split(separator: "/", omittingEmptySubsequences: false)
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        guard f.count == t.count else { return false }
        return zip(f, t).allSatisfy { $0 == "+" || $0 == $1 }
    }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) {
        log.append((topic, payload, retain))
        if retain { retained[topic] = payload }
        for c in clients where c.connected && c.filters.contains(where: { Self.matches($0.0, topic) }) { queue.append((c, topic, payload, false)) }
    }

    /// Delivers queued messages (and what they cause) until none is left.
    func deliver() {
        while !queue.isEmpty {
            let (c, topic, payload, retained) = queue.removeFirst()
            guard c.connected else { continue }
            for (f, h) in c.filters where Self.matches(f, topic) { h(topic, payload, retained) }
        }
    }
}

final class FakeFleetTransport: FleetTransport {
    let broker: FakeFleetBroker
    var connected = false
    var filters: [(String, (String, [UInt8], Bool) -> Void)] = []
    var handlers: [(Bool) -> Void] = []
    /// Published while disconnected: sent on connect (like the MQTT client's queue).
    var outbox: [(String, [UInt8], Bool)] = []

    init(_ broker: FakeFleetBroker) {
        self.broker = broker
        broker.clients.append(self)
    }

    var isConnected: Bool { connected }
    func onConnectionChange(_ handler: @escaping (Bool) -> Void) { handlers.append(handler) }

    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) -> String? {
        if connected { broker.publish(topic, payload, retain: retain) } else {
            if retain { outbox.removeAll { $0.0 == topic && $0.2 } }
            outbox.append((topic, payload, retain))
        }
        return nil
    }

    func subscribe(_ filter: String, _ handler: @escaping (String, [UInt8], Bool) -> Void) {
        filters.append((filter, handler))
        if connected { sendRetained(filter) }
    }

    private func sendRetained(_ filter: String) {
        for (t, p) in broker.retained.sorted(by: { $0.key < $1.key }) where FakeFleetBroker.matches(filter, t) { broker.queue.append((self, t, p, true)) }
    }

    func setConnected(_ up: Bool) {
        guard up != connected else { return }
        connected = up
        if up {
            for (f, _) in filters { sendRetained(f) }
            let out = outbox
            outbox = []
            for (t, p, r) in out { broker.publish(t, p, retain: r) }
        }
        for h in handlers { h(up) }
    }
}

/// One kiosk of a fleet in memory: a counter scene on a store, an engine on a fake transport.
struct FleetKiosk {
    let scene: CounterScene
    let engine: FleetEngine
    let transport: FakeFleetTransport
    let store: MemoryStateStore

    init(_ role: FleetSettings.Role, id: String, broker: FakeFleetBroker, loop: ManualEventLoop,
         store: MemoryStateStore = MemoryStateStore(), queueLimit: Int = 100, connected: Bool = true, primary: String? = nil) throws {
        var s = FleetSettings(group: "hall", role: role)
        s.primary = primary
        s.queueLimit = queueLimit
        s.ackTimeoutMs = 5000
        self.store = store
        // Made as the registry makes it: showing the value kept in `store`.
        let settings = try CounterSettings(scene: "score", counters: [.init(name: "HOME", label: "")], digits: 4)
        let made = CounterScene(name: "score", settings: settings,
                                values: CounterScene.storedValues(scene: "score", settings: settings, stored: store.load, logger: quietLogger),
                                intents: { _ in })
        scene = made
        transport = FakeFleetTransport(broker)
        transport.connected = connected
        engine = try FleetEngine(settings: s, kioskID: id, transport: transport, scheduler: loop, state: store,
                                 names: made.counterNames,
                                 counter: { [made] name in
                                     guard let rules = try? made.rules(of: name), let value = try? made.value(of: name) else { return nil }
                                     return FleetCounter(rules: rules, value: value, keys: [made.stateKey(name)])
                                 },
                                 shown: { [made] v in made.showCommitted(v.counter, value: v.value, up: v.up, now: v.at) },
                                 // At once (the daemon's pipeline commits on its own thread; FleetStageTests hold commits).
                                 commit: { writes, done in
                                     do { try store.saveBatch(writes); done(nil) } catch { done(error) }
                                 },
                                 now: { loop.now() }, logger: quietLogger)
        engine.start()
    }

    var value: Int { (try? scene.value(of: "HOME")) ?? -1 }
}

extension FleetEngine {
    /// `apply` with the engine's default commit (at once): its result, or nil when none came.
    func applyNow(_ command: FleetCommand, to name: String) -> Result<Int, KioskError>? {
        var result: Result<Int, KioskError>?
        apply(command, to: name) { result = $0 }
        return result
    }
}

/// Collects control answers.
final class Answers {
    var list: [ControlResponse] = []
    var reply: (ControlResponse) -> Void { { self.list.append($0) } }
}

@Suite struct FleetEngineTests {
    func states(_ broker: FakeFleetBroker) -> [FleetCounterState] {
        broker.log.filter { $0.topic == "kioskd/group/hall/counter/HOME" }
            .compactMap { try? JSONDecoder().decode(FleetCounterState.self, from: Data($0.payload)) }
    }

    @Test func redeliveredCommandChangesNothingAlsoAfterRestart() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        let cmd = FleetCommand(op: .inc, id: "f1-x-1")
        let payload = Array(try JSONEncoder().encode(cmd))
        broker.publish("kioskd/group/hall/counter/HOME/cmd", payload, retain: false)
        broker.publish("kioskd/group/hall/counter/HOME/cmd", payload, retain: false) // QoS 1 redelivery
        broker.deliver()
        #expect(primary.value == 1)
        #expect(primary.engine.seq(of: "HOME") == 1)
        // The redelivery was answered with the same state, naming the id.
        let last = try #require(states(broker).last)
        #expect(last.value == 1 && last.seq == 1 && last.ids.contains("f1-x-1"))
        #expect(broker.retained["kioskd/group/hall/counter/HOME"] != nil)

        // Restart from the same durable store: the id is still known; seq continues.
        let again = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        #expect(again.value == 1)
        #expect(try again.engine.applyNow(cmd, to: "HOME")?.get() == 1)
        #expect(again.engine.seq(of: "HOME") == 1)
        #expect(try again.engine.applyNow(FleetCommand(op: .inc, id: "f1-x-2"), to: "HOME")?.get() == 2)
        #expect(again.engine.seq(of: "HOME") == 2)
        // Value and seq in the record's head, the ids in the chunk it names (one commit).
        let raw = try #require(store.values[FleetEngine.recordKey(group: "hall", counter: "HOME")])
        let rec = try JSONDecoder().decode(FleetEngine.Record.self, from: Data(raw.utf8))
        #expect(rec == FleetEngine.Record(value: 2, seq: 2, ids: [], chunk: 0))
        #expect(store.values[FleetEngine.chunkKey(group: "hall", counter: "HOME", index: 0)] == #"["f1-x-1","f1-x-2"]"#)
    }

    @Test func primaryRefusalChangesNothingAndReachesTheFollowerCaller() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop)
        broker.deliver()
        let answers = Answers()
        follower.engine.submit("HOME", .decrement, reply: answers.reply)
        broker.deliver()
        #expect(primary.value == 0 && primary.engine.seq(of: "HOME") == 0)
        #expect(answers.list.map(\.status) == [422])
        #expect(answers.list.first?.errorMessage?.contains("is at its minimum 0; it cannot be decremented") == true)
        #expect(follower.engine.pendingCount == 0)
    }

    @Test func followerShowsNewestSeqIgnoresOlderAndKeepsItDurably() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, store: store)
        follower.engine.receive(FleetCounterState(value: 7, seq: 5, ids: []), for: "HOME")
        #expect(follower.value == 7)
        follower.engine.receive(FleetCounterState(value: 3, seq: 4, ids: []), for: "HOME")
        #expect(follower.value == 7)
        #expect(follower.engine.seq(of: "HOME") == 5)
        // Restarted without a broker: the last value and seq come back from the store.
        let again = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, store: store, connected: false)
        #expect(again.value == 7 && again.engine.seq(of: "HOME") == 5)
        again.engine.receive(FleetCounterState(value: 6, seq: 5, ids: []), for: "HOME")
        #expect(again.value == 7)
    }

    @Test func followerChangeIsAnsweredWhenThePrimaryStateComesBack() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop)
        broker.deliver()
        let answers = Answers()
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        #expect(answers.list.isEmpty) // not before the primary's state is back
        #expect(follower.value == 0)
        broker.deliver()
        #expect(answers.list.map(\.status) == [200])
        #expect(try answers.list[0].decode(CounterAnswer.self).value == 1)
        #expect(primary.value == 1 && follower.value == 1)
        _ = loop.advance(by: 10_000_000_000)
        #expect(answers.list.count == 1) // no pending answer after the confirmation
    }

    @Test func queueFullIsRefusedWithTheLimit() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, queueLimit: 2, connected: false)
        let answers = Answers()
        for _ in 0..<3 { follower.engine.submit("HOME", .increment, reply: answers.reply) }
        #expect(answers.list.map(\.status) == [503])
        let message = try #require(answers.list.first?.errorMessage)
        #expect(message.contains("the fleet queue is full: 2 changes are waiting for the primary of group 'hall'"))
        #expect(message.contains("fleet.queue_limit 2; broker offline"))
        #expect(follower.engine.pendingCount == 2)
        // A touch is refused too (nobody to answer; the value stays).
        follower.engine.submit("HOME", .increment, reply: nil)
        #expect(follower.engine.pendingCount == 2 && follower.value == 0)
    }

    @Test func timeoutGivesPendingThenTheQueuedChangeLandsOnReconnectExactlyOnce() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        // The follower starts before the primary and without the broker.
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop, connected: false)
        let answers = Answers()
        follower.engine.submit("HOME", .increment, reply: answers.reply)
        follower.engine.submit("HOME", .set(10_000), reply: answers.reply) // above 9999: refused here
        #expect(answers.list.map(\.status) == [422])
        _ = loop.advance(by: 5_000_000_000)
        #expect(answers.list.map(\.status) == [422, 202])
        let pending = try answers.list[1].decode(FleetPendingAnswer.self)
        #expect(pending.pending && !pending.ok && pending.counter == "HOME")
        #expect(pending.message.contains("is queued: the primary of group 'hall' has not confirmed it within 5000 ms (broker offline)"))

        // Broker back, primary not yet: sent, lost (nobody subscribed).
        follower.transport.setConnected(true)
        broker.deliver()
        #expect(follower.engine.pendingCount == 1)
        // The primary starts; the follower resends after the retry interval.
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        broker.deliver()
        _ = loop.advance(by: 5_000_000_000)
        broker.deliver()
        #expect(primary.value == 1 && follower.value == 1)
        #expect(follower.engine.pendingCount == 0)
        // Resent again (a late duplicate): nothing changes.
        _ = loop.advance(by: 20_000_000_000)
        broker.deliver()
        #expect(primary.value == 1 && primary.engine.seq(of: "HOME") == 1)
    }

    @Test func primaryRepublishesItsStateOnEveryConnect() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop)
        #expect(try primary.engine.applyNow(FleetCommand(op: .set, value: 42, id: "p-1"), to: "HOME")?.get() == 42)
        broker.retained = [:] // a broker restarted without persistence
        primary.transport.setConnected(false)
        primary.transport.setConnected(true)
        let raw = try #require(broker.retained["kioskd/group/hall/counter/HOME"])
        #expect(try JSONDecoder().decode(FleetCounterState.self, from: Data(raw)) == FleetCounterState(value: 42, seq: 1, ids: ["p-1"], primary: "p"))
        // A follower started now shows it.
        let follower = try FleetKiosk(.follower, id: "f", broker: broker, loop: loop)
        broker.deliver()
        #expect(follower.value == 42 && follower.engine.seq(of: "HOME") == 1)
    }

    @Test func fleetConfigErrorsNameFileLineAndKey() throws {
        let d = tempDir()
        let scene = "[scene.score]\nkind = \"counter\"\n[[scene.score.counter]]\nname = \"HOME\"\n"
        let noRole = configError { _ = try loadConfig(scene + "[fleet]\ngroup = \"hall\"\n", dir: d) }
        #expect(noRole?.contains("kioskd.toml:5: key 'fleet.role': missing: role = \"primary\"") == true, "\(noRole ?? "")")
        let badGroup = configError { _ = try loadConfig(scene + "[fleet]\ngroup = \"a/b\"\nrole = \"primary\"\n", dir: d) }
        #expect(badGroup?.contains("kioskd.toml:6: key 'fleet.group': \"a/b\" cannot be part of an MQTT topic") == true, "\(badGroup ?? "")")
        let badRole = configError { _ = try loadConfig(scene + "[fleet]\ngroup = \"hall\"\nrole = \"boss\"\n", dir: d) }
        #expect(badRole?.contains("kioskd.toml:7: key 'fleet.role': expected one of \"primary\", \"follower\", got \"boss\"") == true, "\(badRole ?? "")")
        let noMQTT = configError { _ = try loadConfig(scene + "[fleet]\ngroup = \"hall\"\nrole = \"primary\"\n", dir: d) }
        #expect(noMQTT?.contains("kioskd.toml:5: table '[fleet]': a fleet shares its counters through an MQTT broker; add an [mqtt] table") == true, "\(noMQTT ?? "")")
        // With [mqtt]: read; a shared counter no scene has is named with its line.
        let config = try loadConfig(scene + "[mqtt]\nbroker = \"mqtt://127.0.0.1:1883\"\nid = \"p\"\n[fleet]\ngroup = \"hall\"\nrole = \"primary\"\ncounters = [\"GUEST\"]\nqueue_limit = 7\n", dir: d)
        let fleet = try #require(config.fleet)
        #expect(fleet.group == "hall" && fleet.role == .primary && fleet.queueLimit == 7 && fleet.ackTimeoutMs == 5000)
        let counter = try CounterScene(name: "score", counters: [.init(name: "HOME", label: "")], intents: { _ in })
        #expect(fleet.primary == nil)
        let follower = try loadConfig(scene + "[mqtt]\nbroker = \"mqtt://127.0.0.1:1883\"\nid = \"f\"\n[fleet]\ngroup = \"hall\"\nrole = \"follower\"\nprimary = \"hall-1\"\n", dir: d)
        #expect(follower.fleet?.primary == "hall-1")
        let emptyPrimary = configError { _ = try loadConfig(scene + "[mqtt]\nbroker = \"mqtt://127.0.0.1:1883\"\n[fleet]\ngroup = \"hall\"\nrole = \"follower\"\nprimary = \"\"\n", dir: d) }
        #expect(emptyPrimary?.contains("kioskd.toml:10: key 'fleet.primary': is empty: the primary's kiosk id (its mqtt.id)") == true, "\(emptyPrimary ?? "")")
        let unknown = configError { _ = try FleetEngine.sharedNames(fleet, names: counter.counterNames) }
        #expect(unknown?.contains("kioskd.toml:11: key 'fleet.counters': no counter scene has a counter \"GUEST\" (counters: HOME)") == true, "\(unknown ?? "")")
    }
}
