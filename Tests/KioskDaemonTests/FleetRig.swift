import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskDaemonTesting
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import Testing

/// Daemons of one fleet group as kioskd runs them — the command pipeline started, the fleet
/// over a broker in memory — on one virtual-time loop; the test commits each pipeline batch
/// itself (`settle`). The counter scene `score` has HOME (shared) and AWAY (each kiosk's own).
final class FleetRig {
    let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
    let broker = FakeFleetBroker()
    var daemons: [Daemon] = []
    /// Each daemon's connection to the broker, by its kiosk id.
    var transports: [String: FakeFleetTransport] = [:]
    var serial = 0

    /// A started daemon with its pipeline; `joins`: it has joined the group (`joinFleet`).
    /// `clock`: the scene has a game clock (10:00 periods, a 24 s shot clock); `time`: the
    /// daemon's clocks (default: the loop's); its system clock is synchronised.
    func daemon(role: FleetSettings.Role, id: String, minimum: Int = 0, connected: Bool = true, joins: Bool = true,
                clock: Bool = false, time: TimeSource? = nil, store: MemoryStateStore = MemoryStateStore(), extra: String = "") throws -> Daemon {
        let dir = tempDir("fleet\(id)")
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [scene.score]
        kind = "counter"
        digits = 2
        roll_ms = 0
        min = \(minimum)
        [[scene.score.counter]]
        name = "HOME"
        [[scene.score.counter]]
        name = "AWAY"
        \(clock ? "[scene.score.clock]\nperiod_length = \"10:00\"\nshot_clock = 24" : "")
        [mqtt]
        broker = "mqtt://127.0.0.1:1883"
        id = "\(id)"
        [fleet]
        group = "hall"
        role = "\(role.rawValue)"
        counters = ["HOME"]
        \(extra)
        """, dir)
        // The settings layer kept in `store` laid over the file, as kioskd starts (DaemonRunner.makeDaemon).
        let (config, settings) = DaemonRunner.layered(try DaemonConfig.load(path: path, environment: [:]), state: store, registry: .standard, logger: quietLogger)
        let d = try Daemon(config: config, display: try HeadlessDisplay(size: Size(width: 64, height: 48)), input: nil,
                           state: store, loop: loop, time: time ?? loop, logger: quietLogger, environment: [:])
        d.settings = settings
        d.wallHooks.kernelClock = { .synchronizedReading }
        d.wallHooks.timesyncDirectory = "\(dir)/timesync"
        d.startAsKioskd()
        let t = FakeFleetTransport(broker)
        t.connected = connected
        transports[id] = t
        daemons.append(d)
        if joins { try joinFleet(d) }
        return d
    }

    /// `d` joins the group over its transport (as `startFleetOverMQTT` does).
    func joinFleet(_ d: Daemon) throws {
        let id = try #require(d.config.mqtt?.id)
        try d.startFleet(transport: try #require(transports[id]), kioskID: id)
    }

    /// Runs everything in flight to the end: the broker's deliveries, each pipeline's batches
    /// (its commit loop stepped here) and the loop's work.
    func settle() {
        for _ in 0..<100 {
            broker.deliver()
            var ran = 0
            for d in daemons { ran += d.commitBatches() }
            ran += loop.runPending()
            if ran == 0 && broker.queue.isEmpty { return }
        }
        Issue.record("the fleet did not settle in 100 rounds")
    }

    /// A tap on HOME (the left half) of the counter scene `d` shows now.
    func tap(_ d: Daemon) throws {
        let scene = try #require(d.manager.current as? CounterScene, "the scene shown is not a counter scene")
        _ = scene.handle(.gesture(.tap(x: 0.25, y: 0.5)), now: d.manager.time.now())
    }

    /// `kioskctl counter HOME inc` on `d`; its answer is appended to `answers` when it comes.
    func socket(_ d: Daemon, _ answers: Answers) {
        d.handle(.counter(name: "HOME", op: .inc, value: nil), reply: answers.reply)
    }

    /// An increment published on the group's command topic by another client (a wall panel).
    func groupCommand() {
        serial += 1
        let c = FleetCommand(op: .inc, id: "panel-\(serial)")
        broker.publish("kioskd/group/hall/counter/HOME/cmd", Array(try! JSONEncoder().encode(c)), retain: false)
    }

    func value(_ d: Daemon) -> Int? { d.kioskState().counters.first { $0.name == "HOME" }?.value }
    func get(_ d: Daemon) -> Int? { try? d.handle(.counter(name: "HOME", op: .get, value: nil)).decode(CounterAnswer.self).value }
    var retained: FleetCounterState? {
        broker.retained["kioskd/group/hall/counter/HOME"].flatMap { try? JSONDecoder().decode(FleetCounterState.self, from: Data($0)) }
    }
}

