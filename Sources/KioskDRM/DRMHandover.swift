#if canImport(Glibc)
import Glibc
#endif
import CKioskLazy
import CKioskLinux
import KioskCore
import Logging
import Synchronization

/// Keeps the picture on the screen while kioskd restarts under systemd (`systemctl restart`, a
/// package upgrade, `Restart=` after a crash), through the service manager's file descriptor
/// store (`FileDescriptorStoreMax=` in the unit):
///
/// - A card opened from its node is stored (`FDSTORE=1`, `FDNAME=drm-MAJOR-MINOR`): systemd keeps
///   a duplicate, so the open file — and with it DRM master and the framebuffers it scans out —
///   outlives the process.
/// - At a graceful exit (`exiting()`) a stored card keeps its picture: no CRTC given back, master
///   kept, the framebuffers on the file left in place (their memory handles are closed).
/// - The next kioskd receives the file (`LISTEN_FDS`, `LISTEN_FDNAMES`), takes it for the card it
///   would open when it is the same device (`st_rdev`), and after its first mode set removes the
///   framebuffers the previous process left (`DRMDeviceHandle.removeForeignFramebuffers`).
///
/// Without `NOTIFY_SOCKET` nothing is stored and every card is opened and given back as before.
/// When the store is off (`FileDescriptorStoreMax=0`) systemd drops the file: the exit path is
/// the same, and the kernel gives the console back when the last holder closes it.
public final class DRMHandover: Sendable {
    /// A descriptor passed at start (`SD_LISTEN_FDS_START` + index) and its name.
    public struct Passed: Sendable, Equatable {
        public let name: String
        public let fd: Int32
        public init(name: String, fd: Int32) { self.name = name; self.fd = fd }
    }

    private struct State {
        var passed: [Passed]
        var stored: Set<String> = []
        var exiting = false
    }

    private let notifySocket: String?
    private let state: Mutex<State>

    /// `passed`: the descriptors systemd handed over; `notifySocket`: `$NOTIFY_SOCKET` (nil: not
    /// under systemd, nothing is stored).
    public init(passed: [Passed], notifySocket: String?) {
        self.notifySocket = notifySocket.flatMap { $0.isEmpty ? nil : $0 }
        state = Mutex(State(passed: passed))
    }

    /// This process's: the descriptors in `LISTEN_FDS` (close-on-exec from now on), `NOTIFY_SOCKET`.
    public static let process: DRMHandover = {
        let env: (String) -> String? = { getenv($0).map { String(cString: $0) } }
        let passed = parse(env, pid: getpid())
        for p in passed { _ = fcntl(p.fd, F_SETFD, FD_CLOEXEC) }
        return DRMHandover(passed: passed, notifySocket: env("NOTIFY_SOCKET"))
    }()

    /// The descriptors `LISTEN_PID`/`LISTEN_FDS`/`LISTEN_FDNAMES` pass to process `pid` (none
    /// when they are meant for another process), as `sd_listen_fds_with_names(3)` reads them.
    public static func parse(_ env: (String) -> String?, pid: Int32) -> [Passed] {
        guard let p = env("LISTEN_PID").flatMap({ Int32($0) }), p == pid,
              let n = env("LISTEN_FDS").flatMap({ Int($0) }), n > 0, n < 4096 else { return [] }
        let names = env("LISTEN_FDNAMES").map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        return (0..<n).map { Passed(name: $0 < names.count && !names[$0].isEmpty ? names[$0] : "unknown", fd: 3 + Int32($0)) }
    }

