import Foundation
@testable import KioskDaemon

#if canImport(Glibc)
import Glibc
import KioskState
#endif

/// A deterministic random source (SplitMix64), so a failing cut point is found again by its seed.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A disk that loses power, in the manner of SQLite's crash-test VFS: the store's system calls
/// (`FileStateStore.Syscalls`) run on a real directory (on tmpfs), and this keeps what the disk
/// is known to hold — a file's bytes as of its last successful `fsync`, the directory's entries as
/// of its last successful `fsync` — beside what was changed since. At the cut point (the n-th
/// call) the power goes: that call and every later one fail with EIO, and `image` writes the
/// directory as a disk could hold it after coming back: for each file its last synced bytes, the
/// bytes of a failed `fsync` (which may or may not have reached the disk), or its bytes at the cut,
/// possibly torn (a random part of the newer bytes, in 512-byte sectors); and for the directory
/// its last synced entries with a random prefix of the creates, renames and unlinks made since.
///
/// The bytes are read back from the real files at each `fsync` and at the cut, so whatever the
/// store's calls did to a file is seen whichever call did it.
// @unchecked: one test thread drives the store, which calls these closures on that thread only.
final class PowerCutDisk: @unchecked Sendable {
    enum DirOp { case link(String, UInt64), unlink(String), rename(String, String) }
    struct Inode { var durable: [UInt8] = []; var maybe: [[UInt8]] = [] }

    let directory: String
    private let dirIno: UInt64
    var rng: SeededRandom
    /// The call at which the power goes (1-based); nil: never.
    var cutAt: Int?
    private(set) var calls = 0
    private(set) var dead = false
    /// Probability that a file or directory `fsync` fails with EIO (the power stays on).
    var fsyncFailure = 0.0
    /// From this call on every `fsync` fails (a dying disk); nil: never.
    var fsyncFailsFrom: Int?
    /// Probability that a write fails with ENOSPC.
    var writeFailure = 0.0
    /// Probability that a rename fails with EIO.
    var renameFailure = 0.0

    private var inodes: [UInt64: Inode] = [:]
    private var durableNames: [String: UInt64] = [:]
    private var pending: [DirOp] = []
    /// What the files and the directory held when the power went.
    private var atCut: (names: [String: UInt64], bytes: [UInt64: [UInt8]])?
    /// Descriptors seen, by inode (to read files whose name is gone).
    private var fds: [Int32: UInt64] = [:]

    init(directory: String, seed: UInt64) {
        self.directory = directory
        rng = SeededRandom(seed: seed)
        var st = stat()
        _ = lstat(directory, &st)
        dirIno = UInt64(st.st_ino)
        durableNames = Self.listing(directory)
        for (name, ino) in durableNames { inodes[ino] = Inode(durable: Self.read(path: "\(directory)/\(name)") ?? []) }
    }

