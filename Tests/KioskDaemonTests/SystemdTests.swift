import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import Synchronization
import Testing
import KioskTesting

@Suite(.serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct SystemdNotifyTests {
    /// A headless 320x180 clock with its state and control socket (`c.sock`) in `d`.
    static func clockConfig(_ d: String) -> String {
        write("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scene.clock]
        kind = "clock"
        [control]
        socket = "\(d)/c.sock"
        """, d)
    }

    @Test func readyStatusAndWatchdogFromTheRenderLoop() throws {
        let d = tempDir()
        let notify = NotifySocket(path: "\(d)/notify.sock")
        let path = Self.clockConfig(d)
        // WatchdogSec=0.4 s: pets every 0.2 s.
        let p = try SpawnedProcess(Binaries.kioskd, ["--config", path, "--log-level", "warning"],
                                   environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000", "PATH": "/usr/bin:/bin"])
        let first = notify.collect(seconds: 3)
        let texts = first.map(\.1)
        #expect(texts.contains("READY=1"), "\(texts)")
        #expect(texts.contains { $0.hasPrefix("STATUS=scene clock") && $0.contains("headless 320x180") }, "\(texts)")
        let pets = first.filter { $0.1 == "WATCHDOG=1" }
        #expect(pets.count >= 8, "\(pets.count) pets in 3 s with a 0.2 s period")

        // A stopped process (as a hung loop) stops petting.
        p.signal(SIGSTOP)
        // A pet sent just before the stop can still be queued in the socket (seen beside
        // stress-ng): wait until the process is stopped, then drop what was queued.
        func isStopped() -> Bool {
            guard let stat = try? String(contentsOfFile: "/proc/\(p.pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("T")
        }
        for _ in 0..<400 where !isStopped() { usleep(5_000) } // bounded polling of the process state
        #expect(isStopped())
        _ = notify.collect(seconds: 0.05)
        let stopped = notify.collect(seconds: 1).filter { $0.1 == "WATCHDOG=1" }
        #expect(stopped.isEmpty)
        p.signal(SIGCONT)

        p.signal(SIGTERM)
        let last = notify.collect(seconds: 2).map(\.1)
        #expect(last.contains("STOPPING=1"), "\(last)")
        #expect(p.wait(seconds: 10))
        #expect(p.exitStatus == 0)
    }

    /// The render thread starts before the control server: READY=1 still waits for the socket.
    @Test func readyOnlyOnceTheControlSocketListens() throws {
        let d = tempDir()
        let notify = NotifySocket(path: "\(d)/notify.sock")
        let control = "\(d)/c.sock"
        let path = Self.clockConfig(d)
        for _ in 0..<5 {
            let p = try SpawnedProcess(Binaries.kioskd, ["--config", path, "--log-level", "warning"],
                                       environment: ["NOTIFY_SOCKET": notify.path, "PATH": "/usr/bin:/bin"])
            var buf = [UInt8](repeating: 0, count: 4096)
            var answered: Bool?
            let deadline = Date().addingTimeInterval(10)
            while answered == nil && Date() < deadline {
                let n = recv(notify.fd, &buf, buf.count, 0)
                if n > 0 && String(decoding: buf[0..<n], as: UTF8.self) == "READY=1" {
                    answered = ControlClient.socketAnswers(control)
                }
            }
            #expect(answered == true, "READY=1 came \(answered == nil ? "never" : "before the control socket listened")")
            #expect(!notify.collect(seconds: 0.3).map(\.1).contains("READY=1"), "READY=1 twice")
            p.signal(SIGTERM)
            #expect(p.wait(seconds: 10) && p.exitStatus == 0, "kioskd did not stop cleanly: \(p.errors())")
        }
    }
}

@Suite struct ReadyGateTests {
    /// Either part may finish first; READY=1 comes with the last, once.
    @Test(arguments: [[ReadyGate.Part.frame, .control], [.control, .frame]])
    func readyWithTheLastPartOnce(_ order: [ReadyGate.Part]) {
        let calls = Mutex(0)
        let gate = ReadyGate(waitingFor: [.frame, .control]) { calls.withLock { $0 += 1 } }
        gate.done(order[0])
        #expect(calls.withLock { $0 } == 0 && !gate.isReady)
        gate.done(order[0])
        #expect(calls.withLock { $0 } == 0, "the same part twice is not both")
        gate.done(order[1])
        #expect(calls.withLock { $0 } == 1 && gate.isReady)
        gate.done(.frame)
        gate.done(.control)
        #expect(calls.withLock { $0 } == 1, "never twice")
    }
}
