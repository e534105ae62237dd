import CKioskLinux
import Dispatch
import Glibc
import KioskCore
import Logging
import KioskPosix
import NIOConcurrencyHelpers

/// Lets another session borrow the display and gives it back: plain DRM-master handling for
/// a kiosk that runs on its own virtual console.
///
/// - When kioskd's standard input is a VT (systemd `TTYPath=/dev/tty1`, `StandardInput=tty`),
///   the VT is put in `VT_PROCESS` mode (`ioctl(VT_SETMODE)`) and `KD_GRAPHICS`: switching to
///   another VT sends SIGUSR1, kioskd stops drawing, drops DRM master (`drmDropMaster`) and
///   acknowledges (`VT_RELDISP`); switching back sends SIGUSR2, kioskd takes master back, sets
///   the mode again and repaints everything.
/// - Without a VT the same signals hand the display over by hand:
///   `systemctl kill -s USR1 kioskd` lets a maintenance tool take it, `-s USR2` takes it back.
final class DisplayHandoff: Sendable {
    let loop: any KioskLoop
    private let displays: LoopBound<[DisplayOutput]>
    /// Standard input when it is a VT in `VT_PROCESS` mode.
    private let vtFD = NIOLockedValueBox<Int32?>(nil)
    private let logger: Logger

    /// Takes the VT on the loop's thread. The signals that call `release` and `acquire` are
    /// installed by `DaemonSignals`.
    init(displays: LoopBound<[DisplayOutput]>, logger: Logger) {
        self.loop = displays.loop
        self.displays = displays
        self.logger = logger
        // VT_SETMODE records the calling thread as the one to signal, and the kernel reverts the
        // VT to automatic switching (no signal) once that thread is gone. Concurrency threads come
        // and go, so the mode is set on the event loop's thread, which lives as long as the display.
        loop.post { [vtFD] in
            let vt = DisplayHandoff.takeVT(logger: logger)
            vtFD.withLockedValue { $0 = vt }
        }
    }

    /// SIGUSR1: stop drawing, drop DRM master, acknowledge the VT switch. On the loop's thread.
    func release() {
        logger.notice("SIGUSR1: releasing the display")
        Backends.releaseDisplays(displays.value)
        if let vt = vtFD.withLockedValue({ $0 }) { _ = ioctl(vt, UInt(VT_RELDISP), Int32(1)) }
    }

    /// SIGUSR2: acknowledge the VT switch back, take DRM master, set the mode, repaint. On the loop's thread.
    func acquire() {
        logger.notice("SIGUSR2: taking the display back")
        if let vt = vtFD.withLockedValue({ $0 }) { _ = ioctl(vt, UInt(VT_RELDISP), Int32(VT_ACKACQ)) }
        do { try Backends.acquireDisplays(displays.value) } catch {
            logger.error("cannot take the display back",
                         metadata: ["display": "\(displays.value.map(\.displayDescription).joined(separator: "; "))", "error": "\(error)"])
        }
    }

    /// Puts standard input, if it is a VT, in process-controlled switching and graphics mode.
    private static func takeVT(logger: Logger) -> Int32? {
        var mode = vt_mode()
        guard isatty(0) == 1, ioctl(0, UInt(VT_GETMODE), &mode) == 0 else { return nil }
        mode.mode = .init(VT_PROCESS)
        mode.relsig = Int16(SIGUSR1)
        mode.acqsig = Int16(SIGUSR2)
        guard ioctl(0, UInt(VT_SETMODE), &mode) == 0 else {
            logger.warning("standard input is a VT but VT_SETMODE failed; VT switches are not followed",
                           metadata: ["errno": "\(errno)"])
            return nil
        }
        _ = ioctl(0, UInt(KDSETMODE), Int32(KD_GRAPHICS))
        logger.info("following VT switches of the console on standard input")
        return 0
    }

    /// Gives the VT back to the kernel's automatic switching and text mode (after the loop stopped).
    func restore() {
        guard let vt = vtFD.withLockedValue({ $0 }) else { return }
        var mode = vt_mode()
        mode.mode = .init(VT_AUTO)
        _ = ioctl(vt, UInt(VT_SETMODE), &mode)
        _ = ioctl(vt, UInt(KDSETMODE), Int32(KD_TEXT))
    }
}
