import ArgumentParser
import KioskCore

/// `kioskd-bench`: what kioskd costs per frame, per hour and per touch, against the floor and a pygame peer.
struct KioskdBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kioskd-bench",
        abstract: "Measures kioskd's frame, idle, touch, startup and memory costs against the floor and a pygame peer.",
        subcommands: [RunBench.self, FirstFrameChild.self, ProfileChild.self, FsyncProbe.self, ControlBurstBench.self, TouchBurstBench.self, SlowWorkBench.self, SlowStartBench.self, StartupBench.self, FleetDecideBench.self, ClockDriftBench.self],
        defaultSubcommand: RunBench.self)
}

/// Parses "1920x1080,3840x2160".
func parseSizes(_ s: String) throws -> [Size] {
    try s.split(separator: ",").map { part in
        let wh = part.split(separator: "x")
        guard wh.count == 2, let w = Int(wh[0]), let h = Int(wh[1]), (16...16384).contains(w), (16...16384).contains(h) else {
            throw ValidationError("--sizes: '\(part)' is not WIDTHxHEIGHT (16…16384 each), e.g. 1920x1080")
        }
        return Size(width: w, height: h)
    }
}
