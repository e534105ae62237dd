import CCairo
import Glibc
import KioskCore

/// A copy of a canvas's pixels (XRGB8888, rows packed) that may travel to another thread: the
/// render loop copies a frame or a painting (one memcpy per row) and the PNG is encoded elsewhere.
public struct PixelCopy: Sendable {
    public let size: Size
    /// The pixels, `size.width * 4` bytes per row.
    public let bytes: [UInt8]

    /// Encodes the pixels as PNG (a new cairo image, then cairo_surface_write_to_png_stream);
    /// safe on any thread. Errors name the size.
    public func pngData() throws -> [UInt8] {
        let canvas = try Canvas(size: size)
        let dst = canvas.pixels
        let row = size.width * 4
        bytes.withUnsafeBytes { src in
            for y in 0..<size.height {
                memcpy(dst.base + y * dst.stride, src.baseAddress! + y * row, row)
            }
        }
        canvas.markDirty(Rect(size: size))
        return try canvas.pngData()
    }
}

extension Canvas {
    /// A copy of the pixels as they are now (after pending drawing), for encoding elsewhere.
    public func pixelCopy() -> PixelCopy {
        let src = pixels
        let row = size.width * 4
        let bytes = [UInt8](unsafeUninitializedCapacity: row * size.height) { out, count in
            for y in 0..<size.height {
                memcpy(out.baseAddress! + y * row, src.base + y * src.stride, row)
            }
            count = row * size.height
        }
        return PixelCopy(size: size, bytes: bytes)
    }
}
