import KioskTestTraits
import Testing
import Glibc
import Foundation
import CTimex

@testable import KioskPosix
import KioskCore

private func tempDir() -> String {
    var template = Array("/tmp/k-wall-XXXXXX".utf8CString)
    let p = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: p!)
}

private func touch(_ path: String) {
    let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
    precondition(fd >= 0, "create \(path): errno \(errno)")
    close(fd)
}

private func removeTree(_ path: String) {
    _ = try? FileManager.default.removeItem(atPath: path)
}

/// A mutable kernel reading shared with the monitor's closure.
private final class FakeKernel {
    var reading = KernelClockReading.unsynchronized
}

@Suite(.ownThreads) struct TimeSyncTests {
    @Test(arguments: [
        (KernelClockReading(result: TIME_OK, status: STA_PLL), true),
        (KernelClockReading(result: TIME_OK, status: 0), true),
        (KernelClockReading(result: TIME_INS, status: STA_PLL | STA_INS), true),
        (KernelClockReading(result: TIME_ERROR, status: 0), false),
        (KernelClockReading(result: TIME_OK, status: STA_UNSYNC), false),
        (KernelClockReading(result: TIME_ERROR, status: STA_UNSYNC), false),
        (KernelClockReading(result: -1, status: 0, errno: EPERM), false),
    ])
    func kernelReadingDecidesSynchronised(_ reading: KernelClockReading, _ expected: Bool) {
        #expect(reading.synchronized == expected)
    }

    @Test func realAdjtimexReadSucceedsAndAgreesWithItsStatus() {
        let r = KernelClockReading.read()
        #expect(r.result >= 0, "adjtimex read failed: errno \(r.errno)")
        #expect(r.synchronized == (r.result != TIME_ERROR && r.status & STA_UNSYNC == 0))
    }

    @Test func statusDescriptions() {
        #expect(TimeSyncStatus(kernel: false, timesyncd: false).description == "not synchronised")
        #expect(TimeSyncStatus(kernel: true, timesyncd: false).description == "synchronised (kernel)")
        #expect(TimeSyncStatus(kernel: false, timesyncd: true).description == "synchronised (timesyncd)")
        #expect(TimeSyncStatus(kernel: true, timesyncd: true).description == "synchronised (kernel, timesyncd)")
    }

    @Test func flagFileAppearingSyncsWithinOneLoopIteration() throws {
        let root = tempDir()
        defer { removeTree(root) }
        let dir = root + "/timesync"
        #expect(mkdir(dir, 0o755) == 0)
        let loop = try EventLoop()
        var seen: [TimeSyncStatus] = []
        let monitor = try TimeSyncMonitor(loop: loop, directory: dir, kernelClock: { .unsynchronized },
                                          kernelRecheckSeconds: 0) { seen.append($0) }
        #expect(!monitor.status.synchronized)
        touch(dir + "/synchronized")
        // One iteration, bounded: the inotify event is already queued.
        let n = try loop.runOnce(timeoutMs: 5000)
        #expect(n >= 1)
        #expect(seen == [TimeSyncStatus(kernel: false, timesyncd: true)])
        #expect(monitor.status.synchronized)
        // Quiet afterwards: handling an event must not queue another (no watch churn).
        #expect(try loop.runOnce(timeoutMs: 100) == 0)
        // Removed (timesyncd stopped, /run cleaned): unsynchronised again.
        #expect(unlink(dir + "/synchronized") == 0)
        try loop.runOnce(timeoutMs: 5000)
        #expect(seen.last == TimeSyncStatus(kernel: false, timesyncd: false))
        #expect(seen.count == 2)
    }

