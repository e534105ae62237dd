#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskDaemon
import KioskRender
import KioskScenes
import KioskTesting
import Logging
import KioskPosix

/// One scene on screen as kioskd runs it: an EventLoop, a SceneManager and a HeadlessDisplay
/// (which copies each frame's damage into its framebuffer like a DRM back buffer), with either
/// a manual clock (per-frame costs) or the system clocks (idle and frame-rate runs).
final class Rig {
    let loop: EventLoop
    let display: HeadlessDisplay
    let manager: SceneManager
    let scene: Scene
    let manualTime: ManualTimeSource?
    let size: Size

    /// The config each kind is benchmarked with (`[scene.bench]`).
    static func config(kind: String) -> [(String, ConfigValue)] {
        switch kind {
        case "counter": return [("digits", .int(6))]
        default: return []
        }
    }

    /// Kinds this build can make (SceneRegistry.standard).
    static var availableKinds: [String] { factories.keys.sorted() }

    /// The daemon's registry, plus the scene types themselves for kinds it does not list yet.
    static var factories: [String: SceneFactory] {
        var f: [String: SceneFactory] = ["clock": ClockScene.make, "counter": CounterScene.make, "paint": PaintScene.make]
        for (k, v) in SceneRegistry.standard.factories { f[k] = v }
        return f
    }

    /// `copyOnly`: the manager sees a display that does not lend its buffer, so every frame is
    /// drawn into the frame canvas and its damage copied (to measure what drawing in place saves).
    init(kind: String, size: Size, manualClock: Bool, theme: Theme = .dark, extraConfig: [(String, ConfigValue)] = [],
         copyOnly: Bool = false) throws {
        guard let factory = Rig.factories[kind] else {
            throw KioskError(.notFound, "scene kind \"\(kind)\" is not in this build (kinds: \(Rig.availableKinds.joined(separator: ", ")))")
        }
        let at = SourceLocation(file: "kioskd-bench", line: 0)
        let table = ConfigTable(path: "scene.bench", location: at,
                                entries: ([("kind", .string(kind))] + Rig.config(kind: kind) + extraConfig).map { ($0.0, ConfigNode($0.1, at: at)) })
        _ = try table.string("kind")
        var logger = Logger(label: "kioskd-bench")
        logger.logLevel = .error
        // Saved paintings would go here; nothing in the benchmark saves, so it is never created.
        let dir = "/tmp/kioskd-bench-\(getpid())"
        let ctx = SceneContext(name: "bench", stored: { _ in nil }, counterIntents: { _ in }, logger: logger, dataDirectory: dir)
        scene = try factory(table, ctx)
        try table.finish()
        self.size = size
        loop = try EventLoop()
        display = try HeadlessDisplay(size: size)
        let time: TimeSource
        if manualClock {
            // Far enough ahead of the system clocks that the manager's real timers never fire:
            // every frame is driven by the benchmark.
            let day: Int64 = 86_400_000_000_000
            let m = ManualTimeSource(WallTime(realtimeNs: nowNanos(.realtime) + 30 * day,
                                              monotonicNs: nowNanos(.monotonic) + 30 * day))
            manualTime = m
            time = m
        } else {
            manualTime = nil
            time = SystemTimeSource()
        }
        let output: DisplayOutput = copyOnly ? CopyingDisplay(display) : display
        manager = SceneManager(scenes: [scene], theme: theme, display: output, loop: loop, time: time, logger: logger)
    }

    /// Shows the scene and draws the first frame.
    func start() throws {
        manager.start()
        try pump()
    }

    /// One loop iteration without waiting: runs deferred renders (the frame) and anything due.
    func pump() throws { try loop.runOnce(timeoutMs: 0) }

    var now: WallTime { manager.time.now() }

    /// A touch at normalised (x, y), stamped with the rig's monotonic time.
    func touch(_ phase: TouchPhase, _ x: Double, _ y: Double, slot: Int = 0) -> InputEvent {
        .touch(TouchEvent(phase, slot: slot, x: x, y: y, timeUsec: now.monotonicUsec))
    }
}

/// Stroke `i` of the benchmark painting: 8 points along a short line, normalised (same formula as the peer).
func benchStroke(_ i: Int) -> [Point] {
    let fx = (Double(i) * 0.6180339887).truncatingRemainder(dividingBy: 1)
    let fy = (Double(i) * 0.4142135623).truncatingRemainder(dividingBy: 1)
    let cx = 0.25 + 0.5 * fx, cy = 0.25 + 0.5 * fy
    let a = Double(i) * 0.7
    return (0..<8).map { j in
        Point(x: cx + 0.06 * Double(j) / 7 * cos(a), y: cy + 0.06 * Double(j) / 7 * sin(a))
    }
}

