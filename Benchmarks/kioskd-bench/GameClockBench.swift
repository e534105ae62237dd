import KioskCore
import KioskRender
import KioskScenes

/// The counter scene's game clock (docs/scoreboard.md) against today's clock tick: one frame of
/// a running game clock in seconds (`MM:SS`), and the idle cost of a stopped one.
extension SceneBenches {
    /// The counter scene's `[scene.bench.clock]`: a 99:00 period (seconds mode for the whole run) and a 24 s shot clock.
    static func gameClockConfig() -> [(String, ConfigValue)] {
        let at = SourceLocation(file: "kioskd-bench", line: 0)
        let clock = ConfigTable(path: "scene.bench.clock", location: at,
                                entries: [("period_length", ConfigNode(.string("99:00"), at: at)), ("tenths_below", ConfigNode(.string("0:00"), at: at))])
        return [("clock", .table(clock))]
    }

    /// One second of a running game clock: the time moves one second, the manager's timer
    /// handler runs (update, the next deadline), then the loop draws and presents the damage
    /// (the digit windows that changed).
    static func gameClockTick(size: Size, runs: Int) throws -> ClockFigures {
        let rig = try Rig(kind: "counter", size: size, manualClock: true, extraConfig: gameClockConfig())
        try rig.start()
        guard let scene = rig.scene as? CounterScene, let clock = scene.gameClock(at: rig.now) else {
            throw BenchError(description: "the counter scene has no game clock")
        }
        scene.showCommittedClock(clock.start(at: rig.now).0, now: rig.now)
        rig.manager.sceneDidChange()
        try rig.pump()
        return try secondTicks(rig, "game clock tick", size: size, runs: runs)
    }

    /// The real loop on a counter scene whose game clock is stopped (it asks for no frame).
    static func gameClockIdle(size: Size, seconds: Double) throws -> IdleFigures {
        try idle(kind: "counter", size: size, seconds: seconds, config: gameClockConfig())
    }
}
