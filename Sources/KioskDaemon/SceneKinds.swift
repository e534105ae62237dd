import KioskCore
import KioskScenes

extension SceneRegistry {
    /// The scene kinds kioskd ships: one line per kind.
    public static var standard: SceneRegistry {
        var r = SceneRegistry()
        r.register("clock", ClockScene.make)
        r.register("counter", CounterScene.make)
        r.register("paint", PaintScene.make)
        return r
    }
}