    /// "drm-226-0": the store name of the character device `rdev`.
    public static func name(rdev: UInt64) -> String {
        let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & ~UInt64(0xfff))
        let minor = (rdev & 0xff) | ((rdev >> 12) & ~UInt64(0xff))
        return "drm-\(major)-\(minor)"
    }

    /// The device number of the character device `fd` is open on (nil: not one).
    static func rdev(fd: Int32) -> UInt64? {
        var st = stat()
        return fstat(fd, &st) == 0 ? characterDevice(st) : nil
    }

    /// The device number of the character device node `path` (nil: none there).
    static func rdev(path: String) -> UInt64? {
        var st = stat()
        return stat(path, &st) == 0 ? characterDevice(st) : nil
    }

    private static func characterDevice(_ st: stat) -> UInt64? {
        st.st_mode & mode_t(S_IFMT) == mode_t(S_IFCHR) ? UInt64(st.st_rdev) : nil
    }

    /// The store name of the device `fd` is open on (nil: not a character device).
    static func storeName(fd: Int32) -> String? { rdev(fd: fd).map(name(rdev:)) }

    /// A passed DRM descriptor open on the device of node `path`, taken out of the passed list
    /// (the caller owns it). Passed DRM descriptors of other devices stay for their own cards; when
    /// none matches, a line names what was passed and the device that will be opened instead.
    public func take(devicePath path: String, logger: Logger) -> Int32? {
        let drm = state.withLock { $0.passed.filter { $0.name.hasPrefix("drm-") } }
        guard !drm.isEmpty else { return nil }
        let want = Self.rdev(path: path)
        if let want, let hit = drm.first(where: { Self.rdev(fd: $0.fd) == want }) {
            state.withLock { s in s.passed.removeAll { $0 == hit } }
            logger.info("took the DRM device kept by systemd over a restart", metadata: ["drm.device": "\(path)", "drm.fdname": "\(hit.name)"])
            return hit.fd
        }
        let kept = drm.map { p in "\(p.name) (\(Self.storeName(fd: p.fd) ?? "not a device"))" }.joined(separator: ", ")
        logger.warning("the DRM device kept by systemd over the restart is not the configured card; opening the card",
                       metadata: ["drm.device": "\(path) (\(want.map(Self.name(rdev:)) ?? "no device node"))", "drm.kept": "\(kept)"])
        return nil
    }

    /// Gives up the passed DRM descriptors no card took (another card configured now): removed
    /// from the store and closed, so their pictures go.
    public func releaseUntaken(logger: Logger) {
        let left = state.withLock { s in
            let drm = s.passed.filter { $0.name.hasPrefix("drm-") }
            s.passed.removeAll { $0.name.hasPrefix("drm-") }
            return drm
        }
        for p in left {
            remove(name: p.name)
            close(p.fd)
            logger.notice("released a DRM device kept by systemd that no display uses", metadata: ["drm.fdname": "\(p.name)"])
        }
    }

    /// Asks systemd to keep `fd` (a DRM device) over a restart. False without `NOTIFY_SOCKET` or
    /// when the message could not be sent (said in `logger`).
    @discardableResult
    public func store(fd: Int32, logger: Logger) -> Bool {
        guard let socket = notifySocket, let name = Self.storeName(fd: fd) else { return false }
        var fds = [fd]
        let r = kiosk_notify_fds_to(socket, "FDSTORE=1\nFDNAME=\(name)", &fds, 1)
        guard r == 1 else {
            logger.warning("could not hand the DRM device to systemd's file descriptor store; a restart shows the console between pictures",
                           metadata: ["drm.fdname": "\(name)", "errno": "\(-r)"])
            return false
        }
        state.withLock { _ = $0.stored.insert(name) }
        logger.debug("DRM device handed to systemd's file descriptor store", metadata: ["drm.fdname": "\(name)"])
        return true
    }

    /// Takes the device of `fd` out of systemd's store (`FDSTOREREMOVE=1`): the card is given
    /// back, or was lost.
    public func forget(fd: Int32) {
        guard let name = Self.storeName(fd: fd) else { return }
        guard state.withLock({ $0.stored.remove(name) }) != nil else { return }
        remove(name: name)
    }

    /// Takes the device of `fd` out of systemd's store whether or not this process stored it
    /// (a kept file that is of no use any more).
    public func discard(fd: Int32) {
        guard let name = Self.storeName(fd: fd) else { return }
        state.withLock { _ = $0.stored.remove(name) }
        remove(name: name)
    }

    private func remove(name: String) {
        guard let socket = notifySocket else { return }
        _ = kiosk_notify_fds_to(socket, "FDSTOREREMOVE=1\nFDNAME=\(name)", nil, 0)
    }

    /// The process is ending (SIGTERM under systemd): stored cards keep their pictures.
    public func exiting() { state.withLock { $0.exiting = true } }

    /// Whether the card open on `fd` keeps its picture as it closes: the process is ending and
    /// systemd holds the file.
    public func keepsPicture(fd: Int32) -> Bool {
        guard let name = Self.storeName(fd: fd) else { return false }
        return state.withLock { $0.exiting && $0.stored.contains(name) }
    }
}
