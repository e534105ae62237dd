#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskDaemon
import KioskPosix
import KioskRender
import KioskState
import KioskTesting
import Logging

/// `kioskd-bench touch-burst`: paint touch → flip latency while the control socket is hammered,
/// beside the same figure idle, in one run. The daemon is kioskd's own, built as `kioskd` builds
/// it (`Daemon`, its command pipeline, the control server from `DaemonRunner`, a `FileStateStore`
/// on this disk, the render loop on a thread of its own, a headless display), in this process;
/// only the touchscreen is a pipe: each touch is a byte written into it, read on the render loop
/// by an `InputSource` (as libinput's fd is) and sent into the scene manager as a finger moving
/// on the paint scene. The latency is from the write to the end of the present that shows it.
/// The burst: `clients` threads on kept-alive control connections, each sending `per-client`
/// counter increments (HOME and AWAY of a counter scene not on screen) through the pipeline.
struct TouchBurstBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "touch-burst", abstract: "Paint touch → flip latency during a control-socket burst, beside its idle figure.")

    @Option(help: "Concurrent control clients during the burst.") var clients: Int = 20
    @Option(help: "Increments per client in each round's burst.") var perClient: Int = 500
    @Option(help: "Idle touches measured in each round (the burst measures as many as it lasts for, up to 4 times this).") var samples: Int = 300
    @Option(help: "Rounds of idle touches then touches during a burst (so a change of the machine's load falls on both).") var rounds: Int = 3
    @Option(help: "Milliseconds between touches (a touchscreen reports every 8-16 ms).") var intervalMs: Int = 8
    @Option(help: "The display's size.") var size: String = "1280x800"

    func validate() throws {
        guard clients >= 1, perClient >= 1, samples >= 10, rounds >= 1, intervalMs >= 1 else {
            throw ValidationError("--clients, --per-client and --rounds at least 1, --samples at least 10, --interval-ms at least 1")
        }
        guard try parseSizes(size).count == 1 else { throw ValidationError("--size: one WIDTHxHEIGHT; got \(size)") }
    }

    func run() throws {
        let d = "/var/tmp/kioskd-touchburst-\(getpid())"
        mkdir(d, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: d) }
        let sock = "\(d)/c.sock"
        let rig = try TouchBurstRig(dir: d, size: try parseSizes(size)[0])
        defer { rig.stop() }
        var load0 = [Double](repeating: 0, count: 3)
        getloadavg(&load0, 3)

        var idleMs: [Double] = [], busyMs: [Double] = []
        var bursts: [ControlBurst.Result] = []
        let n = clients, per = perClient
        for _ in 0..<rounds {
            // Idle: touches only.
            idleMs += try rig.touches(count: samples, intervalMs: intervalMs) { false }
            // Burst: the same touches while every client sends its increments.
            let finished = LockedBox(false)
            let burstResult = LockedBox<ControlBurst.Result?>(nil)
            Thread {
                let r = ControlBurst.run(socket: sock, clients: n, perClient: per) { c in
                    [c % 2 == 0 ? "/counter/HOME/inc" : "/counter/AWAY/inc"]
                }
                burstResult.set(r)
                finished.set(true)
            }.start()
            // ControlBurst connects its clients and starts them together 100 ms later.
            usleep(150_000)
            busyMs += try rig.touches(count: samples * 4, intervalMs: intervalMs) { finished.get() }
            while !finished.get() { usleep(10_000) }
            bursts.append(burstResult.get()!)
        }
        let idle = Samples(idleMs), busy = Samples(busyMs)
        var load1 = [Double](repeating: 0, count: 3)
        getloadavg(&load1, 3)
        let acked = bursts.map(\.acknowledged).reduce(0, +)
        let seconds = bursts.map(\.seconds).reduce(0, +)
        let failures = bursts.flatMap(\.failures)
        let home = try ControlBurstBench.value(sock, "HOME"), away = try ControlBurstBench.value(sock, "AWAY")
        let status = try UnixHTTPConnection(path: sock).request("GET", "/status").body
        let obj = (try? JSONSerialization.jsonObject(with: Data(status.utf8))) as? [String: Any] ?? [:]
        let commits = obj["commits"] as? [String: Any] ?? [:]

        let f = { (v: Double) in String(format: "%.2f", v) }
        let wantHome = rounds * ((n + 1) / 2) * per, wantAway = rounds * (n / 2) * per
        print("touch-burst: paint at \(size), a touch every \(intervalMs) ms, \(rounds) rounds; load average \(f(load0[0])) at start, \(f(load1[0])) at end")
        print("  bursts: \(rounds) × \(n) clients × \(per) increments: \(acked) acknowledged in \(f(seconds)) s = \(Int(Double(acked) / max(seconds, 1e-9))) /s; failures \(failures.count) \(failures.prefix(2))")
        print("  values HOME \(home) AWAY \(away) (expected \(wantHome) and \(wantAway)); commits \(commits["batches"] ?? "?") batches, largest \(commits["largest_batch"] ?? "?")")
        print("  touch → flip          samples    p50 ms    p90 ms    p99 ms    max ms")
        for (name, s) in [("idle", idle), ("during the bursts", busy)] {
            print("  " + name.padding(toLength: 20, withPad: " ", startingAt: 0)
                  + String(format: "%8d  %8.3f  %8.3f  %8.3f  %8.3f", s.count, s.median, s.percentile(0.9), s.p99, s.max))
        }
        print("  burst ÷ idle: p50 \(f(busy.median / idle.median))×, p99 \(f(busy.p99 / idle.p99))× (target: p99 ≤ 2×)")
        guard acked == rounds * n * per, home == wantHome, away == wantAway else {
            throw KioskError(.state, "touch-burst: not every increment was acknowledged and kept (\(acked) of \(rounds * n * per); HOME \(home), AWAY \(away))")
        }
        guard busy.count >= 10 * rounds else {
            throw KioskError(.state, "touch-burst: the bursts ended after \(busy.count) touches; give more --per-client")
        }
    }
}

