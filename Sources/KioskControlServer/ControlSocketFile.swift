import FoundationEssentials
import Glibc
import KioskConfig
import KioskControl
import KioskCore
import KioskPosix

/// The control socket's file: bound in a private (0700) directory next to its path, given its
/// configured mode and group there, then renamed into place, so it is never reachable by others
/// before it has them, whatever the umask. Refuses a path where another kioskd answers; a stale
/// socket file is replaced by the rename.
struct ControlSocketFile {
    let settings: ControlSettings
    /// The private directory, and the path to bind in it.
    let tmpDir: String
    let bindPath: String

    /// Checks the target and makes the private directory.
    init(_ settings: ControlSettings) throws {
        self.settings = settings
        let path = settings.socketPath
        let dir = PathText.folder(of: path)
        do { try Self.makeDirectories(dir) } catch let e as KioskError {
            throw KioskError(.control, "cannot create the control socket directory \(dir): \(e.message)", errno: e.errno)
        }
        if FileManager.default.fileExists(atPath: path) && ControlClient.socketAnswers(path) {
            throw KioskError.control("another kioskd is already listening on \(path)")
        }
        var template = Array("\(dir)/.kioskd-XXXXXX".utf8CString)
        // The name is read inside the closure: the array's storage is only valid there (read
        // after it, the optimizer may already have freed it — an aarch64 release build did).
        guard let tmpDir = template.withUnsafeMutableBufferPointer({ buf -> String? in
            mkdtemp(buf.baseAddress!).map { String(cString: $0) }
        }) else {
            throw Posix.error("mkdtemp", path: "\(dir)/.kioskd-XXXXXX", errno: errno)
        }
        // mkdtemp gives 0700 & ~umask; make sure it is exactly 0700.
        chmod(tmpDir, 0o700)
        self.tmpDir = tmpDir
        bindPath = "\(tmpDir)/s"
        let room = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard bindPath.utf8.count < room else {
            rmdir(tmpDir)
            throw KioskError.control("control socket path \(path) is too long to bind through \(bindPath) (at most \(room - 1) bytes)")
        }
    }

    /// `mkdir -p` (mode 0755 for what is created); errors name the directory that could not be made.
    static func makeDirectories(_ dir: String) throws {
        var prefix = dir.hasPrefix("/") ? "" : "."
        for part in dir.split(separator: "/") {
            prefix += "/" + part
            var st = stat()
            if stat(prefix, &st) == 0 { continue }
            do { try Posix.call("mkdir", path: prefix) { mkdir(prefix, 0o755) } } catch let e as KioskError where e.errno == EEXIST {}
        }
    }

    /// Mode and group on the bound socket, then rename(2) into place. On failure nothing is left
    /// behind (the caller closes the listener).
    func publish() throws {
        let path = settings.socketPath
        func fail(_ message: String) -> Error {
            discard()
            return KioskError.control(message)
        }
        do {
            try Posix.call("chmod \(String(settings.mode, radix: 8))", path: bindPath) { chmod(bindPath, mode_t(settings.mode)) }
        } catch let e as KioskError { throw fail(e.message) }
        if let g = settings.group {
            guard let gr = getgrnam(g) else { throw fail("control group '\(g)' does not exist (config key control.group)") }
            let gid = gr.pointee.gr_gid
            do { try Posix.call("chown :\(g)", path: bindPath) { chown(bindPath, uid_t.max, gid) } } catch let e as KioskError {
                throw fail("\(e.message) (is kioskd a member of '\(g)'?)")
            }
        }
        do { try Posix.call("rename", path: "\(bindPath) → \(path)") { rename(bindPath, path) } } catch let e as KioskError {
            throw fail(e.message)
        }
        rmdir(tmpDir)
    }

    /// Removes the private directory (and a socket bound in it).
    func discard() {
        unlink(bindPath)
        rmdir(tmpDir)
    }
}
