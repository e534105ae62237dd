#if canImport(Glibc)
import Glibc
#endif
import FoundationEssentials
import KioskControl
import KioskCore
import KioskPosix
import Logging

/// Where the daemon looks for time sync, the time zone and sysfs. The defaults are the real
/// system; tests point them at temporary folders and a fake `adjtimex`.
public struct WallHooks {
    /// Stands for `/run/systemd/timesync` (`KIOSK_TIMESYNC_DIR` when set: a test's folder, in
    /// which a `synchronized` file says the clock is).
    public var timesyncDirectory = getenv("KIOSK_TIMESYNC_DIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        ?? TimeSyncMonitor.defaultDirectory
    /// The kernel's clock discipline (`adjtimex`).
    public var kernelClock: () -> KernelClockReading = KernelClockReading.read
    public var kernelRecheckSeconds = 60
    /// The zone file followed; nil: the file TZ names (":/path" or "/path"), else /etc/localtime.
    public var localtimePath: String?
    /// Prefix of /sys (`KIOSK_SYSFS_ROOT`; "" for the real sysfs).
    public var sysfsRoot = SysfsRoot.current()
    /// Whether kioskd has a logind session; nil: ask logind.
    public var hasSession: Bool?
    public init() {}

    /// The zone file TZ names (glibc's ":/path" or "/path" form), else `/etc/localtime`.
    static func localtimePath(tz: String?) -> String {
        if var t = tz, !t.isEmpty {
            if t.hasPrefix(":") { t.removeFirst() }
            if t.hasPrefix("/") { return t }
        }
        return "/etc/localtime"
    }
}

/// The time sync monitor, time-zone watcher, backlight and light sensor of a running daemon.
final class WallRuntime {
    var timeSync: TimeSyncMonitor?
    var zoneWatcher: TimeZoneWatcher?
    var ambient: AmbientLightMonitor?
    var ambientSensor: AmbientLightSensor?
    var localtimePath = "/etc/localtime"
    /// TZ named the zone file (":/path"): it is rewritten to the zone's identifier on each change.
    var tzNamesFile = false
    /// "Europe/Berlin (+01:00)".
    var zoneText = ""
    /// Why the kernel's clock state cannot be read (nil: it can).
    var kernelNote: String?
}

extension Daemon {
    static let brightnessKey = "daemon.brightness"

