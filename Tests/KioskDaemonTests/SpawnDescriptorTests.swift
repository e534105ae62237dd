import Foundation
import KioskTestTraits
import KioskTesting
import Testing

/// Children started by the tests' spawner (`SpawnedProcess`) get descriptors 0–2
/// only, never a connection or file of the test process (`SpawnedProcess` closes every descriptor from 3 in the child).
@Suite(.ownThreads) struct SpawnDescriptorTests {
    /// A socket pair and a file open in the test process, deliberately without close-on-exec
    /// (as SwiftNIO's sockets), for as long as `body` runs; `body` gets their /proc targets.
    func holdingInheritableDescriptors(_ body: (_ targets: Set<String>, _ dir: String) throws -> Void) throws {
        let dir = tempDir()
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let file = open("\(dir)/held", O_WRONLY | O_CREAT, 0o600)
        #expect(file >= 0)
        defer { close(pair[0]); close(pair[1]); close(file) }
        let fds = [pair[0], pair[1], file]
        for fd in fds { #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC == 0, "descriptor \(fd) is close-on-exec") }
        let targets = Set(descriptorTargets(getpid()).filter { fds.contains($0.fd) }.map(\.target))
        #expect(targets.count == 3 && targets.contains("\(dir)/held"), "\(targets)")
        try body(targets, dir)
    }

    /// A running child, seen from outside (/proc/PID/fd); `start` returns its pid and how to stop it.
    func checkRunning(_ start: (String) throws -> (pid: pid_t, stop: () -> Void)) throws {
        try holdingInheritableDescriptors { mine, dir in
            let (pid, stop) = try start(dir)
            defer { stop() }
            // The child has exec'd once its command line is sleep's.
            for _ in 0..<200 where !((try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? "").hasPrefix("/bin/sleep") { usleep(5_000) }
            // The dynamic loader opens libraries for a moment after the exec: wait for them to close.
            for _ in 0..<200 where descriptorTargets(pid).map(\.fd) != [0, 1, 2] { usleep(10_000) }
            let held = descriptorTargets(pid)
            let leaked = mine.intersection(held.map(\.target))
            #expect(leaked.isEmpty, "the child holds the test's descriptors \(leaked)")
            #expect(held.map(\.fd) == [0, 1, 2], "the child's descriptors: \(held.map { "\($0.fd) → \($0.target)" })")
        }
    }

    /// A shell lists its own descriptors (`ls` runs as its child, so the list is the shell's,
    /// without the directory `ls` opens to read it).
    static let listDescriptors = ["-c", "ls /proc/$$/fd; true"]

    @Test func spawnedProcessPassesOnlyTheStandardDescriptors() throws {
        try checkRunning { dir in
            let p = try SpawnedProcess("/bin/sleep", ["5"], stdout: .file("\(dir)/out"), stderr: .pipe)
            return (p.pid, { p.signal(SIGKILL); p.wait() })
        }
    }

    @Test func aChildAppendingToAFileToo() throws {
        try checkRunning { dir in
            let p = try SpawnedProcess("/bin/sleep", ["5"], stdout: .appendFile("\(dir)/log"), stderr: .stdout)
            return (p.pid, { p.signal(SIGKILL); p.wait() })
        }
    }

    @Test func childListsOnlyTheStandardDescriptorsWithOutputToFiles() throws {
        try holdingInheritableDescriptors { _, dir in
            let p = try SpawnedProcess("/bin/sh", Self.listDescriptors, stdout: .file("\(dir)/fds"), stderr: .file("\(dir)/err"))
            #expect(p.wait(seconds: 20))
            #expect(p.exitStatus == 0)
            let listed = try String(contentsOfFile: "\(dir)/fds", encoding: .utf8)
            #expect(listed == "0\n1\n2\n", "the child's descriptors: \(listed.split(separator: "\n"))")
        }
    }

    @Test func childListsOnlyTheStandardDescriptorsWithOutputToPipes() throws {
        try holdingInheritableDescriptors { _, _ in
            let p = try SpawnedProcess("/bin/sh", Self.listDescriptors, stdout: .pipe, stderr: .pipe)
            let listed = p.output()
            #expect(p.wait(seconds: 20))
            #expect(p.exitStatus == 0, "\(p.errors())")
            #expect(listed == "0\n1\n2\n", "the child's descriptors: \(listed.split(separator: "\n"))")
        }
    }

    @Test func childListsOnlyTheStandardDescriptorsThroughRun() throws {
        try holdingInheritableDescriptors { _, _ in
            let (status, listed, errors) = try SpawnedProcess.run("/bin/sh", Self.listDescriptors)
            #expect(status == 0, "\(errors)")
            #expect(listed == "0\n1\n2\n", "the child's descriptors: \(listed.split(separator: "\n"))")
        }
    }

    /// What the other tests rely on: exit codes and signals as the shell reports them, the
    /// environment and directory given, stderr joined to stdout, and no zombie after `wait`.
    @Test func statusEnvironmentDirectoryAndReaping() throws {
        #expect(try SpawnedProcess.run("/bin/sh", ["-c", "exit 3"]).status == 3)
        let (status, out, err) = try SpawnedProcess.run("/bin/sh", ["-c", "echo \"$K_SPAWN_TEST\"; pwd; echo oops >&2"],
                                                        environment: ["K_SPAWN_TEST": "here"], directory: "/tmp")
        #expect(status == 0 && out == "here\n/tmp\n" && err == "oops\n", "\(status) \(out) \(err)")
        let joined = try SpawnedProcess("/bin/sh", ["-c", "echo out; echo err >&2"], stdout: .pipe, stderr: .stdout)
        #expect(joined.output() == "out\nerr\n")
        let sleeper = try SpawnedProcess("/bin/sleep", ["30"])
        #expect(sleeper.isRunning)
        #expect(!sleeper.wait(seconds: 0.05))
        #expect(sleeper.exitStatus == -1)
        sleeper.signal(SIGTERM)
        #expect(sleeper.wait(seconds: 10))
        #expect(sleeper.exitStatus == 128 + SIGTERM)
        #expect(!sleeper.isRunning)
        // Reaped: no /proc entry left (a zombie keeps one).
        #expect(!FileManager.default.fileExists(atPath: "/proc/\(sleeper.pid)/stat") || !((try? String(contentsOfFile: "/proc/\(sleeper.pid)/stat", encoding: .utf8)) ?? "").contains(") Z "))
    }
}
