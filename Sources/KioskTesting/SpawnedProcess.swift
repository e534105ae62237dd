#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore
import KioskPosix
import Synchronization

/// glibc functions that its headers declare only for _GNU_SOURCE (which Swift's Glibc module does
/// not set): posix_spawn's closefrom (2.34 and later) and chdir (2.29 and later) actions, pipe2.
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func glibcAddCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func glibcAddChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>) -> Int32
@_silgen_name("pipe2")
private func glibcPipe2(_ fds: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32

/// Makes a spawned child start with only descriptors 0–2. The test process holds descriptors
/// without close-on-exec (SwiftNIO's sockets of in-process servers, test clients), and a
/// long-lived child (a broker, another kioskd) inheriting a connection keeps it open after this
/// process closes it: the other end then never sees the close.
private func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    let rc = glibcAddCloseFrom(&actions, 3)
    precondition(rc == 0, "posix_spawn_file_actions_addclosefrom_np failed: errno \(rc)")
}

/// A program the tests start (posix_spawn): stdin /dev/null, descriptors 0–2 only, no signal
/// blocked or ignored (the test process blocks SIGTERM for the daemon's signal handling, and a
/// child would inherit that). Reaped by `wait`, `isRunning` or `exitStatus`; one still running
/// when the handle goes away is killed (SIGKILL) and reaped.
public final class SpawnedProcess: Sendable {
    /// Where the child's stdout or stderr goes.
    public enum Output: Sendable {
        /// /dev/null.
        case null
        /// The test process's own descriptor.
        case inherit
        /// A file, created or truncated.
        case file(String)
        /// A file, created or appended to (a log kept across restarts).
        case appendFile(String)
        /// A pipe, read to its end on a thread of its own: `output()` / `errors()`.
        case pipe
        /// For stderr: wherever stdout goes.
        case stdout
    }

    public let pid: pid_t
    /// The exit status once reaped; its lock also keeps a signal from reaching a reaped pid.
    private let status = Mutex<Int32?>(nil)
    private let outReader: PipeReader?
    private let errReader: PipeReader?

    /// Starts `path` with `args`; `environment` nil: this process's; `directory` nil: this one's.
    public init(_ path: String, _ args: [String] = [], environment: [String: String]? = nil, directory: String? = nil,
                stdout: Output = .null, stderr: Output = .null) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // Write ends of the pipes: closed here once the child holds them.
        var parentCloses: [Int32] = []
        defer { for fd in parentCloses { close(fd) } }
        func redirect(_ output: Output, to fd: Int32) throws -> PipeReader? {
            switch output {
            case .null: posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", O_WRONLY, 0)
            case .inherit: break
            case .file(let path): posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            case .appendFile(let path): posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .stdout: posix_spawn_file_actions_adddup2(&actions, 1, fd)
            case .pipe:
                // Both ends close-on-exec: dup2 gives the child a copy without the flag.
                var ends: [Int32] = [-1, -1]
                guard glibcPipe2(&ends, O_CLOEXEC) == 0 else { throw Posix.error("pipe2", errno: errno) }
                parentCloses.append(ends[1])
                posix_spawn_file_actions_adddup2(&actions, ends[1], fd)
                return PipeReader(ends[0])
            }
            return nil
        }
        outReader = try redirect(stdout, to: 1)
        do { errReader = try redirect(stderr, to: 2) } catch { outReader?.closeUnread(); throw error }
        if let directory {
            let rc = glibcAddChdir(&actions, directory)
            precondition(rc == 0, "posix_spawn_file_actions_addchdir_np failed: errno \(rc)")
        }
        closeInheritedDescriptors(&actions)

        var attr = posix_spawnattr_t()
        posix_spawnattr_init(&attr)
        defer { posix_spawnattr_destroy(&attr) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attr, &none)
        posix_spawnattr_setsigdefault(&attr, &all)
        posix_spawnattr_setflags(&attr, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + args).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for p in envp ?? [] { free(p) } }
        var pid: pid_t = 0
        let rc = if let envp { posix_spawn(&pid, path, &actions, &attr, argv, envp) }
                 else { posix_spawn(&pid, path, &actions, &attr, argv, environ) }
        guard rc == 0 else {
            outReader?.closeUnread()
            errReader?.closeUnread()
            throw Posix.error("posix_spawn", path: path, errno: rc)
        }
        self.pid = pid
        outReader?.start()
        errReader?.start()
    }

    deinit {
        if reap() == nil {
            kill(pid, SIGKILL)
            var st: Int32 = 0
            while waitpid(pid, &st, 0) < 0 && errno == EINTR {}
        }
    }

    /// Runs `path` to its end; returns its exit status (`exitStatus`), stdout and stderr.
    public static func run(_ path: String, _ args: [String] = [], environment: [String: String]? = nil,
                           directory: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let p = try SpawnedProcess(path, args, environment: environment, directory: directory, stdout: .pipe, stderr: .pipe)
        let out = p.output(), err = p.errors()
        p.wait()
        return (p.exitStatus, out, err)
    }

    /// Sends `signal` while the process is not reaped (its pid is not yet anybody else's).
    public func signal(_ signal: Int32) {
        status.withLock { if $0 == nil { kill(pid, signal) } }
    }

    public var isRunning: Bool { reap() == nil }

    /// The exit code, or 128 + the signal that ended it (as the shell's `$?`); -1 while it runs.
    public var exitStatus: Int32 { reap() ?? -1 }

    /// Waits at most `seconds` for the exit (and reaps it); true when it exited.
    @discardableResult
    public func wait(seconds: Double = .infinity) -> Bool {
        let end = nowNanos() + (seconds.isFinite ? Int64(seconds * 1e9) : Int64.max / 2)
        while reap() == nil {
            if nowNanos() >= end { return false }
            usleep(5_000) // bounded polling of the exit
        }
        return true
    }

    /// All of stdout (`.pipe` only), once every holder of the pipe's write end has closed it.
    public func output() -> String { outReader?.text() ?? "" }

    /// All of stderr (`.pipe` only), as `output()`.
    public func errors() -> String { errReader?.text() ?? "" }

    /// The exit status once the process has exited (reaped now, or earlier), else nil.
    private func reap() -> Int32? {
        status.withLock { status in
            if let status { return status }
            var st: Int32 = 0
            var r: pid_t
            repeat { r = waitpid(pid, &st, WNOHANG) } while r < 0 && errno == EINTR
            guard r == pid else { return nil }
            status = (st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f)
            return status
        }
    }
}

/// Reads a pipe to its end on a thread of its own, so that a child never blocks on a full pipe.
private final class PipeReader: Sendable {
    private let fd: Int32
    /// Written by the reading thread, read once `done` is signalled.
    private let bytes = Mutex<[UInt8]>([])
    private let done = DispatchSemaphore(value: 0)

    init(_ fd: Int32) { self.fd = fd }

    func start() {
        Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n > 0 { bytes.withLock { $0 += buffer[0..<n] } } else if n == 0 || errno != EINTR { break }
            }
            close(fd)
            done.signal()
        }.start()
    }

    func closeUnread() { close(fd) }

    /// Waits for the end of the pipe; the bytes read, as UTF-8.
    func text() -> String {
        done.wait()
        done.signal() // for a later call
        return bytes.withLock { String(decoding: $0, as: UTF8.self) }
    }
}
