#if canImport(Glibc)
import Glibc
#endif
import CCairo
import KioskCore

/// The physical floor: what one full frame costs at the least in the display format (XRGB8888).
struct FloorResult {
    var size: Size
    /// cairo_paint with CAIRO_OPERATOR_SOURCE on an RGB24 image: pixman's solid fill.
    var cairoFill: Samples
    /// memset of the whole frame.
    var memsetFill: Samples
    /// memcpy of one whole frame into another (what a full present costs).
    var copy: Samples
}

enum Floor {
    /// Measures the fill and copy floors at `size` with `runs` repetitions.
    static func run(size: Size, runs: Int) -> FloorResult {
        let stride = Int(cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, Int32(size.width)))
        let bytes = stride * size.height
        let a = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        let b = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        defer { a.deallocate(); b.deallocate() }
        memset(a, 0, bytes)
        memset(b, 0, bytes)

        let surface = cairo_image_surface_create_for_data(a.assumingMemoryBound(to: UInt8.self), CAIRO_FORMAT_RGB24,
                                                          Int32(size.width), Int32(size.height), Int32(stride))!
        let cr = cairo_create(surface)!
        defer { cairo_destroy(cr); cairo_surface_destroy(surface) }
        cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE)
        var i = 0
        let fill = measure(runs: runs) {
            i += 1
            cairo_set_source_rgb(cr, Double(i % 256) / 255, 0.5, Double((i * 7) % 256) / 255)
            cairo_paint(cr)
            cairo_surface_flush(surface)
        }
        let set = measure(runs: runs) {
            i += 1
            memset(b, Int32(i & 0xFF), bytes)
        }
        let copy = measure(runs: runs) {
            memcpy(b, a, bytes)
        }
        return FloorResult(size: size, cairoFill: fill, memsetFill: set, copy: copy)
    }
}
