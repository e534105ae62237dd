#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskRender
import KioskScenes
import KioskTesting
import KioskPosix

/// Per-frame, idle and latency measurements of kioskd's scenes through the SceneManager.
enum SceneBenches {
    struct BenchError: Error, CustomStringConvertible { var description: String }

    /// Runs `body` once and checks it presented exactly one more frame.
    static func presented(_ rig: Rig, _ what: String, _ body: () throws -> Void) throws {
        let before = rig.display.presentCount
        try body()
        guard rig.display.presentCount == before + 1 else {
            throw BenchError(description: "\(what): expected one present, got \(rig.display.presentCount - before)")
        }
    }

    // MARK: clock

    struct ClockFigures { var tick: Samples; var damageFraction: Double }

    /// One tick: the wall clock moves one second, the manager's timer handler runs (update,
    /// re-arm the next-second timer), then the loop draws and presents the damage.
    static func clockTick(size: Size, runs: Int, config: [(String, ConfigValue)] = []) throws -> ClockFigures {
        let rig = try Rig(kind: "clock", size: size, manualClock: true, extraConfig: config)
        try rig.start()
        return try secondTicks(rig, "clock tick", size: size, runs: runs)
    }

    /// `runs` ticks of one second each (and the first three, not timed), each presenting one frame.
    static func secondTicks(_ rig: Rig, _ what: String, size: Size, runs: Int) throws -> ClockFigures {
        let clock = rig.manualTime!
        var area = 0
        let s = try measure(runs: runs) {
            try presented(rig, what) {
                clock.advance(seconds: 1)
                rig.manager.tick()
                try rig.pump()
            }
            area += rig.display.damageHistory.last?.area ?? 0
        }
        return ClockFigures(tick: s, damageFraction: Double(area) / Double((runs + 3) * size.area))
    }

    /// The tick's parts on the canvas path (the path of partial frames on a DRM display): the
    /// scene's draw into a frame canvas of its own alone, and the copy of its damage into the
    /// display's framebuffer (what a DRM back buffer gets).
    static func clockParts(size: Size, runs: Int) throws -> (draw: Samples, copy: Samples) {
        let rig = try Rig(kind: "clock", size: size, manualClock: true)
        try rig.start()
        let canvas = try Canvas(size: size)
        // The first draw into the new canvas repaints everything (not timed: the first 3 are not).
        rig.scene.layout(size: size)
        let clock = rig.manualTime!
        let fb = rig.display.framebuffer.pixels
        var draw: [Double] = [], copy: [Double] = []
        for k in 0..<(runs + 3) {
            clock.advance(seconds: 1)
            _ = rig.scene.update(now: rig.now)
            let t0 = nowNanos(.monotonic)
            let damage = rig.scene.draw(into: canvas)
            let px = canvas.pixels
            let t1 = nowNanos(.monotonic)
            for r in damage.rects { blit(px, into: fb, rect: r, rotation: .r0) }
            let t2 = nowNanos(.monotonic)
            if k >= 3 { draw.append(Double(t1 - t0) / 1e6); copy.append(Double(t2 - t1) / 1e6) }
        }
        return (Samples(draw), Samples(copy))
    }

    struct IdleFigures { var cpuSecondsPerHour: Double; var wakeupsPerSecond: Double; var framesPerSecond: Double
        var voluntarySwitchesPerSecond: Double; var seconds: Double }

    /// The real loop on the system clocks for `seconds` of wall time: CPU (getrusage) and the
    /// loop's wake-ups (epoll_wait returns), after `settle` seconds (at least one).
    static func idle(kind: String, size: Size, seconds: Double, settle: Double = 1, config: [(String, ConfigValue)] = []) throws -> IdleFigures {
        let rig = try Rig(kind: kind, size: size, manualClock: false, extraConfig: config)
        try rig.start()
        // Run `settle` seconds first (the first frames render each digit's stamp once), and end
        // off a second boundary so the run holds whole ticks.
        try rig.loop.schedule(after: Int64(settle * 1e9) + 200_000_000) { [loop = rig.loop] _ in loop.stop() }
        try rig.loop.run()
        var ru0 = rusage(); getrusage(Int32(RUSAGE_SELF.rawValue), &ru0)
        let w0 = rig.loop.wakeups, f0 = rig.display.presentCount
        let t0 = nowNanos(.monotonic)
        try rig.loop.schedule(after: Int64(seconds * 1e9)) { [loop = rig.loop] _ in loop.stop() }
        try rig.loop.run()
        let t1 = nowNanos(.monotonic)
        var ru1 = rusage(); getrusage(Int32(RUSAGE_SELF.rawValue), &ru1)
        let wall = Double(t1 - t0) / 1e9
        // Two of the wake-ups are the benchmark's own: its stop timer and the stop request.
        let wakeups = Double(rig.loop.wakeups - w0) - 2
        return IdleFigures(cpuSecondsPerHour: (cpuSeconds(ru1) - cpuSeconds(ru0)) / wall * 3600,
                           wakeupsPerSecond: wakeups / wall,
                           framesPerSecond: Double(rig.display.presentCount - f0) / wall,
                           voluntarySwitchesPerSecond: Double(ru1.ru_nvcsw - ru0.ru_nvcsw) / wall, seconds: wall)
    }

