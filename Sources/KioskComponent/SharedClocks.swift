import KioskControl
import KioskCore

/// The daemon's game clocks for a component that owns them across kiosks (the fleet): read by
/// scene, decided and kept through the command pipeline, shown from another kiosk's record.
/// Use on the render loop; every closure holds the daemon weakly.
public struct SharedClocks {
    /// The counter scenes with a game clock now, in config order (after a reload the new ones).
    public let scenes: () -> [String]
    /// A scene's game clock at an instant (nil: the scene has none).
    public let clock: (_ scene: String, _ at: WallTime) -> GameClock?
    /// Decides `intent` at instant `at` on the scene's clock through the command pipeline, shows
    /// it once kept and calls `done` on the loop with the clock kept, or the refusal.
    public let decide: (_ intent: ClockIntent, _ scene: String, _ at: WallTime, _ done: @escaping (Result<GameClock, KioskError>) -> Void) -> Void
    /// Shows another kiosk's record on every instance of the scene (placed by the realtime
    /// clock), with `warning` in place of the time when non-nil; redraws and tells observers.
    /// False: no such clock now.
    public let show: (_ scene: String, _ record: GameClockRecord, _ warning: String?) -> Bool
    /// Whether this kiosk's system clock is synchronised now.
    public let synchronized: () -> Bool
    /// This boot's id (a kept record's monotonic instants belong to it).
    public let bootID: String

    public init(scenes: @escaping () -> [String], clock: @escaping (String, WallTime) -> GameClock?,
                decide: @escaping (ClockIntent, String, WallTime, @escaping (Result<GameClock, KioskError>) -> Void) -> Void,
                show: @escaping (String, GameClockRecord, String?) -> Bool, synchronized: @escaping () -> Bool, bootID: String) {
        self.scenes = scenes; self.clock = clock; self.decide = decide; self.show = show
        self.synchronized = synchronized; self.bootID = bootID
    }
}
