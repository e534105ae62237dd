import Foundation
import KioskCore
import Synchronization
import Testing

/// Threads started by `NamedThread` run their body and carry their name where `top -H` and
/// /proc/PID/task/TID/comm show it.
struct NamedThreadTests {
    /// The names of this process's threads, as the kernel keeps them.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .newlines)
        }
    }

    /// Starts a thread named `name`, and gives the names found in /proc while it runs and what
    /// its body found as its own name.
    static func namesWhileRunning(_ name: String) throws -> (all: [String], own: String) {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let ended = DispatchSemaphore(value: 0)
        let own = Mutex("")
        try NamedThread.detach(name: name) {
            let mine = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
            own.withLock { $0 = mine.trimmingCharacters(in: .newlines) }
            started.signal()
            release.wait()
            ended.signal()
        }
        #expect(started.wait(timeout: .now() + 10) == .success)
        let all = threadNames()
        release.signal()
        #expect(ended.wait(timeout: .now() + 10) == .success)
        return (all, own.withLock { $0 })
    }

    @Test func nameShowsInProc() throws {
        let (all, own) = try Self.namesWhileRunning("kiosk-nt-test")
        #expect(own == "kiosk-nt-test")
        #expect(all.filter { $0 == "kiosk-nt-test" }.count == 1)
    }

    @Test func longNameCutTo15Bytes() throws {
        let (all, own) = try Self.namesWhileRunning("kiosk-a-very-long-name")
        #expect(own == "kiosk-a-very-lo")
        #expect(all.contains("kiosk-a-very-lo"))
    }

    @Test func fittedKeepsWholeCharacters() {
        #expect(NamedThread.fitted("kioskd-render") == "kioskd-render")
        #expect(NamedThread.fitted("123456789012345") == "123456789012345")
        #expect(NamedThread.fitted("1234567890123456") == "123456789012345")
        // "é" is two bytes: the 15th byte would split the fifth one.
        #expect(NamedThread.fitted("kioskd-éééééé") == "kioskd-éééé")
        #expect(NamedThread.fitted("kioskd-éééééé").utf8.count == 15)
        #expect(NamedThread.fitted("12345678901234é") == "12345678901234")
    }

    /// Each thread runs its own body once, and they run at the same time.
    @Test func threadsRunTheirBodies() throws {
        let count = Mutex(0)
        let all = DispatchSemaphore(value: 0)
        for i in 0..<8 {
            try NamedThread.detach(name: "kiosk-nt-\(i)") {
                count.withLock { $0 += 1 }
                all.signal()
            }
        }
        for _ in 0..<8 { #expect(all.wait(timeout: .now() + 10) == .success) }
        #expect(count.withLock { $0 } == 8)
    }
}
