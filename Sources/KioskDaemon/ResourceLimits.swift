import FoundationEssentials
import Glibc
import KioskPosix
import Logging

/// Process resource limits kioskd adjusts at start.
public enum ResourceLimits {
    /// Raises the soft limit on open file descriptors (RLIMIT_NOFILE) to the hard limit, so that
    /// many control connections cannot starve the display, the input devices and the state files.
    /// Returns the limits after the change (soft, hard); logs them at debug, and a failure at warning.
    @discardableResult
    public static func raiseOpenFileLimit(logger: Logger) -> (soft: UInt64, hard: UInt64)? {
        var lim = rlimit()
        do { try Posix.call("getrlimit(RLIMIT_NOFILE)") { getrlimit(Int32(RLIMIT_NOFILE.rawValue), &lim) } } catch {
            logger.warning("cannot read the open file limit", metadata: ["error": "\(error)"])
            return nil
        }
        let before = UInt64(lim.rlim_cur)
        if lim.rlim_cur < lim.rlim_max {
            var raised = lim
            raised.rlim_cur = lim.rlim_max
            do {
                try Posix.call("setrlimit(RLIMIT_NOFILE)") { setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) }
                lim = raised
            } catch {
                logger.warning("cannot raise the open file limit", metadata: [
                    "soft": "\(lim.rlim_cur)", "hard": "\(lim.rlim_max)", "error": "\(error)"])
            }
        }
        logger.debug("open file limit", metadata: ["soft": "\(lim.rlim_cur)", "hard": "\(lim.rlim_max)", "soft_at_start": "\(before)"])
        return (UInt64(lim.rlim_cur), UInt64(lim.rlim_max))
    }
}
