import KioskCore
import KioskPosix
import KioskUdev
import Logging

/// Follows udev events on DRM primary nodes (card*) with a monitor watched by the event loop.
final class DRMHotplugMonitor {
    private let monitor: Udev.Monitor
    private let loop: any KioskLoop
    private var watch: WatchID?

    /// A monitor whose events call `handler(action, node)` on `loop`; nil (and a warning in
    /// `logger`) when udev cannot be followed: the display then runs without hotplug.
    static func start(loop: any KioskLoop, logger: Logger, _ handler: @escaping (String, String) -> Void) -> DRMHotplugMonitor? {
        do {
            return try DRMHotplugMonitor(loop: loop, handler)
        } catch {
            logger.warning("no DRM hotplug: \(error)")
            return nil
        }
    }

    private init(loop: any KioskLoop, _ handler: @escaping (String, String) -> Void) throws {
        self.loop = loop
        monitor = try Udev.Monitor(udev: Udev(), subsystem: "drm")
        let m = monitor
        watch = try loop.watch(fd: m.fd) {
            for d in m.receive() {
                guard let node = d.devnode, d.sysname.hasPrefix("card") else { continue }
                handler(d.action ?? "", node)
            }
        }
    }

    deinit {
        if let w = watch { loop.unwatch(w) }
    }
}
