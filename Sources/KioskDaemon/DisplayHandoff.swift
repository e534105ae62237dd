import CKioskShims
import Dispatch
import Glibc
import KioskCore
import Logging
import KioskPosix

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
final class DisplayHandoff: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []
    /// Standard input when it is a VT in `VT_PROCESS` mode; set and read on the loop's thread.
    private var vtFD: Int32?
    private let logger: Logger

    init(display: DisplayOutput, loop: EventLoop, logger: Logger) {
        self.logger = logger
        // VT_SETMODE records the calling thread as the one to signal, and the kernel reverts the
        // VT to automatic switching (no signal) once that thread is gone. Concurrency threads come
        // and go, so the mode is set on the event loop's thread, which lives as long as the display.
        loop.post { self.vtFD = DisplayHandoff.takeVT(logger: logger) }
        for (sig, release) in [(SIGUSR1, true), (SIGUSR2, false)] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                loop.post {
                    let vt = self.vtFD
                    if release {
                        logger.notice("SIGUSR1: releasing the display")
                        Backends.releaseDisplay(display)
                        if let vt { _ = ioctl(vt, UInt(VT_RELDISP), Int32(1)) }
                    } else {
                        logger.notice("SIGUSR2: taking the display back")
                        if let vt { _ = ioctl(vt, UInt(VT_RELDISP), Int32(VT_ACKACQ)) }
                        do { try Backends.acquireDisplay(display) } catch {
                            logger.error("cannot take the display back",
                                         metadata: ["display": "\(display.displayDescription)", "error": "\(error)"])
                        }
                    }
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Puts standard input, if it is a VT, in process-controlled switching and graphics mode.
    private static func takeVT(logger: Logger) -> Int32? {
        var mode = vt_mode()
        guard isatty(0) == 1, ioctl(0, UInt(VT_GETMODE), &mode) == 0 else { return nil }
        mode.mode = CChar(VT_PROCESS)
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
        for s in sources { s.cancel() }
        sources.removeAll()
        guard let vt = vtFD else { return }
        var mode = vt_mode()
        mode.mode = CChar(VT_AUTO)
        _ = ioctl(vt, UInt(VT_SETMODE), &mode)
        _ = ioctl(vt, UInt(KDSETMODE), Int32(KD_TEXT))
    }
}
