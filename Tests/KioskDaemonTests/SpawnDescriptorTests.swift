import Foundation
import KioskTestTraits
import Testing

/// Children started by the tests' own posix_spawn helpers get descriptors 0–2 only, never a
/// connection of the test process (see `closeInheritedDescriptors`).
@Suite(.ownThreads) struct SpawnDescriptorTests {
    /// The socket inodes a process holds.
    func sockets(_ pid: pid_t) -> Set<String> {
        let dir = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return Set(names.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "\(dir)/\($0)") }.filter { $0.hasPrefix("socket:") })
    }

    func check(_ start: (String) throws -> pid_t) throws {
        var pair: [Int32] = [-1, -1]
        // Deliberately without SOCK_CLOEXEC, like SwiftNIO's sockets.
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let mine = sockets(getpid()).intersection([pair[0], pair[1]].compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")
        })
        #expect(mine.count == 2)
        let pid = try start(tempDir())
        defer { kill(pid, SIGKILL); var st: Int32 = 0; waitpid(pid, &st, 0) }
        // The child has exec'd once its command line is sleep's.
        for _ in 0..<200 where !((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").hasPrefix("/bin/sleep") { usleep(5_000) }
        // The dynamic loader opens libraries for a moment after the exec: wait for them to close.
        func descriptors() -> [Int] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).compactMap(Int.init).sorted()
        }
        for _ in 0..<200 where descriptors() != [0, 1, 2] { usleep(10_000) }
        let leaked = sockets(pid).intersection(mine)
        #expect(leaked.isEmpty, "the child holds the test's sockets \(leaked)")
        let fds = descriptors()
        #expect(fds == [0, 1, 2], "the child's descriptors: \(fds.map { "\($0) → " + ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? "?") })")
    }

    @Test func spawnPassesOnlyTheStandardDescriptors() throws {
        try check { dir in try spawn("/bin/sleep", ["5"], output: "\(dir)/out") }
    }

    @Test func fleetSpawnToo() throws {
        try check { _ in try fleetSpawn("/bin/sleep", ["5"]) }
    }
}