/// kioskd's daemon in this process with a pipe for a touchscreen (see `TouchBurstBench`).
final class TouchBurstRig: @unchecked Sendable {
    // @unchecked: `daemon` and `input` are used on the render loop only (through `post`); the
    // results come back through `lock`.
    private let daemon: KioskDaemon.Daemon
    private let input: PipeTouchInput
    private let display: HeadlessDisplay
    private let server: ControlServer
    private let loopDone = DispatchSemaphore(value: 0)
    private let lock = NSCondition()
    /// Touch number → the present that showed it (monotonic ns), filled on the render loop;
    /// every touch up to `shownUpTo` has been presented.
    private var shown: [Int: Int64] = [:]
    private var shownUpTo = 0
    /// False when the paint scene was not on screen at start.
    private var paintOnScreen = false

    init(dir: String, size: Size) throws {
        let text = """
            state_dir = "\(dir)/state"
            [display]
            backend = "headless"
            headless_size = "\(size)"
            [scenes]
            order = ["paint", "score"]
            [scene.paint]
            kind = "paint"
            [scene.score]
            kind = "counter"
            digits = 6
            [[scene.score.counter]]
            name = "HOME"
            [[scene.score.counter]]
            name = "AWAY"
            [control]
            socket = "\(dir)/c.sock"

            """
        let path = "\(dir)/kioskd.toml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        var logger = Logger(label: "kioskd")
        logger.logLevel = .error
        let config = try DaemonConfig.load(path: path, environment: [:])
        let loop = try EventLoop()
        let state = try FileStateStore(directory: config.stateDirectory, logger: logger)
        display = try HeadlessDisplay(size: size)
        input = try PipeTouchInput(loop: loop)
        daemon = try KioskDaemon.Daemon(config: config, display: display, input: input, state: state, loop: loop, logger: logger)
        server = DaemonRunner.makeControlServer(settings: config.control, daemon: daemon, logger: logger)
        let started = DispatchSemaphore(value: 0)
        let bound = LoopBound(self, loop: loop)
        let done = loopDone
        Thread {
            let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if fd >= 0 { _ = write(fd, "kioskd-render", 13); close(fd) }
            loop.post {
                let rig = bound.value
                rig.daemon.onReady = { [weak rig] in
                    if let rig {
                        let paint = rig.daemon.manager.current.name == "paint"
                        rig.lock.withLock { rig.paintOnScreen = paint }
                    }
                    started.signal()
                }
                rig.daemon.onFrame = { [weak rig] in rig?.framePresented() }
                rig.daemon.start()
                rig.daemon.startPipeline()
                rig.input.startWatching()
            }
            try? loop.run()
            done.signal()
        }.start()
        guard started.wait(timeout: .now() + 15) == .success else { throw KioskError(.system, "touch-burst: no first frame within 15 s") }
        try server.start()
        guard lock.withLock({ paintOnScreen }) else { throw KioskError(.state, "touch-burst: the paint scene is not on screen") }
    }

