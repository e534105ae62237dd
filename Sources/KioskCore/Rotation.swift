/// How the panel is mounted: the picture is turned clockwise by this many degrees on the
/// physical framebuffer so that it is upright for the viewer. Scenes lay out in the *logical*
/// size (width and height swapped for 90 and 270); touch is mapped back with the inverse.
public enum Rotation: Int, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    case r0 = 0, r90 = 90, r180 = 180, r270 = 270

    public init?(degrees: Int) { self.init(rawValue: degrees) }
    public var description: String { "\(rawValue)" }
    public var swapsAxes: Bool { self == .r90 || self == .r270 }

    /// The scene's size on a physical mode of `physical` size.
    public func logicalSize(physical: Size) -> Size {
        swapsAxes ? Size(width: physical.height, height: physical.width) : physical
    }
    /// The physical size that shows a logical size.
    public func physicalSize(logical: Size) -> Size { logicalSize(physical: logical) }

    /// A normalised logical point (0…1, as the user sees the screen) to the normalised physical point.
    public func logicalToPhysical(_ p: Point) -> Point {
        switch self {
        case .r0: return p
        case .r90: return Point(x: 1 - p.y, y: p.x)
        case .r180: return Point(x: 1 - p.x, y: 1 - p.y)
        case .r270: return Point(x: p.y, y: 1 - p.x)
        }
    }
    /// A normalised physical point (0…1 across the panel's native scan-out) to the logical point.
    public func physicalToLogical(_ p: Point) -> Point {
        switch self {
        case .r0: return p
        case .r90: return Point(x: p.y, y: 1 - p.x)
        case .r180: return Point(x: 1 - p.x, y: 1 - p.y)
        case .r270: return Point(x: 1 - p.y, y: p.x)
        }
    }
    /// A logical pixel rectangle to the physical pixel rectangle it lands on.
    public func logicalToPhysical(_ r: Rect, logical: Size) -> Rect {
        switch self {
        case .r0: return r
        case .r90: return Rect(x: logical.height - r.maxY, y: r.x, width: r.height, height: r.width)
        case .r180: return Rect(x: logical.width - r.maxX, y: logical.height - r.maxY, width: r.width, height: r.height)
        case .r270: return Rect(x: r.y, y: logical.width - r.maxX, width: r.height, height: r.width)
        }
    }
}

/// A pixel buffer in XRGB8888 (cairo's RGB24 on little-endian, DRM_FORMAT_XRGB8888).
/// It does not own its memory (nor is it `Sendable`: it stays on the thread that draws and presents).
public struct PixelBuffer {
    public let base: UnsafeMutableRawPointer
    public let size: Size
    /// Bytes per row.
    public let stride: Int
    public init(base: UnsafeMutableRawPointer, size: Size, stride: Int) {
        self.base = base; self.size = size; self.stride = stride
    }
    /// The pixel at (x, y) as 0xAARRGGBB (alpha byte as stored, ignored by XRGB).
    public func pixel(x: Int, y: Int) -> UInt32 {
        precondition(x >= 0 && y >= 0 && x < size.width && y < size.height, "pixel (\(x),\(y)) outside \(size)")
        return base.load(fromByteOffset: y * stride + x * 4, as: UInt32.self)
    }
}

/// Copies `rect` (logical coordinates) of `src` into `dst` turned by `rotation`; `dst` has the
/// physical size. Rows are copied with memcpy for 0°; turned copies walk pixels in cache-friendly
/// tiles. Rectangles are clipped to both buffers.
public func blit(_ src: PixelBuffer, into dst: PixelBuffer, rect: Rect, rotation: Rotation) {
    let r = rect.intersection(Rect(size: src.size))
    guard !r.isEmpty else { return }
    let pr = rotation.logicalToPhysical(r, logical: src.size)
    guard Rect(size: dst.size).contains(pr) else { return }
    switch rotation {
    case .r0:
        let bytes = r.width * 4
        for y in r.y..<r.maxY {
            (dst.base + y * dst.stride + r.x * 4).copyMemory(from: src.base + y * src.stride + r.x * 4, byteCount: bytes)
        }
    default:
        let lw = src.size.width, lh = src.size.height
        let tile = 32
        var ty = r.y
        while ty < r.maxY {
            let ty1 = min(ty + tile, r.maxY)
            var tx = r.x
            while tx < r.maxX {
                let tx1 = min(tx + tile, r.maxX)
                for y in ty..<ty1 {
                    let srow = (src.base + y * src.stride).assumingMemoryBound(to: UInt32.self)
                    for x in tx..<tx1 {
                        let px: Int, py: Int
                        switch rotation {
                        case .r90: px = lh - 1 - y; py = x
                        case .r180: px = lw - 1 - x; py = lh - 1 - y
                        case .r270: px = y; py = lw - 1 - x
                        case .r0: px = x; py = y
                        }
                        (dst.base + py * dst.stride).assumingMemoryBound(to: UInt32.self)[px] = srow[x]
                    }
                }
                tx = tx1
            }
            ty = ty1
        }
    }
}
