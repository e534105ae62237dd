import Foundation
import KioskControl
import Testing
import KioskTesting

/// kioskd's main thread waits for the daemon instead of leaving through `dispatch_main`, as an
/// async `main` does on Linux: its `pthread_exit` unwinds the main thread's stack, which reads
/// about 1 MB of the executable's unwind tables into memory at every start, and a thread-exit
/// destructor of libdispatch then parks the thread in `rt_sigsuspend` for the rest of the
/// process's life.
@Suite(.serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct MainThreadTests {
    /// rt_sigsuspend's number (<asm/unistd.h>; the macro does not reach Swift).
    #if arch(x86_64)
    static let rtSigsuspend = 130
    #elseif arch(arm64)
    static let rtSigsuspend = 133
    #else
    static let rtSigsuspend = -1
    #endif

    /// The system call a thread is blocked in (/proc/PID/task/TID/syscall: its number first).
    static func syscall(_ pid: Int32, _ tid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/syscall", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    @Test func mainThreadStaysUntilTheDaemonStops() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        let d = tempDir()
        let child = try IdleWakeupTests.startClock(Binaries.kioskd, in: d)
        defer { child.signal(SIGTERM); _ = child.wait(seconds: 10) }
        try ProcessTests().waitForSocket(d, child)
        let pid = child.process.pid
        // The control socket is served after the async part of start-up began, so an async main
        // has called dispatch_main (and pthread_exit) by now.
        let main = try #require(Self.syscall(pid, pid), "no /proc/\(pid)/task/\(pid)/syscall; log:\n\(child.log)")
        #expect(main != Self.rtSigsuspend, "kioskd's main thread is parked in rt_sigsuspend (system call \(main)): it left main through dispatch_main's pthread_exit")
        child.signal(SIGTERM)
        #expect(child.wait(seconds: 10), "kioskd did not stop on SIGTERM; log:\n\(child.log)")
        #expect(child.process.exitStatus == 0, "kioskd exited with \(child.process.exitStatus) on SIGTERM; log:\n\(child.log)")
    }

    /// SIGTERM while clients keep connecting to the control socket: kioskd stops cleanly (exit 0,
    /// console given back) — a connection accepted during the stop must not trap. (An HTTP stack
    /// on NIO's async server channel trapped here in 2 of 10 stops: "Deinited NIOAsyncWriter
    /// without calling finish()", exit 4.)
    @Test func stopsCleanlyWhileClientsConnect() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["KIOSK_STOP_ROUNDS"] ?? "") ?? 5
        for round in 0..<rounds {
            let d = tempDir()
            let child = try IdleWakeupTests.startClock(Binaries.kioskd, in: d)
            try ProcessTests().waitForSocket(d, child)
            let stop = NSLock()
            nonisolated(unsafe) var stopped = false
            let hammers = (0..<4).map { _ in
                Thread {
                    while !stop.withLock({ stopped }) { _ = ControlClient.socketAnswers("\(d)/c.sock") }
                }
            }
            for h in hammers { h.start() }
            usleep(200_000)
            child.signal(SIGTERM)
            let ended = child.wait(seconds: 20)
            stop.withLock { stopped = true }
            if !ended { child.signal(SIGKILL); _ = child.wait(seconds: 5) }
            #expect(ended, "round \(round): kioskd did not stop on SIGTERM while clients connected; log:\n\(child.log)")
            #expect(child.process.exitStatus == 0, "round \(round): kioskd exited with \(child.process.exitStatus); log:\n\(child.log.suffix(600))")
        }
    }
}