    /// On the render loop after every present: the touches delivered so far are on screen now.
    private func framePresented() {
        let delivered = input.delivered
        let at = display.lastPresentNs
        lock.lock()
        if delivered > shownUpTo {
            for k in (shownUpTo + 1)...delivered { shown[k] = at }
            shownUpTo = delivered
        }
        lock.broadcast()
        lock.unlock()
    }

    /// One finger down, then `count` moves `intervalMs` apart (or until `stop()`), each timed from
    /// its write into the pipe to the present that shows it; the finger is lifted at the end
    /// (down and up are not timed: the first move's present shows the down too).
    func touches(count: Int, intervalMs: Int, stop: () -> Bool) throws -> [Double] {
        input.send(.down)
        var out: [Double] = []
        for _ in 0..<count {
            if stop() { break }
            let t0 = nowNanos(.monotonic)
            input.send(.motion)
            let at = try waitShown(input.sentCount)
            out.append(Double(at - t0) / 1e6)
            let next = t0 + Int64(intervalMs) * 1_000_000
            let left = next - nowNanos(.monotonic)
            if left > 0 { usleep(UInt32(left / 1000)) }
        }
        input.send(.up)
        return out
    }

    /// Waits (at most 10 s) for the present showing touch `k`.
    private func waitShown(_ k: Int) throws -> Int64 {
        lock.lock()
        defer { lock.unlock() }
        let until = Date(timeIntervalSinceNow: 10)
        while shown[k] == nil {
            guard lock.wait(until: until) else { throw KioskError(.system, "touch-burst: touch \(k) was not presented within 10 s") }
        }
        let at = shown[k]!
        shown = shown.filter { $0.key > k }
        return at
    }

    func stop() {
        server.stop()
        let bound = LoopBound(daemon, loop: daemon.loop)
        daemon.loop.post {
            bound.value.shutdown()
            bound.value.eventLoop?.stop()
        }
        _ = loopDone.wait(timeout: .now() + 10)
    }
}

/// A touchscreen made of a pipe: `send` writes one byte per touch (any thread); on the render
/// loop each byte becomes the next touch of one finger moving across the paint scene.
final class PipeTouchInput: InputSource, @unchecked Sendable {
    // @unchecked: `onEvent`, `delivered`, `k` and `watch` are used on the loop only; `phases`
    // and `sent` under `lock`.
    var onEvent: ((InputEvent) -> Void)?
    var onRoutedEvent: ((InputEvent, Int?) -> Void)?
    var devices: [InputDeviceInfo] { [] }
    func setRotation(_ rotation: Rotation) {}
    func shutdown() { if let w = watch { loop.unwatch(w); watch = nil } }

    private let loop: EventLoop
    private let fds: (read: Int32, write: Int32)
    private var watch: EventLoop.WatchID?
    private let lock = NSLock()
    private var phases: [TouchPhase] = []
    private var sent = 0
    /// Touches handed to the scene manager (loop only).
    private(set) var delivered = 0
    private var k = 0

    init(loop: EventLoop) throws {
        self.loop = loop
        var p: [Int32] = [0, 0]
        try Posix.call("pipe") { pipe(&p) }
        for fd in p { _ = fcntl(fd, F_SETFD, FD_CLOEXEC); _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        fds = (p[0], p[1])
    }

    deinit { close(fds.read); close(fds.write) }

    var sentCount: Int { lock.withLock { sent } }

    /// On the loop, after `Daemon.start()` set `onEvent`.
    func startWatching() {
        watch = try? loop.watch(fd: fds.read) { [weak self] in self?.readable() }
    }

    func send(_ phase: TouchPhase) {
        lock.withLock {
            phases.append(phase)
            sent += 1
        }
        var one: UInt8 = 1
        _ = write(fds.write, &one, 1)
    }

    private func readable() {
        var buf = [UInt8](repeating: 0, count: 64)
        while read(fds.read, &buf, buf.count) > 0 {}
        let todo: [TouchPhase] = lock.withLock {
            let p = phases
            phases.removeAll()
            return p
        }
        for phase in todo {
            k += 1
            // A finger moving to and fro across the middle of the screen, away from the toolbar.
            let x = 0.3 + Double((k * 5) % 400) / 1000, y = 0.45 + Double(k % 50) / 1000
            onEvent?(.touch(TouchEvent(phase, slot: 0, x: x, y: y, timeUsec: UInt64(nowNanos(.monotonic) / 1000))))
            delivered += 1
        }
    }
}

/// A value behind a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: T
    init(_ v: T) { value = v }
    func get() -> T { lock.withLock { value } }
    func set(_ v: T) { lock.withLock { value = v } }
}
