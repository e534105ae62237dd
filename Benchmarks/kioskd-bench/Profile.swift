import ArgumentParser
import KioskCore
import KioskRender
import KioskScenes
import KioskTesting

/// Hidden mode for `Benchmarks/profile.sh`: one scene through the scene manager on the headless
/// display, then `--frames` frames of its typical work, nothing else. Run under
/// `valgrind --tool=callgrind` twice with different frame counts, the difference of the two
/// instruction counts divided by the difference of the frame counts is the cost of one frame,
/// free of start-up.
struct ProfileChild: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "profile", shouldDisplay: false)

    @Option(help: "What to run: fill (the floor: one cairo_paint of the whole frame), clock (a tick), clock-theme (a tick, background = \"theme\"), counter (a 6-digit roll frame), paint (a stroke segment).")
    var work: String
    @Option(help: "Frame size, WIDTHxHEIGHT.") var size: String = "1920x1080"
    @Option(help: "Frames to run after the first.") var frames: Int = 10
    @Flag(help: "Present every frame by copying its damage from the frame canvas (the display does not lend its buffer).")
    var copyPath = false

    func run() throws {
        guard let sz = try parseSizes(size).first else { throw ValidationError("--size is empty") }
        if work == "fill" {
            // The floor the clock tick is compared with: a solid cairo_paint over a whole frame.
            let canvas = try Canvas(size: sz)
            for i in 0...frames { canvas.clear(Color(r8: i % 256, g8: 128, b8: (i * 7) % 256)); canvas.flush() }
            print("frames \(frames)")
            return
        }
        let kind = work == "clock-theme" ? "clock" : work
        let extra: [(String, ConfigValue)] = work == "clock-theme" ? [("background", .string("theme"))] : []
        let rig = try Rig(kind: kind, size: sz, manualClock: true, extraConfig: extra, copyOnly: copyPath)
        try rig.start()
        let clock = rig.manualTime!
        let before = rig.display.presentCount
        switch work {
        case "clock", "clock-theme":
            for _ in 0..<frames { clock.advance(seconds: 1); rig.manager.tick(); try rig.pump() }
        case "counter":
            guard let c = rig.scene as? CounterControl, let name = c.counterNames.first else {
                throw ValidationError("the counter scene has no counters")
            }
            // 099999 → 100000 rolls all six digits; frames at 60 per simulated second.
            var done = 0
            while done < frames {
                try c.showEdit(.set(99999), name, now: rig.now)
                clock.advance(seconds: 2); rig.manager.tick(); try rig.pump()
                try c.showEdit(.set(100000), name, now: rig.now)
                rig.manager.sceneDidChange()
                try rig.pump()
                while done < frames, rig.scene.nextDeadline(now: rig.now) != nil {
                    clock.advance(ns: 16_666_667); rig.manager.tick(); try rig.pump()
                    done += 1
                }
            }
        case "paint":
            rig.manager.input(rig.touch(.down, 0.25, 0.5))
            try rig.pump()
            for k in 1...max(frames, 1) where frames > 0 {
                clock.advance(ns: 8_000_000)
                let x = 0.25 + Double((k * 7) % 960) / 1920, y = 0.5 + Double((k * 13) % 200 - 100) / 1080
                rig.manager.input(rig.touch(.motion, x, y))
                try rig.pump()
            }
        default:
            throw ValidationError("--work: unknown '\(work)' (fill, clock, clock-theme, counter, paint)")
        }
        print("frames \(rig.display.presentCount - before)")
    }
}
