#if canImport(Glibc)
import Glibc
#endif

/// An OS thread of kioskd's own (pthreads), named as `top -H` and /proc/PID/task/TID/comm show
/// it (`kioskd-render`, `kioskd-commit`, …), in place of Foundation's `Thread`, which only full
/// Foundation has (kioskd links FoundationEssentials alone; BENCHMARKS.md, "Package size").
///
/// Every thread kioskd starts is detached: nothing joins it, whoever waits for its end waits for
/// a signal the body gives. The stack is the C library's default, as `Thread`'s was.
public enum NamedThread {
    /// The longest name the kernel keeps: 15 bytes (TASK_COMM_LEN less its NUL).
    public static let maxNameBytes = 15

    /// Starts `body` on a new detached thread named `name` (cut to its first 15 bytes, on a
    /// character boundary). Throws a `.system` error, with the errno `pthread_create` returned,
    /// when the thread could not be started (`body` then never runs).
    public static func detach(name: String, _ body: @escaping @Sendable () -> Void) throws(KioskError) {
        let start = Unmanaged.passRetained(Start(name: fitted(name), body: body)).toOpaque()
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        defer { pthread_attr_destroy(&attr) }
        pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attr, { arg in
            let start = Unmanaged<Start>.fromOpaque(arg!).takeRetainedValue()
            // Named from inside: a new thread otherwise keeps the name of the one that started it.
            // (pthread_setname_np is hidden from Swift's Glibc module: it needs _GNU_SOURCE.)
            let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
            if fd >= 0 {
                _ = write(fd, start.name, start.name.utf8.count)
                close(fd)
            }
            start.body()
            return nil
        }, start)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(start).release()
            throw KioskError(.system, "cannot start the thread \(name): \(String(cString: strerror(rc))) (errno \(rc))", errno: rc)
        }
    }

    /// The name as the kernel keeps it: at most `maxNameBytes` bytes of UTF-8, whole characters.
    public static func fitted(_ name: String) -> String {
        guard name.utf8.count > maxNameBytes else { return name }
        var kept = ""
        for c in name {
            if kept.utf8.count + c.utf8.count > maxNameBytes { break }
            kept.append(c)
        }
        return kept
    }

    private final class Start: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
