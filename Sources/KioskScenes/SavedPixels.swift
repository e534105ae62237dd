import KioskCore
import KioskRender

/// The pixels of a rectangle of a canvas, kept to be put back (what an overlay drawn over the
/// scene's frame covered).
struct SavedPixels {
    let rect: Rect
    private var pixels: [UInt32]

    init(_ rect: Rect, of canvas: Canvas) {
        self.rect = rect
        let px = canvas.pixels
        pixels = [UInt32](repeating: 0, count: rect.area)
        pixels.withUnsafeMutableBytes { dst in
            for y in 0..<rect.height {
                (dst.baseAddress! + y * rect.width * 4).copyMemory(from: px.base + (rect.y + y) * px.stride + rect.x * 4, byteCount: rect.width * 4)
            }
        }
    }

    /// Puts the pixels back and marks them dirty; returns where.
    func restore(to canvas: Canvas) -> Rect {
        let px = canvas.pixels
        pixels.withUnsafeBytes { src in
            for y in 0..<rect.height {
                (px.base + (rect.y + y) * px.stride + rect.x * 4).copyMemory(from: src.baseAddress! + y * rect.width * 4, byteCount: rect.width * 4)
            }
        }
        canvas.markDirty(rect)
        return rect
    }
}
