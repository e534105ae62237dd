import CKioskLazy
import KioskCore
import Logging
import KioskPosix
import NIOConcurrencyHelpers

/// Talks to systemd's service manager (Type=notify): readiness, status lines, watchdog pets.
/// Every call is a no-op when kioskd was not started by systemd (no `NOTIFY_SOCKET`).
public final class SystemdNotifier: Sendable {
    private let logger: Logger
    /// The pending watchdog pet, armed and cancelled on the loop's thread.
    private let watchdogTimer = NIOLockedValueBox<TimerID?>(nil)

    public init(logger: Logger) { self.logger = logger }

    /// Sends `state` ("READY=1", "STATUS=…") to the service manager, as `sd_notify(3)` does
    /// (`kiosk_notify`: the same datagram, without loading libsystemd).
    @discardableResult
    public func notify(_ state: String) -> Bool {
        let r = kiosk_notify(state)
        if r < 0 { logger.debug("sd_notify failed", metadata: ["state": "\(state)", "errno": "\(-r)"]) }
        return r > 0
    }

    public func ready() { notify("READY=1") }
    public func status(_ line: String) { notify("STATUS=\(line)") }
    public func stopping() { notify("STOPPING=1") }
    public func reloading() { notify("RELOADING=1") }

    /// The watchdog interval in microseconds when systemd expects pets (WatchdogSec=), as
    /// `sd_watchdog_enabled(3)` reads it (`kiosk_watchdog_enabled`).
    public static func watchdogMicroseconds() -> UInt64? {
        var usec: UInt64 = 0
        guard kiosk_watchdog_enabled(&usec) > 0, usec > 0 else { return nil }
        return usec
    }

    /// Pets the watchdog (WATCHDOG=1) from `loop` at half the configured interval, so a hung loop
    /// stops petting and systemd restarts kioskd. No-op without WatchdogSec=.
    public func startWatchdog(on loop: any KioskLoop, intervalUsec: UInt64? = SystemdNotifier.watchdogMicroseconds()) {
        guard let usec = intervalUsec else { return }
        loop.assertInLoop()
        let period = Int64(usec) * 1000 / 2
        logger.info("systemd watchdog enabled", metadata: ["watchdog.period_ms": "\(period / 1_000_000)"])
        func arm() {
            let t = try? loop.schedule(after: period) { [weak self] _ in
                guard let self else { return }
                self.notify("WATCHDOG=1")
                arm()
            }
            watchdogTimer.withLockedValue { $0 = t }
        }
        notify("WATCHDOG=1")
        arm()
    }

    public func stopWatchdog(on loop: any KioskLoop) {
        loop.assertInLoop()
        if let t = watchdogTimer.withLockedValue({ t in defer { t = nil }; return t }) { loop.cancel(t) }
    }
}
