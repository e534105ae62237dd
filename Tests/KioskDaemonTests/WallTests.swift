import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskScenes
import KioskState
import KioskTesting
import KioskTestTraits
import Testing
import KioskPosix

/// A sysfs-shaped tree for the daemon: root/sys/class/backlight/NAME/… .
private struct SysTree {
    let root: String
    init(_ dir: String) { root = dir + "/sysroot" }

    func write(_ relative: String, _ text: String) {
        let path = root + "/" + relative
        try! FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try! text.write(toFile: path, atomically: false, encoding: .utf8)
    }
    func read(_ relative: String) -> String {
        ((try? String(contentsOfFile: root + "/" + relative, encoding: .utf8)) ?? "<missing>").trimmingCharacters(in: .whitespacesAndNewlines)
    }
    func backlight(_ name: String, max: Int, brightness: Int) {
        write("sys/class/backlight/\(name)/type", "raw\n")
        write("sys/class/backlight/\(name)/max_brightness", "\(max)\n")
        write("sys/class/backlight/\(name)/brightness", "\(brightness)\n")
    }
    func brightness(_ name: String) -> String { read("sys/class/backlight/\(name)/brightness") }
}

/// The wall panel wired into the daemon: time sync, the brightness schedule and commands, the
/// backlight writer, against temporary folders standing for /run/systemd/timesync and /sys.
@Suite(.ownThreads) struct WallDaemonTests {
    func daemon(_ dir: String, display extra: String = "", scenes: String? = nil, state: StateStore = MemoryStateStore(),
                time: TimeSource = SystemTimeSource(), on loop: ManualEventLoop? = nil, size: Size = Size(width: 320, height: 180),
                hooks: (inout WallHooks) -> Void = { _ in }) throws -> (Daemon, HeadlessDisplay) {
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "\(size.width)x\(size.height)"
        \(extra)
        \(scenes ?? "[scene.score]\nkind = \"counter\"\n[[scene.score.counter]]\nname = \"HOME\"")
        """, dir)
        let (d, display) = try loop.map { try headlessDaemon(path, size: size, state: state, on: $0) }
            ?? headlessDaemon(path, size: size, state: state, time: time)
        var h = WallHooks()
        h.timesyncDirectory = dir + "/timesync"
        h.kernelClock = { .synchronizedReading }
        h.kernelRecheckSeconds = 0
        h.localtimePath = dir + "/localtime"
        h.sysfsRoot = dir + "/sysroot"
        h.hasSession = false
        hooks(&h)
        d.wallHooks = h
        return (d, display)
    }

    // MARK: time sync

    @Test func unsynchronisedClockShowsTheMarkUntilTheFlagAppearsThenWithinOneFrameNot() throws {
        let dir = tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/timesync", withIntermediateDirectories: true)
        // On virtual time: the loop steps when the test says, and the inotify descriptor is made
        // ready when the kernel says it is readable (no wall-clock wait for either).
        let loop = ManualEventLoop()
        let (d, display) = try daemon(dir, scenes: "[scene.clock]\nkind = \"clock\"\nbackground = \"theme\"", on: loop) {
            $0.kernelClock = { .unsynchronized }
        }
        d.startAsKioskd()
        loop.step()
        #expect(d.manager.frameCount == 1, "the first frame at the end of the first iteration")
        let clock = try #require(d.manager.current as? ClockScene)
        let status = d.status()
        #expect(status.timeSync == StatusAnswer.TimeSync(synchronized: false, source: "none"))
        let mark = clock.markRect
        #expect(!mark.isEmpty, "the clock draws the mark while the time is not synchronised")
        let background = clock.backgroundColor
        func markPixels() -> Int { mark.width * mark.height - Pixels.count(background, in: display.framebuffer, rect: mark) }
        #expect(markPixels() > 20, "mark \(mark) has \(markPixels()) non-background pixels")

        // systemd-timesyncd's flag appears: one loop iteration reads it and draws the frame.
        let frames = display.presentCount
        #expect(FileManager.default.createFile(atPath: dir + "/timesync/synchronized", contents: nil))
        #expect(!loop.makeReadyWhatTheKernelReports().isEmpty, "the flag's inotify event is readable")
        loop.step()
        #expect(display.presentCount == frames + 1, "one frame after the flag's event")
        #expect(markPixels() == 0, "the mark's pixels are gone in that frame")
        #expect(d.status().timeSync == StatusAnswer.TimeSync(synchronized: true, source: "timesyncd"))
        d.shutdown()
    }

    @Test func refusedAdjtimexIsSaidWithTheFixAndTimesyncdStillCounts() throws {
        let dir = tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/timesync", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: dir + "/timesync/synchronized", contents: nil))
        let (d, _) = try daemon(dir) { $0.kernelClock = { KernelClockReading(result: -1, status: 0, errno: EPERM) } }
        d.startAsKioskd()
        let sync = try #require(d.status().timeSync)
        #expect(sync.synchronized && sync.source == "timesyncd")
        #expect(sync.note?.hasPrefix("adjtimex failed: Operation not permitted (errno 1): ") == true, "\(sync)")
        #expect(sync.note?.contains("ProtectClock=no") == true)
        d.shutdown()
    }

    @Test func kernelSynchronisedAtStartIsSaidInStatus() throws {
        let (d, _) = try daemon(tempDir())
        d.startAsKioskd()
        #expect(d.status().timeSync == StatusAnswer.TimeSync(synchronized: true, source: "kernel"))
        #expect(d.status().backlight?.method == "none")
        d.shutdown()
    }

    // MARK: brightness

    @Test(arguments: [(1, "1"), (7, "3"), (255, "102"), (120000, "48000")])
    func brightnessCommandWritesTheRawValueAndIsKeptAcrossRestarts(_ max: Int, _ raw: String) throws {
        let dir = tempDir()
        let sys = SysTree(dir)
        sys.backlight("panel", max: max, brightness: max)
        let state = MemoryStateStore()
        let (d, _) = try daemon(dir, display: "backlight = \"panel\"", state: state)
        d.startAsKioskd()
        let r = try d.answer(.brightness(percent: 40))
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
        #expect(sys.brightness("panel") == raw)
        let answer = try r.decode(BrightnessAnswer.self)
        #expect(answer.raw == Int(raw) && answer.method == "sysfs" && answer.device == "panel")
        let b = try #require(d.status().backlight)
        #expect(b.method == "sysfs" && b.device == "panel" && b.raw == Int(raw) && b.maxBrightness == max && b.level == 40)
        #expect(state.load("daemon.brightness") == "40.0")
        d.shutdown()

        // A restart sets the saved level again.
        sys.backlight("panel", max: max, brightness: max)
        let (again, _) = try daemon(dir, display: "backlight = \"panel\"", state: state)
        again.startAsKioskd()
        #expect(sys.brightness("panel") == raw)
        #expect(again.status().backlight?.level == 40)
        again.shutdown()
    }

    @Test func unwritableBrightnessFileIsAClearErrorNamingTheFileAndTheFix() throws {
        let dir = tempDir()
        let sys = SysTree(dir)
        sys.backlight("panel", max: 255, brightness: 255)
        let file = sys.root + "/sys/class/backlight/panel/brightness"
        if getuid() == 0 {
            // Root writes any regular file; a read-only sysfs attribute refuses even root (EACCES).
            try FileManager.default.removeItem(atPath: file)
            #expect(symlink("/sys/devices/system/cpu/online", file) == 0)
        } else {
            #expect(chmod(file, 0o444) == 0)
        }
        let state = MemoryStateStore()
        let (d, _) = try daemon(dir, display: "backlight = \"panel\"", state: state)
        d.startAsKioskd()
        let r = try d.answer(.brightness(percent: 40))
        #expect(r.status == 500)
        let message = r.errorMessage ?? ""
        #expect(message.hasPrefix("open \(file) failed: Permission denied (errno 13)"), "\(message)")
        #expect(message.contains("install the udev rule") && message.contains("group video"), "\(message)")
        #expect(d.status().backlight?.error?.contains(file) == true)
        d.shutdown()
    }

    /// With the command pipeline the level is saved on its thread and written to the backlight
    /// (and answered) only once it is on disk.
    @Test func brightnessIsWrittenOnlyOnceItsSaveIsDone() throws {
        let dir = tempDir()
        let sys = SysTree(dir)
        sys.backlight("panel", max: 255, brightness: 255)
        let state = HeldStore()
        // On virtual time: the test commits the pipeline's batch itself, so "before the save"
        // is every step of the loop until then, not a 50 ms wait.
        let loop = ManualEventLoop()
        let (d, _) = try daemon(dir, display: "backlight = \"panel\"", state: state, on: loop)
        d.startAsKioskd()
        var answer: ControlResponse?
        d.handle(.brightness(percent: 40)) { answer = $0 }
        loop.runPending()
        #expect(answer == nil && sys.brightness("panel") == "255", "written or answered before it was saved")
        #expect(d.commitBatches() == 1, "the level's save was not submitted")
        loop.runPending()
        #expect(answer?.status == 200)
        #expect(sys.brightness("panel") == "102")
        #expect(state.values["daemon.brightness"] == "40.0")
        d.shutdown()
    }

    @Test func noBacklightIsRefusedWithTheReason() throws {
        let (d, _) = try daemon(tempDir(), display: "backlight = \"none\"")
        d.startAsKioskd()
        let r = try d.answer(.brightness(percent: 40))
        #expect(r.status == 409)
        #expect(r.errorMessage?.contains("backlight = \"none\"") == true)
        d.shutdown()
    }

    func hhmm(_ s: Int) -> String {
        let m = ((s / 60) % 1440 + 1440) % 1440
        return String(format: "%02d:%02d", m / 60, m % 60)
    }

    /// One schedule: blank periods and brightness periods together; a fade passes the values in
    /// between; `off` blanks; a touch wakes an off period at the last lit level; a manual level
    /// holds until the next period. On virtual time: the daemon's own timers carry the fade, the
    /// blanking and the wake (nothing is evaluated by hand).
    @Test func brightnessScheduleFadesBlanksAndWakesToThePeriodsLevel() throws {
        let dir = tempDir()
        let sys = SysTree(dir)
        sys.backlight("panel", max: 255, brightness: 0)
        let start: Int64 = 1_700_000_000
        let sod = LocalZone.system.secondsSinceMidnight(at: start)
        let base = start - Int64(sod % 60) // a whole minute
        let b = Int(sod - sod % 60)
        let loop = ManualEventLoop(epochSeconds: base)
        var now = base
        func at(_ t: Int64) { loop.advance(seconds: base + t - now); now = base + t }
        let (d, display) = try daemon(dir, display: """
            backlight = "panel"
            [display.blank]
            wake_seconds = 30
            [display.brightness]
            schedule = ["\(hhmm(b - 3600)) 20%", "\(hhmm(b)) 100%", "\(hhmm(b + 3600)) off", "\(hhmm(b + 7200)) 50%"]
            fade_seconds = 600
            """, on: loop)
        d.startAsKioskd()
        #expect(sys.brightness("panel") == "51", "20 % at the fade's start")
        var seen: [Int] = []
        for step in stride(from: Int64(60), through: 300, by: 60) {
            at(step)
            seen.append(Int(sys.brightness("panel")) ?? -1)
        }
        #expect(seen == seen.sorted() && Set(seen).count == seen.count && seen.first! > 51,
                "every minute of the fade gives a new, higher value: \(seen)")
        #expect(sys.brightness("panel") == "153", "half way: 60 %")

        // A manual level holds until the next period, also past the end of a fade it interrupted.
        at(360)
        #expect(try d.answer(.brightness(percent: 30)).status == 200)
        #expect(sys.brightness("panel") == "77")
        at(700)
        #expect(sys.brightness("panel") == "77", "the fade's end is not a new period")
        at(1800)
        #expect(sys.brightness("panel") == "77")

        // Off: blanked; a touch lights it at the last lit level (100 %) for wake_seconds.
        at(3600 + 10)
        #expect(display.isBlanked)
        d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5)))
        d.manager.input(.touch(TouchEvent(.up, slot: 0, x: 0.5, y: 0.5)))
        #expect(!display.isBlanked)
        #expect(sys.brightness("panel") == "255")
        at(3600 + 45)
        #expect(display.isBlanked)
        // The next lit period: 50 % (fading from off is immediate).
        at(7200)
        #expect(!display.isBlanked)
        #expect(sys.brightness("panel") == "128")
        d.shutdown()
    }

    @Test func ambientSensorDimsBelowTheLevel() throws {
        let dir = tempDir()
        let sys = SysTree(dir)
        sys.backlight("panel", max: 100, brightness: 100)
        sys.write("sys/bus/iio/devices/iio:device0/name", "als\n")
        sys.write("sys/bus/iio/devices/iio:device0/in_illuminance_input", "10\n")
        let loop = ManualEventLoop()
        let (d, _) = try daemon(dir, display: """
            backlight = "panel"
            [display.ambient]
            curve = [[0, 10], [100, 100]]
            interval_seconds = 0.1
            """, on: loop)
        d.startAsKioskd()
        #expect(sys.brightness("panel") == "19", "10 lx: 19 %")
        sys.write("sys/bus/iio/devices/iio:device0/in_illuminance_input", "1000\n")
        // The next reading 0.1 s on, then the backlight's one-second fade.
        loop.advance(by: 1_200_000_000)
        #expect(sys.brightness("panel") == "100", "bright room: the level (100 %)")
        #expect(d.status().backlight?.lux == 1000)
        d.shutdown()
    }

    // MARK: config

    @Test func wallConfigErrorsNameFileLineAndKey() throws {
        let dir = tempDir()
        func load(_ display: String) -> String? {
            configError { _ = try loadConfig("[display]\n\(display)\n[scene.c]\nkind = \"clock\"\n", dir: dir) }
        }
        let file = dir + "/kioskd.toml"
        #expect(load("backlight = \"a/b\"")?.hasPrefix("\(file):2: key 'display.backlight': ") == true)
        #expect(load("pixel_shift = { pixels = 0, period_minutes = 3 }")?.hasPrefix("\(file):2: key 'display.pixel_shift.pixels': ") == true)
        #expect(load("[display.brightness]\nschedule = [\"07:00 100%\", \"25:00 20%\"]")?
            .hasPrefix("\(file):3: key 'display.brightness.schedule[1]': ") == true)
        #expect(load("[display.ambient]\ncurve = [[0, 5], [0, 30]]")?.contains("key 'display.ambient.curve'") == true)
        #expect(load("[display.brightness]\nschedule = [\"07:00 100%\"]\nfade = 3")?.contains("key 'display.brightness.fade': unknown key") == true)
        let c = try loadConfig("""
            [display]
            backlight = "intel_backlight"
            pixel_shift = { pixels = 4, period_minutes = 3 }
            [display.brightness]
            schedule = ["06:00 100%", "22:00 20%", "01:00 off"]
            fade_seconds = 600
            [scene.c]
            kind = "clock"
            """, dir: dir)
        #expect(c.wall.backlight == .named("intel_backlight"))
        #expect(c.wall.pixelOrbit?.pixels == 4)
        #expect(c.wall.brightness?.description == "01:00 off, 06:00 100%, 22:00 20%")
        #expect(c.wall.brightness?.fadeSeconds == 600)
    }
}

@Suite(.ownThreads) struct WallOrbitWiringTests {
    /// `[display] pixel_shift` reaches the scene manager at start and on reload.
    @Test func pixelShiftReachesTheManagerAndFollowsAReload() throws {
        let dir = tempDir()
        let text = { (shift: String) in """
            state_dir = "\(dir)/state"
            [display]
            backend = "headless"
            headless_size = "64x48"
            \(shift)
            [scene.c]
            kind = "clock"
            """ }
        let path = write(text("pixel_shift = { pixels = 3, period_minutes = 2 }"), dir)
        let (d, _) = try headlessDaemon(path)
        var h = WallHooks()
        h.timesyncDirectory = dir + "/timesync"
        h.kernelClock = { .synchronizedReading }
        h.localtimePath = dir + "/localtime"
        d.wallHooks = h
        d.startAsKioskd()
        #expect(d.manager.pixelOrbit == PixelOrbit(pixels: 3, periodNanos: 120_000_000_000))
        write(text(""), dir)
        if case .failure(let e) = d.reload() { Issue.record("\(e)") }
        #expect(d.manager.pixelOrbit == nil)
        d.shutdown()
    }
}

@Suite(.ownThreads) struct WallReloadTests {
    /// A reload applies a new brightness schedule at once (one period: all day at that level).
    @Test func reloadAppliesTheBrightnessSchedule() throws {
        let dir = tempDir()
        let dev = dir + "/sysroot/sys/class/backlight/panel"
        try FileManager.default.createDirectory(atPath: dev, withIntermediateDirectories: true)
        for (f, v) in [("type", "raw"), ("max_brightness", "255"), ("brightness", "255")] {
            try "\(v)\n".write(toFile: "\(dev)/\(f)", atomically: false, encoding: .utf8)
        }
        func brightness() -> String { ((try? String(contentsOfFile: "\(dev)/brightness", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines) }
        let text = { (extra: String) in """
            state_dir = "\(dir)/state"
            [display]
            backend = "headless"
            headless_size = "64x48"
            backlight = "panel"
            \(extra)
            [scene.c]
            kind = "clock"
            """ }
        let path = write(text(""), dir)
        let (d, _) = try headlessDaemon(path)
        var h = WallHooks()
        h.timesyncDirectory = dir + "/timesync"
        h.kernelClock = { .synchronizedReading }
        h.localtimePath = dir + "/localtime"
        h.sysfsRoot = dir + "/sysroot"
        h.hasSession = false
        d.wallHooks = h
        d.startAsKioskd()
        #expect(brightness() == "255", "no schedule: 100 %")
        write(text("[display.brightness]\nschedule = [\"00:00 20%\"]"), dir)
        if case .failure(let e) = d.reload() { Issue.record("\(e)") }
        #expect(brightness() == "51", "the reloaded schedule's 20 %")
        #expect(d.status().backlight?.schedule == "00:00 20%")
        d.shutdown()
    }
}