    @Test func folderCreatedLaterIsFollowedFromItsAncestors() throws {
        let root = tempDir()
        defer { removeTree(root) }
        let dir = root + "/run/systemd/timesync"
        let loop = try EventLoop()
        var seen: [TimeSyncStatus] = []
        let monitor = try TimeSyncMonitor(loop: loop, directory: dir, kernelClock: { .unsynchronized },
                                          kernelRecheckSeconds: 0) { seen.append($0) }
        #expect(mkdir(root + "/run", 0o755) == 0)
        try loop.runOnce(timeoutMs: 5000)
        #expect(mkdir(root + "/run/systemd", 0o755) == 0)
        try loop.runOnce(timeoutMs: 5000)
        #expect(seen.isEmpty)
        // The folder and the file together, as timesyncd's first sync does (mkdir -p, touch).
        #expect(mkdir(dir, 0o755) == 0)
        touch(dir + "/synchronized")
        try loop.runOnce(timeoutMs: 5000)
        #expect(seen == [TimeSyncStatus(kernel: false, timesyncd: true)])
        #expect(monitor.status.timesyncd)
        // The replaced ancestor watch reports IN_IGNORED once; then quiet.
        try loop.runOnce(timeoutMs: 100)
        #expect(try loop.runOnce(timeoutMs: 100) == 0)
        #expect(seen.count == 1)
    }

    @Test func folderRemovedAndRecreatedIsWatchedAgain() throws {
        let root = tempDir()
        defer { removeTree(root) }
        let dir = root + "/timesync"
        #expect(mkdir(dir, 0o755) == 0)
        let loop = try EventLoop()
        var seen: [TimeSyncStatus] = []
        let monitor = try TimeSyncMonitor(loop: loop, directory: dir, kernelClock: { .unsynchronized },
                                          kernelRecheckSeconds: 0) { seen.append($0) }
        // Both before the loop runs: the old watch dies with its folder.
        #expect(rmdir(dir) == 0)
        #expect(mkdir(dir, 0o755) == 0)
        try loop.runOnce(timeoutMs: 5000)
        touch(dir + "/synchronized")
        try loop.runOnce(timeoutMs: 5000)
        #expect(seen == [TimeSyncStatus(kernel: false, timesyncd: true)])
        #expect(monitor.status.timesyncd)
    }

    @Test func flagFileAlreadyPresentAtStart() throws {
        let root = tempDir()
        defer { removeTree(root) }
        touch(root + "/synchronized")
        let loop = try EventLoop()
        let monitor = try TimeSyncMonitor(loop: loop, directory: root, kernelClock: { .unsynchronized },
                                          kernelRecheckSeconds: 0) { _ in }
        #expect(monitor.status == TimeSyncStatus(kernel: false, timesyncd: true))
        #expect(monitor.flagPath == root + "/synchronized")
    }

    @Test func kernelSeamChangesAreReportedOnRecheckAndByTheTimer() throws {
        let root = tempDir()
        defer { removeTree(root) }
        let kernel = FakeKernel()
        let loop = try EventLoop()
        var seen: [TimeSyncStatus] = []
        let monitor = try TimeSyncMonitor(loop: loop, directory: root + "/absent", kernelClock: { kernel.reading },
                                          kernelRecheckSeconds: 1) { seen.append($0) }
        #expect(monitor.status == TimeSyncStatus(kernel: false, timesyncd: false))
        monitor.recheck()
        #expect(seen.isEmpty) // nothing changed, nothing reported
        kernel.reading = .synchronizedReading
        monitor.recheck()
        #expect(seen == [TimeSyncStatus(kernel: true, timesyncd: false)])
        // Lost again (maxerror grew past the limit: TIME_ERROR): the periodic re-read sees it.
        kernel.reading = KernelClockReading(result: TIME_ERROR, status: STA_UNSYNC)
        let start = nowNanos(.monotonic)
        while seen.count < 2 && nowNanos(.monotonic) - start < 5_000_000_000 { try loop.runOnce(timeoutMs: 5000) }
        #expect(seen.last == TimeSyncStatus(kernel: false, timesyncd: false))
    }

