import ArgumentParser
import Foundation
import KioskControl
import KioskCore
import KioskFleet
import KioskState
import KioskTesting
import Logging

/// `kioskd-bench fleet-decide`: the render loop's time in `FleetEngine` per shared-counter change
/// during a burst — the primary taking a group command (decode, decide, the commit's writes),
/// then its commit coming back (answer, the state's JSON built and published), and a follower
/// taking the primary's state — beside the frame budget (16.7 ms at 60 Hz). The commit itself
/// (the pipeline's thread in kioskd) and the scenes' drawing are left out: the engine's commit
/// and show roads only count here.
struct FleetDecideBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "fleet-decide",
                                                    abstract: "Render-loop time in the fleet's engine per shared-counter change during a burst.")

    @Option(help: "Changes in the burst.") var changes: Int = 5000
    @Option(help: "Commands arriving while one commit is in flight (1: each committed before the next arrives).") var batch: Int = 1

    func validate() throws {
        guard changes >= 1 else { throw ValidationError("--changes must be at least 1") }
        guard batch >= 1 else { throw ValidationError("--batch must be at least 1") }
    }

    func run() throws {
        let primary = try FleetBenchSide(role: .primary)
        let follower = try FleetBenchSide(role: .follower)
        var perChange: [Double] = []
        var states: [Double] = []
        var i = 0
        while i < changes {
            let n = min(batch, changes - i)
            let commands = (0..<n).map { k in Array(try! JSONEncoder().encode(FleetCommand(op: .inc, id: "bench-\(i + k)"))) }
            let t0 = nowNanos(.monotonic)
            for c in commands { primary.transport.deliver(primary.engine.commandTopic("HOME"), c) }
            primary.commitAll()
            let t1 = nowNanos(.monotonic)
            perChange.append(Double(t1 - t0) / 1e6 / Double(n))
            // The follower takes the state the primary published last.
            guard let state = primary.transport.lastState else { throw ValidationError("the primary published no state") }
            let t2 = nowNanos(.monotonic)
            follower.transport.deliver(follower.engine.stateTopic("HOME"), state)
            follower.commitAll()
            states.append(Double(nowNanos(.monotonic) - t2) / 1e6)
            i += n
        }
        guard primary.engine.seq(of: "HOME") == changes, follower.engine.seq(of: "HOME") == changes else {
            throw ValidationError("the primary applied \(primary.engine.seq(of: "HOME") ?? -1) of \(changes) changes, the follower took \(follower.engine.seq(of: "HOME") ?? -1)")
        }
        let budget = 1000.0 / 60
        func line(_ what: String, _ s: Samples) {
            print("  \(what): median \(String(format: "%.4f", s.median)) ms, p99 \(String(format: "%.4f", s.p99)) ms, max \(String(format: "%.3f", s.max)) ms"
                + " (\(String(format: "%.2f", s.p99 / budget * 100))% of the 16.7 ms frame at p99)")
        }
        print("fleet engine on the render loop, \(changes) changes, \(batch) per commit:")
        line("primary, per change (command → decided → committed → state published)", Samples(perChange))
        line("follower, per state taken", Samples(states))
        let total = perChange.reduce(0, +) * Double(batch)
        print("  a burst of \(changes) changes costs the loop \(String(format: "%.1f", total)) ms on the primary"
            + " (\(String(format: "%.0f", Double(changes) / (total / 1000))) changes/s if the loop did nothing else)")
    }
}

/// One kiosk's engine for the bench: a counter HOME (9 digits), a transport that keeps
/// the handlers and the last state published, and commits held until `commitAll`.
final class FleetBenchSide {
    let engine: FleetEngine
    let transport = FleetBenchTransport()

    init(role: FleetSettings.Role) throws {
        let loop = ManualEventLoop()
        var settings = FleetSettings(group: "bench", role: role)
        settings.ackTimeoutMs = 60_000
        let rules = CounterRules(counter: "HOME", digits: 9, minimum: 0)
        var value = 0
        let store = MemoryStateStore()
        var held: [(Error?) -> Void] = []
        engine = try FleetEngine(settings: settings, kioskID: role == .primary ? "bench-1" : "bench-2", transport: transport, scheduler: loop,
                                 state: store, names: ["HOME"],
                                 counter: { name in name == "HOME" ? FleetCounter(rules: rules, value: value, keys: ["score.HOME"]) : nil },
                                 shown: { value = $0.value },
                                 commit: { writes, done in
                                     do { try store.saveBatch(writes) } catch { return done(error) }
                                     held.append(done)
                                 },
                                 now: { loop.now() }, logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        engine.start()
        takeHeld = { let h = held; held = []; return h }
    }

    private var takeHeld: () -> [(Error?) -> Void] = { [] }

    /// Answers the commits in flight (and those they start) as the pipeline does, on the loop.
    func commitAll() {
        while true {
            let h = takeHeld()
            if h.isEmpty { return }
            for done in h { done(nil) }
        }
    }
}

/// A transport that is always connected: publishes kept (the last state), subscriptions' handlers
/// called by `deliver`.
final class FleetBenchTransport: FleetTransport {
    var handlers: [(filter: String, handler: (String, [UInt8], Bool) -> Void)] = []
    var lastState: [UInt8]?
    var isConnected: Bool { true }
    func onConnectionChange(_ handler: @escaping (Bool) -> Void) {}
    func publish(_ topic: String, _ payload: [UInt8], retain: Bool) -> String? {
        if retain { lastState = payload }
        return nil
    }
    func subscribe(_ filter: String, _ handler: @escaping (String, [UInt8], Bool) -> Void) { handlers.append((filter, handler)) }

    /// Hands `payload` on `topic` to the handlers whose filter matches (one level `+`).
    func deliver(_ topic: String, _ payload: [UInt8]) {
        let t = topic.split(separator: "/", omittingEmptySubsequences: false)
        for (filter, handler) in handlers {
            let f = filter.split(separator: "/", omittingEmptySubsequences: false)
            if f.count == t.count, zip(f, t).allSatisfy({ $0 == "+" || $0 == $1 }) { handler(topic, payload, false) }
        }
    }
}
