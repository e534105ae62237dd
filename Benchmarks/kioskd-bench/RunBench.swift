#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskCore

/// The benchmark run: floor, clock, counter, paint, idle, startup and memory, with the peer beside each figure.
struct RunBench: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run", abstract: "Run the benchmarks and print the table (default).")

    @Flag(help: "A short run for CI: fewer repetitions, 3 s idle, no 10 000-stroke painting.") var quick = false
    @Option(help: "Frame sizes, comma-separated WIDTHxHEIGHT.") var sizes: String = "1920x1080,3840x2160"
    @Option(help: "Write every sample and the targets as JSON to this file.") var json: String?
    @Option(help: "Draw frame-time distributions (kioskd vs peer) as a PNG to this file.") var plot: String?
    @Option(help: "Repetitions per timed figure (default 200, 30 with --quick).") var runs: Int?
    @Option(help: "Wall-clock seconds of the idle run on the clock (default 15, 3 with --quick).") var idleSeconds: Double?
    @Option(help: "Seconds the idle clock runs before the idle run is measured, so that every digit has been drawn once (default 11, 1 with --quick).") var settleSeconds: Double?
    @Option(help: "Python of the pygame peer's venv.") var peerPython: String = "Benchmarks/.venv/bin/python"
    @Option(help: "Folder of the peer scripts.") var peerDir: String = "Benchmarks/peer"
    @Flag(help: "Skip the pygame peer.") var noPeer = false
    @Flag(help: "Skip the MQTT figures (they need mosquitto).") var noMqtt = false
    @Option(help: "Scene kinds to run (comma-separated).") var scenes: String = "clock,counter,paint"
    @Option(help: "Replace the block between '<!-- kioskd-bench:start -->' and '<!-- kioskd-bench:end -->' in this Markdown file with the table.")
    var updateDoc: String?

    func validate() throws {
        _ = try parseSizes(sizes)
        if let r = runs, r < 5 { throw ValidationError("--runs must be at least 5 (got \(r))") }
        if let s = idleSeconds, s < 1 { throw ValidationError("--idle-seconds must be at least 1 (got \(s))") }
        if let s = settleSeconds, !(s >= 1 && s <= 600) { throw ValidationError("--settle-seconds must be 1 to 600 (got \(s))") }
    }

    func run() throws {
        let sizeList = try parseSizes(sizes)
        let n = runs ?? (quick ? 30 : 200)
        let idleS = idleSeconds ?? (quick ? 3 : 15)
        let settleS = settleSeconds ?? (quick ? 1 : 11)
        let wanted = Set(scenes.split(separator: ",").map(String.init))
        let kinds = Set(Rig.availableKinds)
        let res = Results()
        var load = [Double](repeating: 0, count: 3)
        getloadavg(&load, 3)
        res.loadAtStart = load[0]
        let log = Progress()

        var peer: Peer?
        if noPeer { res.peerStatus = "pygame peer skipped (--no-peer)" } else {
            let (p, status) = Peer.locate(python: peerPython, dir: peerDir)
            peer = p
            res.peerStatus = p == nil ? status : "pygame peer: \(status), SDL_VIDEODRIVER=dummy"
        }
        log.say(res.peerStatus)
        for k in ["clock", "counter", "paint"] where wanted.contains(k) && !kinds.contains(k) {
            res.notes.append("scene kind \"\(k)\" is not in this build: its figures are missing")
        }
        func run(_ kind: String) -> Bool { wanted.contains(kind) && kinds.contains(kind) }
        func attempt(_ what: String, _ body: () throws -> Void) {
            do { try body() } catch { res.notes.append("\(what): \(error)"); log.say("\(what) failed: \(error)") }
        }

        for size in sizeList {
            log.say("floor \(size)")
            let f = Floor.run(size: size, runs: quick ? 20 : 100)
            res.floors[size] = f
            res.add(Row(section: "floor", name: "fill, cairo_paint (pixman)", size: size, kioskd: .samples(f.cairoFill), key: "floor.cairo_fill"))
            res.add(Row(section: "floor", name: "fill, memset", size: size, kioskd: .samples(f.memsetFill), key: "floor.memset"))
            res.add(Row(section: "floor", name: "copy, memcpy", size: size, kioskd: .samples(f.copy), key: "floor.memcpy"))

            if run("clock") {
                log.say("clock \(size)")
                attempt("clock tick at \(size)") {
                    let c = try SceneBenches.clockTick(size: size, runs: n)
                    var peerTick: Metric?
                    if let peer { attempt("peer clock at \(size)") {
                        peerTick = Peer.samples(try peer.bench("clock", size: size, frames: n), "tick_ms").map { .samples($0) }
                    } }
                    res.add(Row(section: "clock", name: "tick (update+draw+present)", size: size, kioskd: .samples(c.tick), peer: peerTick,
                                note: "damage \(Int((c.damageFraction * 100).rounded())) % of the frame", key: "clock.tick"))
                    let themed = try SceneBenches.clockTick(size: size, runs: n, config: [("background", .string("theme"))])
                    res.add(Row(section: "clock", name: "tick, background = \"theme\"", size: size, kioskd: .samples(themed.tick),
                                note: "damage \(fmt(themed.damageFraction * 100, 1)) % of the frame", key: "clock.tick_theme"))
                    let parts = try SceneBenches.clockParts(size: size, runs: n)
                    res.add(Row(section: "clock", name: "  of which scene.draw", size: size, kioskd: .samples(parts.draw), key: "clock.draw"))
                    res.add(Row(section: "clock", name: "  of which the damage copy (canvas path)", size: size, kioskd: .samples(parts.copy), key: "clock.copy"))
                }
            }
            if run("counter") {
                log.say("game clock \(size)")
                attempt("game clock at \(size)") {
                    let g = try SceneBenches.gameClockTick(size: size, runs: n)
                    res.add(Row(section: "counter", name: "game clock tick, running in seconds", size: size, kioskd: .samples(g.tick),
                                note: "damage \(fmt(g.damageFraction * 100, 1)) % of the frame", key: "counter.game_clock_tick"))
                }
                log.say("counter \(size)")
                attempt("counter at \(size)") {
                    let c = try SceneBenches.counter(size: size, runs: n)
                    var p: [String: Any] = [:]
                    if let peer { attempt("peer counter at \(size)") { p = try peer.bench("counter", size: size, frames: n) } }
                    res.add(Row(section: "counter", name: "roll frame, 1 digit (damage)", size: size, kioskd: .samples(c.roll1),
                                peer: Peer.samples(p, "roll_frame_ms").map { .samples($0) },
                                note: "damage \(fmt(c.rollDamageFraction * 100, 1)) % of the frame", key: "counter.roll1"))
                    res.add(Row(section: "counter", name: "roll frame, 6 digits (damage)", size: size, kioskd: .samples(c.roll6),
                                peer: Peer.samples(p, "roll6_frame_ms").map { .samples($0) }, key: "counter.roll6"))
                    res.add(Row(section: "counter", name: "full redraw", size: size, kioskd: .samples(c.full),
                                peer: Peer.samples(p, "full_redraw_ms").map { .samples($0) }, key: "counter.full"))
                    res.add(Row(section: "counter", name: "headroom fps (1000 / median 6-digit roll)", size: size,
                                kioskd: .value(1000 / c.roll6.median, unit: "fps"),
                                peer: Peer.samples(p, "roll6_frame_ms").map { .value(1000 / $0.median, unit: "fps") },
                                vsFloor: false, note: "at p99: \(fmt(1000 / c.roll6.p99, 0)) fps", key: "counter.headroom_fps"))
                }
            }
            if run("paint") {
                log.say("paint \(size)")
                attempt("paint at \(size)") {
                    let counts = quick ? [10, 1000] : [10, 1000, 10000]
                    let pf = try SceneBenches.paint(size: size, runs: n, strokeCounts: counts)
                    var p: [String: Any] = [:]
                    if let peer { attempt("peer paint at \(size)") {
                        p = try peer.bench("paint", size: size, frames: n, extra: ["--strokes", counts.map(String.init).joined(separator: ",")])
                    } }
                    for (count, s) in pf.segment {
                        res.add(Row(section: "paint", name: "add a segment, \(count) strokes", size: size, kioskd: .samples(s),
                                    peer: Peer.samples(p, "segment_ms", "\(count)").map { .samples($0) }, key: "paint.segment.\(count)"))
                    }
                    res.add(Row(section: "paint", name: "undo the latest stroke, ~1000 strokes", size: size, kioskd: .samples(pf.undo),
                                peer: Peer.samples(p, "undo_ms").map { .samples($0) }, note: "peer: redraws all strokes", key: "paint.undo"))
                    res.add(Row(section: "paint", name: "undo past 64 kept patches (rebuild)", size: size, kioskd: .samples(pf.deepUndo),
                                peer: Peer.samples(p, "undo_ms").map { .samples($0) }, note: "~900 strokes redrawn", key: "paint.undo_rebuild"))
                    res.add(Row(section: "paint", name: "touch → flip request", size: size, kioskd: .samples(pf.touchToFlip),
                                peer: Peer.samples(p, "touch_to_flip_ms").map { .samples($0) }, vsFloor: false, key: "paint.touch_to_flip"))
                }
            }
        }

        let main = sizeList.first { $0 == Size(width: 1920, height: 1080) } ?? sizeList[0]
        if run("clock") {
            log.say("idle on the clock, \(fmt(idleS, 0)) s at \(main) after \(fmt(settleS, 0)) s")
            attempt("idle clock") {
                let i = try SceneBenches.idle(kind: "clock", size: main, seconds: idleS, settle: settleS)
                var peerCPU: Metric?, peerWake: Metric?
                if let peer { attempt("peer idle clock") {
                    let r = try peer.idle("clock", size: main, seconds: idleS)
                    peerCPU = .value(r.cpu / r.wall * 3600, unit: "CPU s/h")
                    peerWake = .value(r.nvcsw / r.wall, unit: "/s")
                } }
                res.add(Row(section: "idle", name: "CPU seconds per hour, idle clock", size: main,
                            kioskd: .value(i.cpuSecondsPerHour, unit: "CPU s/h"), peer: peerCPU, vsFloor: false,
                            note: "over \(fmt(i.seconds, 1)) s wall after \(fmt(settleS, 0)) s", key: "idle.cpu_per_hour"))
                res.add(Row(section: "idle", name: "event-loop wake-ups per second", size: main,
                            kioskd: .value(i.wakeupsPerSecond, unit: "/s"), vsFloor: false, key: "idle.wakeups"))
                res.add(Row(section: "idle", name: "voluntary context switches /s", size: main,
                            kioskd: .value(i.voluntarySwitchesPerSecond, unit: "/s"), peer: peerWake, vsFloor: false,
                            key: "idle.nvcsw"))
                res.add(Row(section: "idle", name: "frames presented per second", size: main,
                            kioskd: .value(i.framesPerSecond, unit: "/s"), vsFloor: false, key: "idle.fps"))
                let t = try SceneBenches.idle(kind: "clock", size: main, seconds: idleS, settle: settleS, config: [("background", .string("theme"))])
                res.add(Row(section: "idle", name: "CPU s per hour, clock background = \"theme\"", size: main,
                            kioskd: .value(t.cpuSecondsPerHour, unit: "CPU s/h"), vsFloor: false,
                            note: "\(fmt(t.wakeupsPerSecond, 2)) wake-ups/s", key: "idle.cpu_per_hour_theme"))
            }
        }
        if run("counter") {
            log.say("counter frame rate while rolling at \(main)")
            attempt("counter fps") {
                let fps = try SceneBenches.counterFPS(size: main, seconds: quick ? 2 : 5)
                res.add(Row(section: "counter", name: "fps delivered while rolling (real loop)", size: main,
                            kioskd: .value(fps, unit: "fps"), vsFloor: false, key: "counter.fps"))
            }
            log.say("idle on a counter scene with a stopped game clock, \(fmt(idleS, 0)) s at \(main)")
            attempt("idle game clock") {
                let i = try SceneBenches.gameClockIdle(size: main, seconds: idleS)
                res.add(Row(section: "idle", name: "CPU s per hour, counter with a stopped game clock", size: main,
                            kioskd: .value(i.cpuSecondsPerHour, unit: "CPU s/h"), vsFloor: false,
                            note: "\(fmt(i.wakeupsPerSecond, 2)) wake-ups/s, \(fmt(i.framesPerSecond, 2)) frames/s", key: "idle.cpu_per_hour_game_clock"))
            }
        }

        // Startup and memory: one process per scene.
        let me = Spawn.selfPath()
        for kind in ["clock", "counter", "paint"] where run(kind) {
            log.say("startup \(kind) at \(main)")
            attempt("startup \(kind)") {
                var ff: [Double] = [], rss: [Double] = [], toMain: [Double] = []
                for _ in 0..<(quick ? 2 : 7) {
                    let r = try Spawn.run([me, "first-frame", "--scene", kind, "--size", "\(main)"], keepStderr: true)
                    guard r.succeeded, let m = r.markerMs else {
                        throw SceneBenches.BenchError(description: "first-frame child for \(kind) failed (status \(r.status))")
                    }
                    ff.append(m); rss.append(Double(r.peakRSSKiB) / 1024)
                    if let mm = r.mainMs { toMain.append(mm) }
                }
                var pff: [Double] = [], prss: [Double] = []
                if let peer { attempt("peer startup \(kind)") {
                    for _ in 0..<(quick ? 2 : 5) {
                        let r = try peer.firstFrame(kind, size: main)
                        guard r.succeeded, let m = r.markerMs else { throw SceneBenches.BenchError(description: "peer \(kind).py --first-frame failed") }
                        pff.append(m); prss.append(Double(r.peakRSSKiB) / 1024)
                    }
                } }
                res.add(Row(section: "startup", name: "\(kind): exec → first frame", size: main, kioskd: .samples(Samples(ff)),
                            peer: pff.isEmpty ? nil : .samples(Samples(pff)), vsFloor: false,
                            note: toMain.isEmpty ? "" : "of which exec → main() \(fmtMs(Samples(toMain).median)) ms", key: "startup.\(kind)"))
                res.add(Row(section: "memory", name: "\(kind): peak RSS (MB)", size: main,
                            kioskd: .value(Samples(rss).max, unit: "MB"),
                            peer: prss.isEmpty ? nil : .value(Samples(prss).max, unit: "MB"), vsFloor: false, key: "memory.\(kind)"))
            }
        }

        // The real daemon: exec → READY=1, idle CPU of all its threads, peak RSS.
        if let kioskd = Daemon.locate() {
            let dir = "/tmp/kioskd-bench-daemon-\(getpid())"
            mkdir(dir, 0o700)
            for kind in ["clock", "counter", "paint"] where run(kind) {
                log.say("kioskd daemon, \(kind) at \(main)")
                attempt("kioskd daemon \(kind)") {
                    let config = try Daemon.writeConfig(kind: kind, size: main, dir: dir)
                    var ready: [Double] = [], rss: [Double] = []
                    var idle: DaemonRun?
                    for k in 0..<(quick ? 2 : 5) {
                        let hold = (kind == "clock" && k == 0) ? idleS : 0.3
                        let settle = (kind == "clock" && k == 0) ? settleS : 1
                        let r = try Daemon.run(kioskd: kioskd, config: config, dir: dir, holdSeconds: hold, settleSeconds: settle)
                        ready.append(r.readyMs); rss.append(Double(r.peakRSSKiB) / 1024)
                        if kind == "clock" && k == 0 { idle = r }
                        if !r.stoppedCleanly { res.notes.append("kioskd (\(kind)) did not exit 0 on SIGTERM") }
                    }
                    res.add(Row(section: "daemon", name: "kioskd \(kind): exec → READY=1", size: main, kioskd: .samples(Samples(ready)),
                                peer: res.row("startup.\(kind)", main)?.peer, vsFloor: false, note: "READY=1 follows the first frame", key: "daemon.ready.\(kind)"))
                    res.add(Row(section: "daemon", name: "kioskd \(kind): peak RSS (MB)", size: main,
                                kioskd: .value(Samples(rss).max, unit: "MB"), peer: res.row("memory.\(kind)", main)?.peer,
                                vsFloor: false, note: "VmHWM", key: "daemon.rss.\(kind)"))
                    if let idle {
                        res.add(Row(section: "daemon", name: "kioskd clock idle: CPU s per hour", size: main,
                                    kioskd: .value(idle.idleCPUPerHour, unit: "CPU s/h"), peer: res.row("idle.cpu_per_hour", main)?.peer,
                                    vsFloor: false, note: "all \(idle.threads) threads, \(fmt(idleS, 0)) s after \(fmt(settleS, 0)) s", key: "daemon.idle_cpu"))
                        res.add(Row(section: "daemon", name: "kioskd clock idle: context switches /s", size: main,
                                    kioskd: .value(idle.wakeupsPerSecond, unit: "/s"), peer: res.row("idle.nvcsw", main)?.peer,
                                    vsFloor: false, note: "voluntary, all threads", key: "daemon.idle_switches"))
                    }
                }
            }
            if run("clock") {
                // Two 1080p outputs with a clock each beside one, in the same run: what a second
                // output costs (target: what a second single-output daemon would, no more).
                log.say("kioskd daemon, clock on one and on two outputs at \(main)")
                attempt("kioskd daemon two outputs") {
                    var one: [DaemonRun] = [], two: [DaemonRun] = []
                    for _ in 0..<(quick ? 1 : 2) {
                        for (count, into) in [(1, 0), (2, 1)] {
                            let config = try Daemon.writeConfig(kind: "clock", size: main, dir: dir, outputs: count)
                            let r = try Daemon.run(kioskd: kioskd, config: config, dir: dir, holdSeconds: idleS, settleSeconds: settleS)
                            if into == 0 { one.append(r) } else { two.append(r) }
                            if !r.stoppedCleanly { res.notes.append("kioskd (clock, \(count) outputs) did not exit 0 on SIGTERM") }
                        }
                    }
                    func median(_ runs: [DaemonRun], _ f: (DaemonRun) -> Double) -> Double { Samples(runs.map(f)).median }
                    let cpu1 = median(one) { $0.idleCPUPerHour }, cpu2 = median(two) { $0.idleCPUPerHour }
                    let sw1 = median(one) { $0.wakeupsPerSecond }, sw2 = median(two) { $0.wakeupsPerSecond }
                    let rss1 = median(one) { Double($0.peakRSSKiB) / 1024 }, rss2 = median(two) { Double($0.peakRSSKiB) / 1024 }
                    res.add(Row(section: "outputs", name: "clock idle CPU s/h: 1 output | 2 outputs", size: main,
                                kioskd: .value(cpu2, unit: "CPU s/h"), vsFloor: false,
                                note: "1 output \(fmt(cpu1, 1)); 2 outputs / 1 output = \(fmt(cpu2 / max(cpu1, 0.001), 2))× (target ≤ 2×)", key: "outputs.idle_cpu"))
                    res.add(Row(section: "outputs", name: "clock idle context switches /s: 1 output | 2 outputs", size: main,
                                kioskd: .value(sw2, unit: "/s"), vsFloor: false,
                                note: "1 output \(fmt(sw1, 1)); both clocks tick on the same second boundary", key: "outputs.idle_switches"))
                    res.add(Row(section: "outputs", name: "clock peak RSS (MB): 1 output | 2 outputs", size: main,
                                kioskd: .value(rss2, unit: "MB"), vsFloor: false,
                                note: "1 output \(fmt(rss1, 1)); the second output adds \(fmt(rss2 - rss1, 1)) MB (a \(main) framebuffer is \(fmt(Double(main.area * 4) / 1_048_576, 1)) MB)", key: "outputs.rss"))
                }
            }
            try? FileManager.default.removeItem(atPath: dir)
        } else {
            res.notes.append("kioskd not built next to kioskd-bench: the daemon rows are missing (swift build -c release --product kioskd with the same --scratch-path)")
        }

        if run("clock") && run("counter") {
            log.say("phone page: tap → flip request, 100 live streams at \(main)")
            attempt("web") {
                let w = try WebBench.run(size: main, runs: quick ? 20 : 100, idleSeconds: idleS)
                res.add(Row(section: "web", name: "phone tap → flip request (HTTP POST on loopback)", size: main, kioskd: .samples(w.tapToFlip),
                            vsFloor: false, note: "target ≤ 5 ms median", key: "web.tap_to_flip"))
                res.add(Row(section: "web", name: "clock frame p99, no live stream", size: main, kioskd: .value(w.clockP99.none, unit: "ms"),
                            vsFloor: false, key: "web.clock_p99_none"))
                res.add(Row(section: "web", name: "clock frame p99, \(w.streams) live streams", size: main, kioskd: .value(w.clockP99.streams, unit: "ms"),
                            vsFloor: false, note: "target ≤ 1.1 × without", key: "web.clock_p99_streams"))
                res.add(Row(section: "web", name: "idle CPU s/h, no live stream", size: main, kioskd: .value(w.idleCPUPerHour.none, unit: "CPU s/h"),
                            vsFloor: false, key: "web.idle_cpu_none"))
                res.add(Row(section: "web", name: "idle CPU s/h, \(w.streams) live streams", size: main, kioskd: .value(w.idleCPUPerHour.streams, unit: "CPU s/h"),
                            vsFloor: false, note: "target ≤ +0.5 CPU s/h", key: "web.idle_cpu_streams"))
            }
        }
        if !noMqtt { attempt("MQTT") { try MQTTBench.run(res: res, size: main, runs: n, idleSeconds: idleS, log: log) } }

        let report = Report(results: res, main: main, quick: quick, runs: n)
        print(report.table())
        if let json { try report.writeJSON(to: json); log.say("wrote \(json)") }
        if let plot { try Plot.draw(res, to: plot); log.say("wrote \(plot)") }
        if let doc = updateDoc { try report.updateDoc(doc, command: CommandLine.arguments.dropFirst().joined(separator: " ")); log.say("updated \(doc)") }
    }
}

/// Progress lines on stderr so the table on stdout stays clean.
struct Progress {
    func say(_ s: String) { FileHandle.standardError.write(Data("kioskd-bench: \(s)\n".utf8)) }
}
