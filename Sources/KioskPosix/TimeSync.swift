#if canImport(Glibc)
import Glibc
#endif
import CTimex
import KioskCore

/// What the kernel's clock discipline says (`adjtimex` with no modes: a read).
public struct KernelClockReading: Sendable, Equatable {
    /// The return value: TIME_OK … TIME_WAIT, TIME_ERROR (5) when the clock is not synchronised,
    /// or -1 when the call failed (`errno` then says why).
    public var result: Int32
    /// `timex.status` (STA_UNSYNC = 0x40 set while no NTP daemon has disciplined the clock).
    public var status: Int32
    public var errno: Int32

    public init(result: Int32, status: Int32, errno: Int32 = 0) {
        self.result = result
        self.status = status
        self.errno = errno
    }

    /// Synchronised as systemd-time-wait-sync counts it: the call succeeded, did not return
    /// TIME_ERROR, and STA_UNSYNC is clear.
    public var synchronized: Bool {
        result >= 0 && result != TIME_ERROR && status & STA_UNSYNC == 0
    }

    /// Reads the kernel's state now.
    public static func read() -> KernelClockReading {
        var tx = timex()
        tx.modes = 0
        let r = adjtimex(&tx)
        return KernelClockReading(result: r, status: tx.status, errno: r < 0 ? Glibc.errno : 0)
    }

    /// A never-synchronised reading (STA_UNSYNC, TIME_ERROR), for tests and fallbacks.
    public static let unsynchronized = KernelClockReading(result: TIME_ERROR, status: STA_UNSYNC)
    /// A synchronised reading (TIME_OK, STA_PLL), for tests.
    public static let synchronizedReading = KernelClockReading(result: TIME_OK, status: STA_PLL)
}

/// Whether the system clock can be trusted, and who says so.
public struct TimeSyncStatus: Sendable, Equatable, CustomStringConvertible {
    /// The kernel's clock discipline is synchronised (any NTP daemon: chrony, ntpd, timesyncd).
    public var kernel: Bool
    /// systemd-timesyncd's `synchronized` flag file exists.
    public var timesyncd: Bool

    public init(kernel: Bool, timesyncd: Bool) {
        self.kernel = kernel
        self.timesyncd = timesyncd
    }

    /// Either source is enough (as systemd-time-wait-sync decides).
    public var synchronized: Bool { kernel || timesyncd }

    /// For logs and `status`: "synchronised (kernel, timesyncd)" / "not synchronised".
    public var description: String {
        guard synchronized else { return "not synchronised" }
        let who = [kernel ? "kernel" : nil, timesyncd ? "timesyncd" : nil].compactMap { $0 }
        return "synchronised (" + who.joined(separator: ", ") + ")"
    }
}

/// Follows whether the system clock is synchronised, on a `KioskLoop`, without blocking:
///
/// - systemd-timesyncd's `synchronized` file in `/run/systemd/timesync`, watched with inotify.
///   The folder may not exist yet (timesyncd not started): the nearest existing ancestor is
///   watched and the watches follow the folder's creation, so the file's appearance is seen in
///   the loop iteration that reads the event.
/// - the kernel's `adjtimex` state, re-read on every inotify event, whenever the wall clock is
///   set (an NTP step cancels the loop's realtime timer) and every `kernelRecheckSeconds` (the
///   kernel has no notification for STA_UNSYNC clearing when a daemon only slews the clock).
///
/// `onChange` runs on the loop's thread the moment the combined status changes.
public final class TimeSyncMonitor {
    public static let defaultDirectory = "/run/systemd/timesync"

    private let loop: any KioskLoop
    private let directory: String
    private let kernelClock: () -> KernelClockReading
    private let recheckNanos: Int64
    private let onChange: (TimeSyncStatus) -> Void
    private var inotify: InotifyWatcher?
    private var wds: [Int32] = []
    private var watchedPath: String?
    private var recheckTimer: TimerID?
    private var clockTimer: TimerID?
    /// The last status read (also before any change was reported).
    public private(set) var status: TimeSyncStatus

