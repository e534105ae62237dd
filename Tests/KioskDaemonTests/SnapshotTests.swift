import Foundation
import KioskConfig
import KioskCore
import KioskDaemon
import KioskRender
import KioskState
import KioskTestTraits
import KioskTesting
import Testing

/// `kioskd --snapshot` with a scripted tap: the tap's change shows in the picture, and the state
/// directory is left exactly as it was.
@Suite(.ownThreads) struct SnapshotTests {
    func config(_ d: String) -> String {
        """
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "640x360"
        [scenes]
        order = ["score"]
        [scene.score]
        kind = "counter"
        digits = 3
        roll_ms = 0
        tap = "increment"
        [[scene.score.counter]]
        name = "home"
        [[scene.score.counter]]
        name = "away"
        """
    }

    /// Every file in `dir` with its bytes.
    func files(_ dir: String) -> [String: Data] {
        var out: [String: Data] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] {
            out[name] = FileManager.default.contents(atPath: "\(dir)/\(name)")
        }
        return out
    }

    @Test func aTapInASnapshotShowsItsChangeAndSavesNothing() throws {
        let d = tempDir()
        let cfg = try DaemonConfig.load(path: write(config(d), d), environment: [:])
        // A state directory with a saved value (home = 41), made by a store that saves.
        let store = try FileStateStore(directory: "\(d)/state", logger: quietLogger)
        try store.save(StateKey.join(["counter", "score", "home"]), "41")
        store.close()
        let before = files("\(d)/state")
        #expect(!before.isEmpty)

        let plain = "\(d)/plain.png", tapped = "\(d)/tapped.png"
        try DaemonRunner.snapshot(config: cfg, to: plain, afterSeconds: 0.5, logger: quietLogger)
        // A tap on the left half, where the first counter is, as `--stroke 0.25,0.55:0.25,0.55` gives it.
        let tap = TouchScript.path(through: try TouchScript.parsePath("0.25,0.55:0.25,0.55"))
        try DaemonRunner.snapshot(config: cfg, to: tapped, afterSeconds: 0.5, strokes: [tap], logger: quietLogger)
        let a = try Canvas.loadPNG(path: plain), b = try Canvas.loadPNG(path: tapped)
        let left = Rect(x: 0, y: 0, width: 320, height: 360), right = Rect(x: 320, y: 0, width: 320, height: 360)
        #expect(Pixels.differingPixels(a, b, in: left) > 50, "the tapped counter shows no change")
        #expect(Pixels.differingPixels(a, b, in: right) == 0, "the other counter changed")
        #expect(files("\(d)/state") == before, "the snapshot wrote to the state directory")
    }
}