    /// Starts following time sync and the time zone, opens the backlight and the light sensor.
    /// Never waits: each source reports on the loop when it changes.
    func startWall() {
        let hooks = wallHooks
        let wall = wallRuntime
        // Time sync. A sandbox may refuse even the read-only adjtimex (systemd's ProtectClock=):
        // then only timesyncd's flag can say the clock is synchronised.
        let reading = hooks.kernelClock()
        if reading.result < 0 {
            let note = "\(Posix.error("adjtimex", errno: reading.errno).message): the kernel's clock state cannot be read, so only"
                + " systemd-timesyncd's flag is followed; with chrony or ntpd let kioskd read it (a unit drop-in with"
                + " ProtectClock=no and SystemCallFilter=adjtimex)"
            wall.kernelNote = note
            logger.notice("\(note)")
        }
        do {
            let monitor = try TimeSyncMonitor(loop: loop, directory: hooks.timesyncDirectory, kernelClock: hooks.kernelClock,
                                              kernelRecheckSeconds: hooks.kernelRecheckSeconds) { [weak self] status in
                self?.timeSyncChanged(status)
            }
            wall.timeSync = monitor
            if monitor.status.synchronized {
                logger.info("system clock \(monitor.status)")
            } else {
                logger.notice("system clock not synchronised (yet): the clock shows a mark until it is; enable systemd-timesyncd (timedatectl set-ntp true) or chrony",
                              metadata: ["watching": "\(monitor.flagPath)"])
            }
            applyTimeSync(monitor.status)
        } catch {
            logger.error("cannot follow time synchronisation; the clock is taken as synchronised", metadata: ["error": "\(error)"])
        }
        // Time zone.
        let path = hooks.localtimePath ?? WallHooks.localtimePath(tz: getenv("TZ").map { String(cString: $0) })
        wall.localtimePath = path
        wall.tzNamesFile = path != "/etc/localtime" && getenv("TZ").map { WallHooks.localtimePath(tz: String(cString: $0)) } == path
        useZoneFile(path)
        do {
            wall.zoneWatcher = try TimeZoneWatcher(loop: loop, localtimePath: path) { [weak self] in self?.timeZoneChanged() }
        } catch {
            logger.error("cannot follow time-zone changes; a new zone takes effect at the next start", metadata: ["error": "\(error)"])
        }
        // Backlight. A headless display has no panel: "auto" finds none there (a named device is still used).
        let choice = config.display.backend == .headless && config.wall.backlight == .auto ? BacklightChoice.none : config.wall.backlight
        if let b = PanelBacklight.open(choice, loop: loop, sysfsRoot: hooks.sysfsRoot, hasSession: hooks.hasSession, logger: logger) {
            blanking.backlight = b
        }
        // Ambient light.
        if let a = config.wall.ambient {
            do {
                let sensor = try AmbientLightSensor.find(named: a.sensor, root: hooks.sysfsRoot)
                wall.ambientSensor = sensor
                let monitor = AmbientLightMonitor(scheduler: loop, follower: a.follower, intervalNanos: Int64(a.intervalSeconds * 1e9),
                                                  read: { try sensor.readLux() },
                                                  onLevel: { [weak self] p in self?.blanking.ambientPercent = p },
                                                  onError: { [weak self] e in self?.logger.error("cannot read the light sensor", metadata: ["error": "\(e)"]) })
                wall.ambient = monitor
                logger.notice("following the ambient light sensor", metadata: ["sensor": "\(sensor.name.isEmpty ? sensor.path : sensor.name)"])
                monitor.start()
            } catch {
                logger.error("no ambient light sensor; brightness follows the schedule only", metadata: ["error": "\(error)"])
            }
        }
    }

    func stopWall() {
        wallRuntime.timeSync?.stop()
        wallRuntime.zoneWatcher?.stop()
        wallRuntime.ambient?.stop()
        wallRuntime.timeSync = nil
        wallRuntime.zoneWatcher = nil
        wallRuntime.ambient = nil
    }

    private func timeSyncChanged(_ status: TimeSyncStatus) {
        if status.synchronized {
            logger.notice("system clock \(status)")
        } else {
            logger.warning("system clock no longer synchronised")
        }
        applyTimeSync(status)
        changes.noteChange()
    }

    func applyTimeSync(_ status: TimeSyncStatus) {
        for h in heads { h.manager.timeSynchronized = status.synchronized }
        fleet?.timeSynchronizationChanged()
    }

    /// Makes the zone of `path` the one glibc uses. When TZ names a file, TZ is set to the
    /// identifier that file (a symlink into zoneinfo) stands for, the name `GET /status` shows.
    private func useZoneFile(_ path: String) {
        if wallRuntime.tzNamesFile, let id = SystemTimeZone.identifier(localtimePath: path, tz: nil) {
            // On the loop's thread, like SystemTimeZone.reload's own setenv.
            setenv("TZ", id, 1)
        }
        SystemTimeZone.reload()
        let now = Int64(time(nil))
        let offset = LocalZone.system.offset(at: now)
        let name = SystemTimeZone.identifier(localtimePath: path) ?? SystemTimeZone.abbreviation(at: now)
        let sign = offset < 0 ? "-" : "+"
        let a = abs(offset)
        wallRuntime.zoneText = "\(name) (\(sign)\(TextFormat.zeroPadded(a / 3600, width: 2)):\(TextFormat.zeroPadded((a / 60) % 60, width: 2)))"
    }