    // MARK: counter

    struct CounterFigures { var roll1: Samples; var roll6: Samples; var full: Samples; var rollDamageFraction: Double }

    /// Roll frames at 60 per simulated second (1 digit: +1 increments; 6 digits: 099999 → 100000) and full redraws.
    static func counter(size: Size, runs: Int) throws -> CounterFigures {
        let rig = try Rig(kind: "counter", size: size, manualClock: true)
        try rig.start()
        guard let control = rig.scene as? CounterControl, let name = control.counterNames.first else {
            throw BenchError(description: "the counter scene has no counters")
        }
        let clock = rig.manualTime!
        func settle() throws {
            clock.advance(seconds: 2)
            rig.manager.tick()
            try rig.pump()
        }
        /// Frames of one animation after a change, each timed; stops when the scene stops asking for frames.
        func rollFrames(into out: inout [Double], area: inout Int) throws {
            for _ in 0..<240 {
                guard rig.scene.nextDeadline(now: rig.now) != nil else { break }
                let before = rig.display.presentCount
                let t0 = nowNanos(.monotonic)
                clock.advance(ns: 16_666_667)
                rig.manager.tick()
                try rig.pump()
                let t1 = nowNanos(.monotonic)
                if rig.display.presentCount > before {
                    out.append(Double(t1 - t0) / 1e6)
                    area += rig.display.damageHistory.last?.area ?? 0
                }
            }
        }
        var one: [Double] = [], six: [Double] = []
        var area1 = 0, area6 = 0
        try control.showEdit(.set(123456), name, now: rig.now)
        rig.manager.sceneDidChange()
        try rig.pump()
        try settle()
        while one.count < runs {
            try control.showEdit(.increment, name, now: rig.now)
            rig.manager.sceneDidChange()
            try rig.pump()
            try rollFrames(into: &one, area: &area1)
            try settle()
            if one.isEmpty { throw BenchError(description: "incrementing the counter drew no roll frames") }
        }
        while six.count < runs {
            try control.showEdit(.set(99999), name, now: rig.now)
            rig.manager.sceneDidChange()
            try rig.pump()
            try settle()
            clock.advance(seconds: 1)
            try control.showEdit(.set(100000), name, now: rig.now)
            rig.manager.sceneDidChange()
            try rig.pump()
            var ignored = 0
            let n = six.count
            try rollFrames(into: &six, area: &ignored)
            area6 += ignored
            if six.count == n { throw BenchError(description: "099999 → 100000 drew no roll frames") }
            try settle()
        }
        let full = try measure(runs: runs) {
            try presented(rig, "counter full redraw") {
                // What a display asks for after unblanking or a hotplug: lay out, draw everything.
                rig.display.onEvent?(.needsFullRedraw)
                try rig.pump()
            }
        }
        _ = area6
        return CounterFigures(roll1: Samples(Array(one.prefix(runs))), roll6: Samples(Array(six.prefix(runs))), full: full,
                              rollDamageFraction: Double(area1) / Double(max(one.count, 1) * size.area))
    }

    /// Frames the real loop delivers per second while the counter keeps rolling (a +1 every 0.25 s).
    static func counterFPS(size: Size, seconds: Double) throws -> Double {
        let rig = try Rig(kind: "counter", size: size, manualClock: false)
        try rig.start()
        guard let control = rig.scene as? CounterControl, let name = control.counterNames.first else {
            throw BenchError(description: "the counter scene has no counters")
        }
        let loop = rig.loop
        var bump: ((EventLoop.TimerFire) -> Void)!
        bump = { _ in
            try? control.showEdit(.increment, name, now: rig.now)
            rig.manager.sceneDidChange()
            _ = try? loop.schedule(after: 250_000_000, bump)
        }
        bump(.expired)
        let f0 = rig.display.presentCount
        let t0 = nowNanos(.monotonic)
        try loop.schedule(after: Int64(seconds * 1e9)) { _ in loop.stop() }
        try loop.run()
        let wall = Double(nowNanos(.monotonic) - t0) / 1e9
        bump = nil
        return Double(rig.display.presentCount - f0) / wall
    }

    // MARK: paint

    struct PaintFigures { var segment: [(strokes: Int, samples: Samples)]; var undo: Samples; var deepUndo: Samples; var touchToFlip: Samples }

    /// Adds one finished stroke through the manager (down, motions, up) and draws it.
    static func addStroke(_ rig: Rig, _ pts: [Point]) throws {
        rig.manager.input(rig.touch(.down, pts[0].x, pts[0].y))
        for p in pts.dropFirst() { rig.manager.input(rig.touch(.motion, p.x, p.y)) }
        rig.manager.input(rig.touch(.up, pts.last!.x, pts.last!.y))
        try rig.pump()
    }