    static func listing(_ dir: String) -> [String: UInt64] {
        var out: [String: UInt64] = [:]
        guard let d = opendir(dir) else { return out }
        defer { closedir(d) }
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name == "." || name == ".." { continue }
            out[name] = UInt64(e.pointee.d_ino)
        }
        return out
    }

    static func read(path: String) -> [UInt8]? {
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = Glibc.read(fd, &buf, buf.count)
            if n <= 0 { break }
            out += buf[..<n]
        }
        return out
    }

    private func isOurDir(_ dirfd: Int32) -> Bool {
        var st = stat()
        return dirfd >= 0 && fstat(dirfd, &st) == 0 && UInt64(st.st_ino) == dirIno
    }

    private func ino(at dirfd: Int32, _ name: String) -> UInt64? {
        var st = stat()
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? UInt64(st.st_ino) : nil
    }

    /// Counts the call; at the cut point records what the disk holds and goes dead. False: fail it.
    private func tick() -> Bool {
        if dead { errno = EIO; return false }
        calls += 1
        if let c = cutAt, calls >= c {
            cut()
            errno = EIO
            return false
        }
        return true
    }

    private func chance(_ p: Double) -> Bool { p > 0 && Double.random(in: 0..<1, using: &rng) < p }

    /// The power goes now: what the directory and its files hold is recorded.
    func cut() {
        guard !dead else { return }
        dead = true
        let names = Self.listing(directory)
        var bytes: [UInt64: [UInt8]] = [:]
        for (name, ino) in names { if let b = Self.read(path: "\(directory)/\(name)") { bytes[ino] = b } }
        for (fd, ino) in fds where bytes[ino] == nil {
            var st = stat()
            if fstat(fd, &st) == 0, UInt64(st.st_ino) == ino, let b = Self.read(path: "/proc/self/fd/\(fd)") { bytes[ino] = b }
        }
        atCut = (names, bytes)
    }

    /// Writes what the disk holds after the power came back into `target` (a new directory).
    func image(into target: String) {
        if !dead { cut() }
        var names = durableNames
        let applied = pending.isEmpty ? 0 : Int.random(in: 0...pending.count, using: &rng)
        for op in pending.prefix(applied) {
            switch op {
            case .link(let n, let i): names[n] = i
            case .unlink(let n): names[n] = nil
            case .rename(let a, let b):
                if let i = names[a] { names[b] = i; names[a] = nil }
            }
        }
        mkdir(target, 0o750)
        for (name, ino) in names {
            let node = inodes[ino] ?? Inode()
            let now = atCut?.bytes[ino]
            var candidates = [node.durable] + node.maybe
            if let now { candidates.append(now) }
            var chosen = candidates[Int.random(in: 0..<candidates.count, using: &rng)]
            if let now, chosen != now, Int.random(in: 0..<3, using: &rng) == 0 {
                chosen = tear(chosen, now)
            }
            FileManager.default.createFile(atPath: "\(target)/\(name)", contents: Data(chosen))
        }
    }

    /// Part of the way from `old` to `new`: an append cut anywhere, or 512-byte sectors of either.
    private func tear(_ old: [UInt8], _ new: [UInt8]) -> [UInt8] {
        if new.count > old.count && Array(new.prefix(old.count)) == old {
            return Array(new.prefix(Int.random(in: old.count...new.count, using: &rng)))
        }
        let length = Bool.random(using: &rng) ? old.count : new.count
        var out: [UInt8] = []
        var at = 0
        while at < length {
            let end = min(at + 512, length)
            let fromNew = Bool.random(using: &rng)
            for i in at..<end {
                let src = fromNew ? new : old
                out.append(i < src.count ? src[i] : 0)
            }
            at = end
        }
        return out
    }

    private func sync(_ fd: Int32) -> Int32 {
        guard tick() else { return -1 }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return Glibc.fsync(fd) }
        let failing = fsyncFailsFrom.map { calls >= $0 } == true || chance(fsyncFailure)
        if st.st_mode & S_IFMT == S_IFDIR {
            guard UInt64(st.st_ino) == dirIno else { return 0 }
            if failing { errno = EIO; return -1 }
            durableNames = Self.listing(directory)
            pending.removeAll()
            return 0
        }
        let ino = UInt64(st.st_ino)
        let now = Self.read(path: "/proc/self/fd/\(fd)") ?? []
        if failing {
            inodes[ino, default: Inode()].maybe.append(now)
            errno = EIO
            return -1
        }
        inodes[ino] = Inode(durable: now, maybe: [])
        return 0
    }

    var syscalls: FileStateStore.Syscalls {
        FileStateStore.Syscalls(
            openat: { dirfd, name, flags, mode in
                guard self.tick() else { return -1 }
                let ours = (dirfd == AT_FDCWD && name == self.directory) ? false : self.isOurDir(dirfd)
                let existed = ours ? self.ino(at: dirfd, name) != nil : true
                let fd = Glibc.openat(dirfd, name, flags, mode)
                if fd >= 0 {
                    var st = stat()
                    if fstat(fd, &st) == 0 {
                        let ino = UInt64(st.st_ino)
                        self.fds[fd] = ino
                        if ours && !existed {
                            self.inodes[ino] = Inode()
                            self.pending.append(.link(name, ino))
                        }
                    }
                }
                return fd
            },
            write: { fd, bytes, count in
                guard self.tick() else { return -1 }
                if self.chance(self.writeFailure) { errno = ENOSPC; return -1 }
                return Glibc.write(fd, bytes, count)
            },
            fsync: { fd in self.sync(fd) },
            renameat: { dirfd, from, to in
                guard self.tick() else { return -1 }
                if self.chance(self.renameFailure) { errno = EIO; return -1 }
                let r = Glibc.renameat(dirfd, from, dirfd, to)
                if r == 0 && self.isOurDir(dirfd) { self.pending.append(.rename(from, to)) }
                return r
            },
            unlinkat: { dirfd, name in
                guard self.tick() else { return -1 }
                let r = Glibc.unlinkat(dirfd, name, 0)
                if r == 0 && self.isOurDir(dirfd) { self.pending.append(.unlink(name)) }
                return r
            },
            mkdir: { path, mode in
                guard self.tick() else { return -1 }
                return Glibc.mkdir(path, mode)
            },
            ftruncate: { fd, length in
                guard self.tick() else { return -1 }
                return Glibc.ftruncate(fd, length)
            })
    }
}
