import FoundationEssentials
import Glibc
import KioskConfig
import KioskCore
import KioskPosix

/// What of `DaemonConfig` needs the daemon: the scene kinds kioskd ships (its `SceneRegistry`),
/// and the start-up check of the system the config names (through `DirectoryAccess`, which the
/// state store shares).
extension DaemonConfig {
    /// Reads and checks the config file at `path`, with the scene kinds kioskd ships.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                            settings: SettingsLayer = SettingsLayer()) throws -> DaemonConfig {
        try load(path: path, environment: environment, kinds: SceneRegistry.standard.kinds, settings: settings)
    }

    /// Checks a parsed config (`root`) from `file`, with the scene kinds kioskd ships.
    public init(root: ConfigTable, file: String, environment: [String: String] = [:]) throws {
        try self.init(root: root, file: file, environment: environment, kinds: SceneRegistry.standard.kinds)
    }

    /// Checks what the daemon needs from the system at start, without creating anything: the
    /// control group exists, the control socket and the state directory can be created (every
    /// existing ancestor a directory, the nearest one writable by this user), the socket path is
    /// not a directory or another file. Errors name file:line and the key.
    ///
    /// A state directory that exists but is not writable, or cannot be created only for want of
    /// permission (a read-only root), is not an error: kioskd starts without saving state (status,
    /// log and a mark on screen say so). That case is returned as a warning. With
    /// `state = "volatile"` the state directory is not looked at.
    @discardableResult
    public func checkSystem() throws -> [String] {
        func fail(_ key: String, _ message: String) -> KioskError {
            .config("\(keyLocations[key] ?? SourceLocation(file: file, line: 0)): key '\(key)': \(message)")
        }
        if let g = control.group {
            guard let gr = getgrnam(g) else {
                throw fail("control.group", "no group named \(ConfigTable.quoted(g)) on this system")
            }
            // Only root, or a member of the group, may give the socket to it (chown).
            let gid = gr.pointee.gr_gid
            var groups = [gid_t](repeating: 0, count: Int(max(getgroups(0, nil), 0)) + 1)
            let n = getgroups(Int32(groups.count), &groups)
            let member = getegid() == gid || (n > 0 && groups[0..<Int(n)].contains(gid))
            if geteuid() != 0 && !member {
                throw fail("control.group", "kioskd (uid \(geteuid())) is not a member of group \(ConfigTable.quoted(g)), so it cannot give the control socket to it")
            }
        }
        var st = stat()
        let sock = control.socketPath
        if stat(sock, &st) == 0 {
            if (st.st_mode & S_IFMT) == S_IFDIR {
                throw fail("control.socket", "\(sock) is a directory; expected the path of the socket file kioskd creates")
            }
            if (st.st_mode & S_IFMT) != S_IFSOCK {
                throw fail("control.socket", "\(sock) exists and is not a socket; kioskd does not replace other files")
            }
        }
        if let problem = DaemonConfig.creatable(sock) { throw fail("control.socket", problem.message) }
        guard stateMode == .durable else { return [] }
        let unsaved = "; kioskd will start, but will not save counters, scene and theme choices"
        let where_ = "\(keyLocations["state_dir"] ?? SourceLocation(file: file, line: 0)): key 'state_dir'"
        if stat(stateDirectory, &st) == 0 {
            if (st.st_mode & S_IFMT) != S_IFDIR { throw fail("state_dir", "\(stateDirectory) is not a directory") }
            if let problem = DirectoryAccess.writeProblem(stateDirectory) {
                return ["\(where_): \(problem.message)" + unsaved]
            }
        } else if let problem = DaemonConfig.creatable(stateDirectory) {
            // Only a missing permission (or a read-only file system) lets kioskd start without state.
            guard problem.permission else { throw fail("state_dir", problem.message) }
            return ["\(where_): \(problem.message)" + unsaved]
        }
        return []
    }

    /// Why `path` (with any missing parent folders) cannot be created by this user, and whether
    /// that is for want of a permission; nil when it can (or already exists with its parent).
    static func creatable(_ path: String) -> (message: String, permission: Bool)? {
        var st = stat()
        var dir = PathText.folder(of: path)
        while stat(dir, &st) != 0 {
            let e = errno
            guard e == ENOENT else { return ("cannot create \(path): \(Posix.error("stat", path: dir, errno: e).message)", false) }
            let up = PathText.parent(of: dir)
            if up == dir || up.isEmpty { return nil }
            dir = up
        }
        if (st.st_mode & S_IFMT) != S_IFDIR { return ("cannot create \(path): \(dir) is not a directory", false) }
        if let problem = DirectoryAccess.writeProblem(dir) {
            return ("cannot create \(path): \(problem.message)", DirectoryAccess.isPermission(problem.errno))
        }
        return nil
    }
}