    private func timeZoneChanged() {
        useZoneFile(wallRuntime.localtimePath)
        logger.notice("time zone changed", metadata: ["zone": "\(wallRuntime.zoneText)"])
        for h in heads { h.blanking.zoneChanged() }
        refreshTheme()
        for h in heads {
            h.manager.tick()
            h.manager.setNeedsFrame(full: true)
        }
        publishStatus()
        changes.noteChange()
    }

    /// The time, zone and backlight part of `GET /status`.
    func wallStatus(into s: inout StatusAnswer) {
        let sync = wallRuntime.timeSync?.status
        s.timeSync = StatusAnswer.TimeSync(synchronized: sync?.synchronized ?? true,
                                           source: sync.map { st in
                                               st.synchronized ? [st.kernel ? "kernel" : nil, st.timesyncd ? "timesyncd" : nil].compactMap { $0 }.joined(separator: ", ") : "none"
                                           } ?? "not watched", note: wallRuntime.kernelNote)
        s.timeZone = wallRuntime.zoneText
        if let b = blanking.backlight {
            s.backlight = StatusAnswer.Backlight(method: b.method, device: b.device.name, percent: b.percent, raw: b.raw,
                                                 maxBrightness: b.device.maxBrightness, level: blanking.level,
                                                 schedule: blanking.schedule?.description, error: b.lastError)
        } else {
            s.backlight = StatusAnswer.Backlight(method: "none", device: nil, percent: nil, raw: nil, maxBrightness: nil,
                                                 level: blanking.level, schedule: blanking.schedule?.description, error: nil)
        }
        s.backlight?.lux = wallRuntime.ambient?.lastLux.map { ($0 * 10).rounded() / 10 }
    }

    /// `POST /brightness` as a choice: saved first (a level that cannot be kept is refused), then written.
    func brightnessChoice(_ percent: Double) -> ControlCommandHandler.Asked {
        guard blanking.backlight != nil else { return .answer(noBacklightToSet) }
        return .choice(.init(saves: [(Daemon.brightnessKey, "\(percent)")], subject: "the brightness",
                             refusal: { "cannot save the brightness \(BlankController.text(percent)): \($0); the brightness is unchanged" }) { [self] saved, note in
            setBrightness(percent, saved: saved, note: note)
        })
    }

    private var noBacklightToSet: ControlResponse {
        .error(409, "no backlight to set: [display] backlight = \"\(config.wall.backlight)\" found none (see the log at start)")
    }

    /// Writes a brightness already kept (`brightnessChoice`) and answers.
    private func setBrightness(_ percent: Double, saved: Bool?, note: String?) -> ControlResponse {
        guard let b = blanking.backlight else { return noBacklightToSet }
        var answer = BrightnessAnswer(percent: percent, method: b.method, device: b.device.name)
        answer.saved = saved
        answer.note = note
        do { try blanking.setBrightness(percent: percent) } catch {
            logger.error("cannot set the backlight", metadata: ["error": "\(error)"])
            return .error(500, "\(error)")
        }
        answer.raw = b.raw
        answer.blanked = display.isBlanked
        if blanking.schedule != nil {
            answer.note = [answer.note, "the brightness schedule takes over again at its next period"].compactMap { $0 }.joined(separator: "; ")
        }
        logger.info("brightness set", metadata: ["percent": "\(percent)", "raw": "\(b.raw)"])
        return .json(200, answer)
    }

    /// `GET /brightness`.
    func brightnessAnswer() -> ControlResponse {
        guard let b = blanking.backlight else {
            return .error(409, "no backlight: [display] backlight = \"\(config.wall.backlight)\" found none (see the log at start)")
        }
        var answer = BrightnessAnswer(percent: blanking.level ?? b.percent, method: b.method, device: b.device.name)
        answer.ok = nil
        answer.raw = b.raw
        answer.blanked = display.isBlanked
        return .json(200, answer)
    }
}
