import FoundationEssentials
import Glibc
import KioskCore

/// Whether kioskd may create files in a directory: the one judgement the config check (before
/// start, `DaemonConfig.checkSystem`) and the state store (when it opens its directory,
/// `FileStateStore`) both make. Judged for the effective user, as the files would be created.
package enum DirectoryAccess {
    /// Why files cannot be created in `directory` (or in the directory open as `fd`), or nil
    /// when they can: "/var/lib/kioskd is not writable by uid 65534: access /var/lib/kioskd
    /// failed: Permission denied (errno 13)". The error keeps errno.
    package static func writeProblem(_ directory: String, fd: Int32? = nil) -> KioskError? {
        do {
            try Posix.call("access", path: directory) {
                faccessat(fd ?? AT_FDCWD, fd == nil ? directory : ".", W_OK | X_OK, AT_EACCESS)
            }
            return nil
        } catch let e as KioskError {
            return KioskError(e.kind, "\(directory) is not writable by uid \(geteuid()): \(e.message)", errno: e.errno)
        } catch {
            return KioskError(.system, "\(directory): \(error)")
        }
    }

    /// True for the errors that mean "not allowed here" (a missing permission, a read-only file
    /// system), as opposed to a broken path.
    package static func isPermission(_ errnum: Int32) -> Bool { errnum == EACCES || errnum == EROFS || errnum == EPERM }
}