    /// - Parameters:
    ///   - directory: stands for `/run/systemd/timesync` (tests pass a temporary folder).
    ///   - kernelClock: the `adjtimex` reading (tests inject one).
    ///   - kernelRecheckSeconds: how often the kernel state is read again (0: only on events).
    public init(loop: any KioskLoop, directory: String = TimeSyncMonitor.defaultDirectory,
                kernelClock: @escaping () -> KernelClockReading = KernelClockReading.read,
                kernelRecheckSeconds: Int = 60,
                onChange: @escaping (TimeSyncStatus) -> Void) throws {
        self.loop = loop
        self.directory = Self.normalized(directory)
        self.kernelClock = kernelClock
        self.recheckNanos = Int64(max(0, kernelRecheckSeconds)) * 1_000_000_000
        self.onChange = onChange
        self.status = TimeSyncStatus(kernel: kernelClock().synchronized, timesyncd: false)
        inotify = try InotifyWatcher(loop: loop) { [weak self] events in self?.handle(events) }
        rewatch()
        status.timesyncd = access(self.directory + "/synchronized", F_OK) == 0
        armTimers()
    }

    deinit {
        if let t = recheckTimer { loop.cancel(t) }
        if let t = clockTimer { loop.cancel(t) }
    }

    /// The path of the flag file watched.
    public var flagPath: String { directory + "/synchronized" }

    /// Reads both sources again; calls `onChange` when the status differs from the last one.
    public func recheck() {
        let new = TimeSyncStatus(kernel: kernelClock().synchronized,
                                 timesyncd: access(flagPath, F_OK) == 0)
        guard new != status else { return }
        status = new
        onChange(new)
    }

    /// Stops watching (timers cancelled, inotify closed).
    public func stop() {
        if let t = recheckTimer { loop.cancel(t); recheckTimer = nil }
        if let t = clockTimer { loop.cancel(t); clockTimer = nil }
        inotify = nil
        wds.removeAll()
        watchedPath = nil
    }

    private func handle(_ events: [InotifyWatcher.Event]) {
        var relevant = false
        for e in events {
            if e.mask & UInt32(IN_IGNORED) != 0 {
                // The kernel dropped a watch: one this monitor replaced (nothing new), or the
                // current one (its folder went away): then it must be set again.
                if wds.contains(e.wd) {
                    wds.removeAll { $0 == e.wd }
                    watchedPath = nil
                    relevant = true
                }
            } else {
                relevant = true
            }
        }
        guard relevant else { return }
        rewatch()
        recheck()
    }

    /// Watches the folder when it exists, else its nearest existing ancestor for the creation of
    /// the next path component. Repeats when a component appeared while the watches were being set.
    private func rewatch() {
        guard let inotify else { return }
        let folderMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB | IN_CLOSE_WRITE
                                | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
        let ancestorMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
        for _ in 0..<8 {
            var path = directory
            var mask = folderMask
            while !isDirectory(path) && path != "/" {
                path = PathText.folder(of: path)
                mask = ancestorMask
            }
            // Unchanged target: keep the watch (removing it would queue IN_IGNORED, another wake-up).
            if path == watchedPath, !wds.isEmpty { return }
            for wd in wds { inotify.remove(wd) }
            wds.removeAll()
            watchedPath = nil
            guard let wd = try? inotify.add(path: path, mask: mask) else { return }
            wds = [wd]
            watchedPath = path
            // The folder itself is watched, or the next component is still missing: done.
            if path == directory || !isDirectory(Self.child(of: path, toward: directory)) { return }
        }
    }