    static func paint(size: Size, runs: Int, strokeCounts: [Int]) throws -> PaintFigures {
        let rig = try Rig(kind: "paint", size: size, manualClock: true)
        try rig.start()
        guard let control = rig.scene as? PaintControl else { throw BenchError(description: "the paint scene has no PaintControl") }
        let clock = rig.manualTime!
        var segment: [(Int, Samples)] = []
        var i = 0
        for n in strokeCounts {
            while control.strokeCount < n {
                // Build the painting straight through the scene (no frame per stroke), then draw once.
                let pts = benchStroke(i)
                _ = rig.scene.handle(rig.touch(.down, pts[0].x, pts[0].y), now: rig.now)
                for p in pts.dropFirst() { _ = rig.scene.handle(rig.touch(.motion, p.x, p.y), now: rig.now) }
                _ = rig.scene.handle(rig.touch(.up, pts.last!.x, pts.last!.y), now: rig.now)
                i += 1
                if i > n * 2 + 100 { throw BenchError(description: "the paint scene does not keep strokes (\(control.strokeCount) after \(i))") }
            }
            rig.manager.setNeedsFrame(full: true)
            try rig.pump()
            // One long stroke in progress: each sample adds one segment and presents it.
            rig.manager.input(rig.touch(.down, 0.25, 0.5))
            try rig.pump()
            var k = 0
            let s = try measure(runs: runs) {
                k += 1
                clock.advance(ns: 8_000_000)
                let x = 0.25 + Double((k * 7) % 960) / 1920, y = 0.5 + Double((k * 13) % 200 - 100) / 1080
                try presented(rig, "paint segment") {
                    rig.manager.input(rig.touch(.motion, x, y))
                    try rig.pump()
                }
            }
            rig.manager.input(rig.touch(.up, 0.5, 0.5))
            try rig.pump()
            control.undo()   // drop the long stroke again so the count stays n
            rig.manager.sceneDidChange()
            try rig.pump()
            segment.append((n, s))
        }
        // Undo with ~1 000 strokes: add one stroke (untimed), then time undo + its frame.
        while control.strokeCount > 1000 { control.undo() }
        rig.manager.setNeedsFrame(full: true)
        try rig.pump()
        var u: [Double] = []
        for k in 0..<min(runs, 50) {
            try addStroke(rig, benchStroke(20_000 + k))
            let t0 = nowNanos(.monotonic)
            try presented(rig, "paint undo") {
                control.undo()
                rig.manager.sceneDidChange()
                try rig.pump()
            }
            u.append(Double(nowNanos(.monotonic) - t0) / 1e6)
        }
        // Undo further back than the kept layer patches: each undo rebuilds the layer from the history.
        for _ in 0..<64 { control.undo() }
        rig.manager.sceneDidChange()
        try rig.pump()
        var deep: [Double] = []
        for _ in 0..<min(runs, 20) {
            let t0 = nowNanos(.monotonic)
            try presented(rig, "paint deep undo") {
                control.undo()
                rig.manager.sceneDidChange()
                try rig.pump()
            }
            deep.append(Double(nowNanos(.monotonic) - t0) / 1e6)
        }
        let lat = try touchToFlip(rig, runs: runs)
        return PaintFigures(segment: segment, undo: Samples(u), deepUndo: Samples(deep), touchToFlip: lat)
    }

    /// A touch written into a pipe the loop watches (as libinput's fd) until the display's
    /// present() has copied the frame (when a DRM backend asks for the flip).
    static func touchToFlip(_ rig: Rig, runs: Int) throws -> Samples {
        var fds: [Int32] = [0, 0]
        try Posix.call("pipe") { pipe(&fds) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC); _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        defer { close(fds[0]); close(fds[1]) }
        var k = 0
        let id = try rig.loop.watch(fd: fds[0]) {
            var b: UInt8 = 0
            while read(fds[0], &b, 1) == 1 {
                k += 1
                let x = 0.3 + Double((k * 5) % 600) / 1920, y = 0.5 + Double(k % 50) / 1080
                rig.manager.input(rig.touch(.motion, x, y))
            }
        }
        defer { rig.loop.unwatch(id) }
        rig.manager.input(rig.touch(.down, 0.3, 0.5))
        try rig.pump()
        var out: [Double] = []
        for n in 0..<(runs + 3) {
            rig.manualTime?.advance(ns: 8_000_000)
            let before = rig.display.presentCount
            var one: UInt8 = 1
            let t0 = nowNanos(.monotonic)
            _ = write(fds[1], &one, 1)
            try rig.loop.runOnce(timeoutMs: 1000)
            guard rig.display.presentCount == before + 1 else {
                throw BenchError(description: "touch-to-flip: the touch produced \(rig.display.presentCount - before) presents")
            }
            if n >= 3 { out.append(Double(rig.display.lastPresentNs - t0) / 1e6) }
        }
        rig.manager.input(rig.touch(.up, 0.5, 0.5))
        try rig.pump()
        return Samples(out)
    }
}
