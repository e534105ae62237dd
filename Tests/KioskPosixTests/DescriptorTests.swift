import Testing
import Glibc

@testable import KioskPosix
import KioskCore

struct DescriptorTests {
    /// Whether `fd` is open in this process now, and its close-on-exec flag.
    private func flags(_ fd: Int32) -> Int32? {
        let f = fcntl(fd, F_GETFD)
        return f < 0 ? nil : f
    }

    /// A descriptor of /dev/null numbered `floor` or more, where no other test's descriptors are,
    /// so that one found closed was closed by the owner (not reused by a test running beside).
    /// Each test takes its own floor: two tests sharing one could be handed the number the
    /// other has just closed (seen in CI: `closeConsumesTheOwner` found its number open again).
    private func highDescriptor(floor: Int32) throws -> Int32 {
        let low = try Descriptor.open("/dev/null", O_RDONLY)
        return try Posix.call("fcntl(F_DUPFD_CLOEXEC)") { fcntl(low.raw, F_DUPFD_CLOEXEC, floor) }
    }

    @Test func opensAndMakesSocketsCloseOnExec() throws {
        let file = try Descriptor.open("/dev/null", O_RDONLY)
        #expect(flags(file.raw).map { $0 & FD_CLOEXEC != 0 } == true)
        let sock = try Descriptor.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue))
        #expect(flags(sock.raw).map { $0 & FD_CLOEXEC != 0 } == true)
    }

    @Test func closesOnceWhenTheOwnerEnds() throws {
        let raw = try highDescriptor(floor: 1000)
        do {
            let owner = Descriptor(adopting: raw)
            #expect(flags(owner.raw) != nil)
        }
        #expect(flags(raw) == nil && errno == EBADF)
    }

    @Test func closeConsumesTheOwner() throws {
        let owner = Descriptor(adopting: try highDescriptor(floor: 2000))
        let raw = owner.raw
        owner.close()
        #expect(flags(raw) == nil && errno == EBADF)
    }

    @Test func openErrorsNameThePath() {
        let e = #expect(throws: KioskError.self) { _ = try Descriptor.open("/nonexistent/kioskd-descriptor-test", O_RDONLY) }
        #expect(e?.message == "open /nonexistent/kioskd-descriptor-test failed: No such file or directory (errno 2)")
    }

    @Test func writeAllAndReadThroughAPipe() throws {
        var fds: [Int32] = [-1, -1]
        try Posix.call("pipe") { pipe(&fds) }
        let reader = Descriptor(adopting: fds[0])
        let writer = Descriptor(adopting: fds[1])
        try Array("kioskd".utf8).withUnsafeBytes { try writer.write(all: $0) }
        var buf = [UInt8](repeating: 0, count: 16)
        let n = try buf.withUnsafeMutableBytes { try reader.read(into: $0.baseAddress!, count: $0.count) }
        #expect(String(decoding: buf[..<n], as: UTF8.self) == "kioskd")
    }
}
