#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import KioskCore
import KioskScenes
import KioskTesting

/// Hidden child mode: one scene from exec to its first presented frame (prints "first-frame"),
/// then a short typical workout (ticks, a roll, a visitor's strokes) so peak RSS is representative.
struct FirstFrameChild: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "first-frame", shouldDisplay: false)

    @Option(help: "Scene kind: clock, counter or paint.") var scene: String
    @Option(help: "Frame size, WIDTHxHEIGHT.") var size: String = "1920x1080"

    func run() throws {
        // The parent's CLOCK_MONOTONIC at posix_spawn: how long exec, the dynamic loader and the
        // Swift runtime took before our code ran.
        if let t0 = getenv("KIOSKD_BENCH_SPAWN_NS").flatMap({ Int64(String(cString: $0)) }) {
            let line = Array("main-reached-ms \(Double(nowNanos(.monotonic) - t0) / 1e6)\n".utf8)
            _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        }
        guard let sz = try parseSizes(size).first else { throw ValidationError("--size is empty") }
        let rig = try Rig(kind: scene, size: sz, manualClock: true)
        rig.manager.onFirstFrame = {
            let line = Array("first-frame\n".utf8)
            _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        }
        try rig.start()
        guard rig.display.presentCount == 1 else { throw ValidationError("no first frame was presented") }
        let clock = rig.manualTime!
        switch scene {
        case "clock":
            for _ in 0..<10 { clock.advance(seconds: 1); rig.manager.tick(); try rig.pump() }
        case "counter":
            if let c = rig.scene as? CounterControl, let name = c.counterNames.first {
                for _ in 0..<2 {
                    try c.showEdit(.increment, name, now: rig.now)
                    rig.manager.sceneDidChange()
                    for _ in 0..<40 { clock.advance(ns: 16_666_667); rig.manager.tick(); try rig.pump() }
                }
            }
        case "paint":
            for i in 0..<200 { try SceneBenches.addStroke(rig, benchStroke(i)) }
        default: break
        }
        // ru_maxrss of a posix_spawn'ed child carries the parent's high-water mark over exec;
        // VmHWM is this process's own.
        let hwm = statusField("/proc/self/status", "VmHWM:") ?? 0
        let line = Array("peak-rss-kib \(hwm)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
    }
}
