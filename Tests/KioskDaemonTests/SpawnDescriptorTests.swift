import Foundation
import KioskTestTraits
import Testing

/// Children started by the tests' own posix_spawn helpers get descriptors 0–2 only, never a
/// connection of the test process (see `closeInheritedDescriptors`).
@Suite(.ownThreads) struct SpawnDescriptorTests {
    func check(_ start: (String) throws -> pid_t) throws {
        var pair: [Int32] = [-1, -1]
        // Deliberately without SOCK_CLOEXEC, like SwiftNIO's sockets.
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let mine = Set(descriptorTargets(getpid()).filter { pair.contains($0.fd) && $0.target.hasPrefix("socket:") }.map(\.target))
        #expect(mine.count == 2)
        let pid = try start(tempDir())
        defer { kill(pid, SIGKILL); var st: Int32 = 0; waitpid(pid, &st, 0) }
        // The child has exec'd once its command line is sleep's.
        for _ in 0..<200 where !((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").hasPrefix("/bin/sleep") { usleep(5_000) }
        // The dynamic loader opens libraries for a moment after the exec: wait for them to close.
        for _ in 0..<200 where descriptorTargets(pid).map(\.fd) != [0, 1, 2] { usleep(10_000) }
        let held = descriptorTargets(pid)
        let leaked = mine.intersection(held.map(\.target))
        #expect(leaked.isEmpty, "the child holds the test's sockets \(leaked)")
        #expect(held.map(\.fd) == [0, 1, 2], "the child's descriptors: \(held.map { "\($0.fd) → \($0.target)" })")
    }

    @Test func spawnPassesOnlyTheStandardDescriptors() throws {
        try check { dir in try spawn("/bin/sleep", ["5"], output: "\(dir)/out") }
    }

    @Test func fleetSpawnToo() throws {
        try check { _ in try fleetSpawn("/bin/sleep", ["5"]) }
    }
}