    @Test func timeZoneReplacementByRenameIsSeen() throws {
        let root = tempDir()
        defer { removeTree(root) }
        #expect(mkdir(root + "/etc", 0o755) == 0)
        let localtime = root + "/etc/localtime"
        #expect(symlink("/usr/share/zoneinfo/Etc/UTC", localtime) == 0)
        let loop = try EventLoop()
        var calls = 0
        let watcher = try TimeZoneWatcher(loop: loop, localtimePath: localtime) { calls += 1 }
        // Unrelated files in the folder do not count.
        touch(root + "/etc/hostname")
        try loop.runOnce(timeoutMs: 0)
        #expect(calls == 0)
        // timedatectl set-timezone: a new symlink renamed over the old one.
        #expect(symlink("/usr/share/zoneinfo/Europe/Berlin", root + "/etc/.#localtime1234") == 0)
        #expect(rename(root + "/etc/.#localtime1234", localtime) == 0)
        try loop.runOnce(timeoutMs: 5000)
        #expect(calls == 1)
        #expect(SystemTimeZone.identifier(localtimePath: localtime, tz: nil) == "Europe/Berlin")
        watcher.stop()
    }

    /// The zone file replaced and its folder moved away before the loop reads the event, then
    /// the folder put back (the same one, or a new one in its place): the watcher calls again once
    /// the folder is back, and the zone read then is the new one.
    @Test(arguments: [false, true])
    func zoneFolderMovedAwayAndBackIsFollowed(newFolder: Bool) throws {
        let root = tempDir()
        defer { removeTree(root) }
        let etc = root + "/etc", away = root + "/etc.away"
        #expect(mkdir(etc, 0o755) == 0)
        let localtime = etc + "/localtime"
        #expect(symlink("/usr/share/zoneinfo/Etc/UTC", localtime) == 0)
        let loop = try EventLoop()
        var seen: [String?] = []
        let watcher = try TimeZoneWatcher(loop: loop, localtimePath: localtime) {
            seen.append(SystemTimeZone.identifier(localtimePath: localtime, tz: nil))
        }
        /// Runs the loop until `done` (at most 3 s).
        func run(until done: () -> Bool) throws {
            let start = nowNanos(.monotonic)
            while !done() && nowNanos(.monotonic) - start < 3_000_000_000 { try loop.runOnce(timeoutMs: 100) }
        }
        for (round, zone) in ["Europe/Berlin", "Asia/Tokyo", "America/New_York"].enumerated() {
            // In one go: the new zone renamed over the old, the folder moved away.
            #expect(symlink("/usr/share/zoneinfo/" + zone, etc + "/.#localtime") == 0)
            #expect(rename(etc + "/.#localtime", localtime) == 0)
            #expect(rename(etc, away) == 0)
            try run { !seen.isEmpty }
            let whileAway = seen.count
            #expect(whileAway >= 1, "round \(round): the change is seen")
            if newFolder {
                // A new folder with the zone in it takes the old one's place.
                #expect(mkdir(etc + ".new", 0o755) == 0)
                #expect(symlink("/usr/share/zoneinfo/" + zone, etc + ".new/localtime") == 0)
                #expect(rename(etc + ".new", etc) == 0)
            } else {
                #expect(rename(away, etc) == 0)
            }
            try run { seen.count > whileAway }
            #expect(seen.count > whileAway, "round \(round): no call after the folder came back (\(seen))")
            #expect(seen.last == zone, "round \(round): \(seen)")
            // What happens in the folder from now on is seen as before.
            seen = []
            touch(etc + "/hostname")
            // The old folder, moved away and replaced, is not the system's any more.
            if newFolder { removeTree(away) }
            try loop.runOnce(timeoutMs: 100)
            #expect(seen.isEmpty, "round \(round): an unrelated file does not count (\(seen))")
        }
        // A folder moved away is no longer watched: what changes there is not the system's zone.
        #expect(rename(etc, away) == 0)
        try run { !seen.isEmpty }
        seen = []
        #expect(unlink(away + "/localtime") == 0 && symlink("/usr/share/zoneinfo/Etc/GMT", away + "/localtime") == 0)
        try loop.runOnce(timeoutMs: 200)
        #expect(seen.isEmpty, "\(seen)")
        watcher.stop()
    }

