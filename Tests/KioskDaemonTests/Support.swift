import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskDaemon
import KioskDaemonTesting
import KioskPosix
import Logging
import NIOConcurrencyHelpers
import Testing

/// A fresh temporary directory for one test.
func tempDir(_ tag: String = #function) -> String {
    // Short: the control socket inside must stay within a Unix socket path's 103 bytes.
    let clean = String(tag.filter { $0.isLetter || $0.isNumber }.prefix(20))
    let d = "\(NSTemporaryDirectory())kt-\(clean)-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
    try! FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
    return d
}

/// Writes `text` to `dir/name` and returns the path.
@discardableResult
func write(_ text: String, _ dir: String, _ name: String = "kioskd.toml") -> String {
    let p = "\(dir)/\(name)"
    try! text.write(toFile: p, atomically: false, encoding: .utf8)
    return p
}

/// The message of the config error thrown by `body`, or nil.
func configError(_ body: () throws -> Void) -> String? {
    do { try body(); return nil } catch let e as KioskError { return e.message } catch { return "\(error)" }
}

/// Loads a config file written to a temporary directory.
func loadConfig(_ text: String, dir: String? = nil, env: [String: String] = [:]) throws -> DaemonConfig {
    let d = dir ?? tempDir()
    let path = write(text, d)
    return try DaemonConfig.load(path: path, environment: env)
}

let quietLogger: Logger = {
    var l = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    l.logLevel = .critical
    return l
}()

/// Runs a daemon on its loop's own thread, as the render loop service does (started as kioskd
/// starts it: its command pipeline on a thread of its own). `stop()` shuts the
/// daemon down on the loop, joins the thread and fails the test when the loop failed or did not
/// end.
final class LoopThread: Sendable {
    let daemon: LoopBound<Daemon>
    private let finished = DispatchSemaphore(value: 0)
    private let failure = NIOLockedValueBox<Error?>(nil)

    init(_ daemon: Daemon) {
        let loop = daemon.eventLoop!
        let bound = LoopBound(daemon, loop: loop)
        self.daemon = bound
        let finished = self.finished, failure = self.failure
        // Posted before the thread runs: the daemon starts before anything a test posts.
        loop.post { bound.value.startAsKioskd(committedByTest: false) }
        Thread {
            do { try loop.run() } catch { failure.withLockedValue { $0 = error } }
            finished.signal()
        }.start()
    }

    /// Runs `body` on the loop's thread with the daemon and returns its value.
    func run<T: Sendable>(_ body: @escaping @Sendable (Daemon) -> T) -> T {
        onLoop(daemon, body)
    }

    func stop(sourceLocation: Testing.SourceLocation = #_sourceLocation) {
        let daemon = self.daemon
        daemon.post { d in
            d.shutdown()
            d.eventLoop?.stop()
        }
        let joined = finished.wait(timeout: .now() + 10) == .success
        #expect(joined, "the loop thread did not end within 10 s", sourceLocation: sourceLocation)
        if let e = failure.withLockedValue({ $0 }) { Issue.record("the loop failed: \(e)", sourceLocation: sourceLocation) }
    }
}

/// Runs `body` on the daemon's loop thread and returns its value.
func onLoop<T: Sendable>(_ daemon: LoopBound<Daemon>, _ body: @escaping @Sendable (Daemon) -> T) -> T {
    let sem = DispatchSemaphore(value: 0)
    let out = NIOLockedValueBox<T?>(nil)
    daemon.post { d in
        out.withLockedValue { $0 = body(d) }
        sem.signal()
    }
    sem.wait()
    return out.withLockedValue { $0 }!
}

/// The descriptors a process holds, by number, each with what it refers to (the link in
/// /proc/PID/fd, e.g. "socket:[1234]" or a path).
func descriptorTargets(_ pid: pid_t) -> [(fd: Int32, target: String)] {
    let dir = "/proc/\(pid)/fd"
    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
    return names.compactMap { name in
        guard let fd = Int32(name), let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(dir)/\(name)") else { return nil }
        return (fd, target)
    }.sorted { $0.fd < $1.fd }
}

