#if canImport(Glibc)
import Glibc
#endif

/// Memory for one XRGB8888 frame that lives as long as its owner: anonymous pages (`mmap`), the
/// whole 2 MiB stretches of which are offered to the kernel for huge pages (`MADV_HUGEPAGE`,
/// honoured when transparent huge pages are set to `madvise` or `always`). A whole frame is then
/// written through a handful of TLB entries instead of one per 4 KiB page: writing a frame that
/// has dropped out of the caches since the last second costs less. The tail beyond the last
/// whole 2 MiB stretch stays in small pages, so the frame never holds more memory than its pixels.
///
/// The pages are faulted in (`MADV_POPULATE_WRITE`: the kernel allocates and zeroes them, nothing
/// is written) on a short-lived thread of their own, while the daemon is still being built: the
/// first frame then writes pages that are there instead of taking 2 048 page faults for a 1080p
/// frame on the way to the screen (BENCHMARKS.md, "Start-up"). The pixels stay zero (black)
/// either way; a frame written before that thread gets to a page just faults it in itself.
public final class FrameMemory {
    public let buffer: PixelBuffer
    private let mapping: AnonymousMapping
    static let hugePage = 2 << 20
    /// Frames smaller than this are not faulted in ahead (a thread start costs more).
    static let prefaultMinimum = 1 << 20

    public init(size: Size, prefault: Bool = true) throws {
        guard size.width > 0, size.height > 0, size.width <= 16384, size.height <= 16384 else {
            throw KioskError(.render, "frame size \(size) is out of range (1…16384 per side)")
        }
        let stride = size.width * 4
        let bytes = stride * size.height
        // Room to start on a 2 MiB boundary.
        let mapping = try AnonymousMapping(length: bytes + Self.hugePage, purpose: "a \(size) frame")
        self.mapping = mapping
        let aligned = (mapping.address + UInt(Self.hugePage) - 1) & ~UInt(Self.hugePage - 1)
        let base = UnsafeMutableRawPointer(bitPattern: aligned)!
        let whole = bytes / Self.hugePage * Self.hugePage
        // A hint: without transparent huge pages the frame simply stays in small pages.
        if whole > 0 { _ = madvise(base, whole, MADV_HUGEPAGE) }
        buffer = PixelBuffer(base: base, size: size, stride: stride)
        if prefault && bytes >= Self.prefaultMinimum {
            // The thread keeps the mapping until it is done (an early free unmaps it after).
            try? NamedThread.detach(name: "kioskd-prefault") {
                _ = madvise(UnsafeMutableRawPointer(bitPattern: aligned), bytes, Self.populateWrite)
                withExtendedLifetime(mapping) {}
            }
        }
    }

    /// `MADV_POPULATE_WRITE` (Linux 5.14); older kernels refuse it (EINVAL) and the first frame
    /// faults the pages in as before.
    static let populateWrite: Int32 = 23

    /// Whether each page of the frame is in memory now (`mincore`), to check the prefault.
    public var residentFraction: Double {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = Int(bitPattern: buffer.base) & ~(page - 1)
        let length = Int(bitPattern: buffer.base) + buffer.stride * buffer.size.height - start
        var vec = [UInt8](repeating: 0, count: (length + page - 1) / page)
        guard mincore(UnsafeMutableRawPointer(bitPattern: start), length, &vec) == 0 else { return 0 }
        return Double(vec.filter { $0 & 1 != 0 }.count) / Double(vec.count)
    }
}

/// An anonymous read-write mapping, unmapped when its last owner lets go (the frame, or the
/// thread faulting it in).
final class AnonymousMapping: Sendable {
    let address: UInt
    let length: Int

    init(length: Int, purpose: String) throws {
        guard let m = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), m != MAP_FAILED else {
            throw KioskError(.render, "mmap of \(length) bytes for \(purpose) failed: \(String(cString: strerror(errno))) (errno \(errno))")
        }
        address = UInt(bitPattern: m)
        self.length = length
    }

    deinit { munmap(UnsafeMutableRawPointer(bitPattern: address), length) }
}