    @Test func zoneIdentifiersFromTZAndSymlink() throws {
        let root = tempDir()
        defer { removeTree(root) }
        let link = root + "/localtime"
        #expect(symlink("../usr/share/zoneinfo/posix/America/New_York", link) == 0)
        #expect(SystemTimeZone.identifier(localtimePath: link, tz: nil) == "America/New_York")
        #expect(SystemTimeZone.identifier(localtimePath: link, tz: "Asia/Tokyo") == "Asia/Tokyo")
        #expect(SystemTimeZone.identifier(localtimePath: link, tz: ":Asia/Tokyo") == "Asia/Tokyo")
        #expect(SystemTimeZone.identifier(localtimePath: link, tz: ":/usr/share/zoneinfo/Europe/Paris") == "Europe/Paris")
        #expect(SystemTimeZone.identifier(localtimePath: link, tz: ":" + link) == "America/New_York")
        guard case .rules(let rules) = SystemTimeZone.current(localtimePath: link, tz: nil) else {
            Issue.record("no zone rules for America/New_York")
            return
        }
        #expect(rules.identifier == "America/New_York")
        #expect(rules.offset(at: 1_768_003_200) == -5 * 3600)
        // A regular file (a copy) names no zone.
        touch(root + "/copy")
        #expect(SystemTimeZone.identifier(localtimePath: root + "/copy", tz: nil) == nil)
    }
}

/// Whether the process's zone is at UTC+0 now (test machines and containers usually are).
private let localOffsetIsZero: Bool = {
    var t = time(nil)
    var tmv = tm()
    _ = localtime_r(&t, &tmv)
    return tmv.tm_gmtoff == 0
}()

/// Changes the process's TZ: one test at a time, and only between zones at UTC+0 (UTC and GMT
/// differ in their abbreviation alone), so other tests reading the local zone meanwhile see the
/// same offset. On a machine whose zone is not at UTC+0 they would not: the suite is skipped there.
@Suite(.ownThreads, .serialized, .enabled(if: localOffsetIsZero, "changes TZ between UTC+0 zones only")) struct TimeZoneReloadTests {
    private func abbreviation() -> String {
        var t = time(nil)
        var tmv = tm()
        _ = localtime_r(&t, &tmv)
        return String(cString: tmv.tm_zone)
    }

    @Test func reloadMakesAReplacedZoneFileEffective() throws {
        let saved = getenv("TZ").map { String(cString: $0) }
        defer {
            if let saved { setenv("TZ", saved, 1) } else { unsetenv("TZ") }
            SystemTimeZone.reload()
        }
        let root = tempDir()
        defer { removeTree(root) }
        #expect(mkdir(root + "/zoneinfo", 0o755) == 0)
        #expect(mkdir(root + "/zoneinfo/Etc", 0o755) == 0)
        for z in ["UTC", "GMT"] {
            let data = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/zoneinfo/Etc/" + z))
            try data.write(to: URL(fileURLWithPath: root + "/zoneinfo/Etc/" + z))
        }
        let localtime = root + "/localtime"
        #expect(symlink(root + "/zoneinfo/Etc/UTC", localtime) == 0)
        // The TZ file form, honoured by glibc as /etc/localtime is when TZ is unset.
        setenv("TZ", ":" + localtime, 1)
        SystemTimeZone.reload()
        #expect(abbreviation() == "UTC")

        // The watcher sees the replacement; its handler reloads, as the daemon's will.
        let loop = try EventLoop()
        var seenInHandler: [String] = []
        let watcher = try TimeZoneWatcher(loop: loop, localtimePath: localtime) {
            tzset()
            seenInHandler.append(self.abbreviation()) // glibc alone keeps the old zone while TZ is unchanged
            SystemTimeZone.reload()
            seenInHandler.append(self.abbreviation())
        }
        #expect(symlink(root + "/zoneinfo/Etc/GMT", root + "/new") == 0)
        #expect(rename(root + "/new", localtime) == 0)
        try loop.runOnce(timeoutMs: 5000)
        #expect(seenInHandler == ["UTC", "GMT"])
        #expect(abbreviation() == "GMT")
        guard case .rules(let rules) = SystemTimeZone.current(localtimePath: "/nonexistent") else {
            Issue.record("no zone rules for the TZ file's zone")
            return
        }
        #expect(rules.identifier == "Etc/GMT")
        watcher.stop()
    }
}