    private func armTimers() {
        if recheckNanos > 0 {
            recheckTimer = try? loop.schedule(after: recheckNanos) { [weak self] _ in
                guard let self else { return }
                self.recheck()
                self.armTimers()
            }
        }
        if clockTimer == nil {
            // Far in the future: it fires only with .clockChanged when the wall clock is set.
            let farAway = loop.now(.realtime) + 365 * 86_400 * 1_000_000_000
            clockTimer = try? loop.schedule(at: farAway, clock: .realtime) { [weak self] _ in
                guard let self else { return }
                self.clockTimer = nil
                self.recheck()
                self.armTimers()
            }
        }
    }

    private func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }

    static func normalized(_ path: String) -> String {
        var p = path
        while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
        return p
    }

    /// The component of `target` directly under `ancestor` ("/run" toward "/run/systemd/timesync" → "/run/systemd").
    static func child(of ancestor: String, toward target: String) -> String {
        let prefix = ancestor == "/" ? "/" : ancestor + "/"
        let rest = target.dropFirst(prefix.count)
        let first = rest.split(separator: "/").first.map(String.init) ?? ""
        return prefix + first
    }
}

/// Calls `onChange` on the loop's thread when the system time zone file is replaced — as
/// `timedatectl set-timezone` does (a new symlink renamed over `/etc/localtime`), or a copy written
/// in place — and when its folder goes away or comes back (moved or replaced as a whole: the zone
/// read while it was away is not the system's). Several events of one wake-up give one call.
/// Follow it with `SystemTimeZone.reload()`.
///
/// inotify follows inodes, not paths: a watch on the folder stays with the folder moved away and
/// sees nothing of the one put in its place. So the folder's parent is watched too, for entries
/// named as the folder; when one appears or goes, the folder's watch is set again on whatever the
/// path names then (or on nothing while it is missing).
public final class TimeZoneWatcher {
    private var inotify: InotifyWatcher?
    /// The folder of the zone file, the zone file's name in it, and the folder's name in its parent.
    private let folder: String
    private let name: String
    private let folderName: String
    private var folderWatch: Int32?
    private var parentWatch: Int32?
    private let onChange: () -> Void

    private static let folderMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE | IN_DELETE | IN_ATTRIB
                                           | IN_MOVE_SELF | IN_DELETE_SELF | IN_ONLYDIR)
    private static let parentMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR)

    /// - Parameter localtimePath: stands for `/etc/localtime` (tests pass one in a test root).
    /// Throws naming the path when the zone file's folder (or its parent) cannot be watched.
    public init(loop: any KioskLoop, localtimePath: String = "/etc/localtime", onChange: @escaping () -> Void) throws {
        let path = TimeSyncMonitor.normalized(localtimePath)
        folder = PathText.folder(of: path)
        name = Self.lastComponent(path)
        folderName = Self.lastComponent(folder)
        self.onChange = onChange
        let inotify = try InotifyWatcher(loop: loop) { [weak self] events in self?.handle(events) }
        self.inotify = inotify
        if folder != "/" {
            parentWatch = try inotify.add(path: PathText.folder(of: folder), mask: Self.parentMask)
        }
        folderWatch = try inotify.add(path: folder, mask: Self.folderMask)
    }

    public func stop() { inotify = nil }

    private func handle(_ events: [InotifyWatcher.Event]) {
        var zone = false, refolder = false
        for e in events {
            if e.isOverflow {
                zone = true
                refolder = true
            } else if e.wd == folderWatch {
                if e.mask & UInt32(IN_MOVE_SELF | IN_DELETE_SELF | IN_IGNORED) != 0 {
                    refolder = true
                    zone = true
                } else if e.name == name {
                    zone = true
                }
            } else if e.wd == parentWatch, e.name == folderName {
                refolder = true
                zone = true
            }
        }
        if refolder { watchFolder() }
        if zone { onChange() }
    }

    /// Sets the folder's watch on what the folder's path names now (none while it is missing);
    /// the watch left on a folder moved away is removed.
    private func watchFolder() {
        guard let inotify else { return }
        let now = try? inotify.add(path: folder, mask: Self.folderMask)
        if let old = folderWatch, old != now { inotify.remove(old) }
        folderWatch = now
    }

    private static func lastComponent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}
