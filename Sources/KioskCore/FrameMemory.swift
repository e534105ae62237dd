#if canImport(Glibc)
import Glibc
#endif

/// Memory for one XRGB8888 frame that lives as long as its owner: anonymous pages (`mmap`), the
/// whole 2 MiB stretches of which are offered to the kernel for huge pages (`MADV_HUGEPAGE`,
/// honoured when transparent huge pages are set to `madvise` or `always`). A whole frame is then
/// written through a handful of TLB entries instead of one per 4 KiB page: writing a frame that
/// has dropped out of the caches since the last second costs less. The tail beyond the last
/// whole 2 MiB stays in small pages, so the frame never holds more memory than its pixels.
public final class FrameMemory {
    public let buffer: PixelBuffer
    private let mapping: UnsafeMutableRawPointer
    private let mappingLength: Int
    static let hugePage = 2 << 20

    public init(size: Size) throws {
        guard size.width > 0, size.height > 0, size.width <= 16384, size.height <= 16384 else {
            throw KioskError(.render, "frame size \(size) is out of range (1…16384 per side)")
        }
        let stride = size.width * 4
        let bytes = stride * size.height
        // Room to start on a 2 MiB boundary.
        let length = bytes + Self.hugePage
        guard let m = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), m != MAP_FAILED else {
            throw KioskError(.render, "mmap of \(length) bytes for a \(size) frame failed: \(String(cString: strerror(errno))) (errno \(errno))")
        }
        mapping = m
        mappingLength = length
        let aligned = (Int(bitPattern: m) + Self.hugePage - 1) & ~(Self.hugePage - 1)
        let base = UnsafeMutableRawPointer(bitPattern: aligned)!
        let whole = bytes / Self.hugePage * Self.hugePage
        // A hint: without transparent huge pages the frame simply stays in small pages.
        if whole > 0 { _ = madvise(base, whole, MADV_HUGEPAGE) }
        buffer = PixelBuffer(base: base, size: size, stride: stride)
    }

    deinit { munmap(mapping, mappingLength) }
}
