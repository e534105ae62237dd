/// A whole-pixel offset of a scene's content.
public struct PixelOffset: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var dx: Int
    public var dy: Int
    public init(dx: Int, dy: Int) { self.dx = dx; self.dy = dy }
    public static let zero = PixelOffset(dx: 0, dy: 0)
    public var description: String { "(\(dx), \(dy))" }
}

/// Burn-in care for static content: the offset to draw it at, moving on a slow path through every
/// offset of the box −N…N × −N…N, one pixel at a time.
///
/// The path is a snake over the box's rows (left to right, then right to left on the next row,
/// top to bottom) and back along the same snake, so every step moves one pixel along one axis and
/// the path closes on itself; it is entered at the centre so that the first offset is (0, 0).
/// Every offset is visited in each period (the two ends of the snake once, the rest twice).
/// The offset is a pure function of time: any clock works (monotonic for the renderer).
public struct PixelOrbit: Sendable, Equatable {
    public let pixels: Int
    public let periodNanos: Int64
    /// The closed path, one entry per step (2·((2N+1)² − 1) entries; [(0,0)] when N = 0).
    public let path: [PixelOffset]

    public init(_ shift: PixelShift) {
        self.init(pixels: shift.pixels, periodNanos: Int64((shift.periodMinutes * 60e9).rounded()))
    }

    /// - Parameters: pixels: N ≥ 0; periodNanos > 0 (validated by `PixelShift`).
    public init(pixels: Int, periodNanos: Int64) {
        self.pixels = max(0, pixels)
        self.periodNanos = max(1, periodNanos)
        let n = self.pixels
        var snake: [PixelOffset] = []
        for (row, dy) in (-n...n).enumerated() {
            let xs = row % 2 == 0 ? Array(-n...n) : Array((-n...n).reversed())
            for dx in xs { snake.append(PixelOffset(dx: dx, dy: dy)) }
        }
        var closed = snake
        if snake.count > 1 { closed += snake.dropFirst().dropLast().reversed() }
        // Start at the centre: it is the snake's middle entry.
        let centre = (snake.count - 1) / 2
        path = Array(closed[centre...] + closed[..<centre])
    }

    /// The box every offset lies in: −N…N on both axes.
    public var box: Rect { Rect(x: -pixels, y: -pixels, width: 2 * pixels + 1, height: 2 * pixels + 1) }

    /// How long each offset is held.
    public var stepNanos: Int64 { max(1, periodNanos / Int64(path.count)) }

    private func stepIndex(atNanos t: Int64) -> Int {
        let within = ((t % periodNanos) + periodNanos) % periodNanos
        let i = Int(periodNanos.dividingFullWidth(within.multipliedFullWidth(by: Int64(path.count))).quotient)
        return min(i, path.count - 1)
    }

    /// The offset at time `t` (nanoseconds on any clock).
    public func offset(atNanos t: Int64) -> PixelOffset { path[stepIndex(atNanos: t)] }

    /// What must be redrawn when static content drawn in `content` (at offset zero) moves from
    /// offset `a` to offset `b`: the union of where it was and where it is (the content grown by
    /// one pixel for a single step), and nothing when it did not move.
    public static func damage(content: Rect, from a: PixelOffset, to b: PixelOffset) -> Rect? {
        guard a != b, !content.isEmpty else { return nil }
        let old = Rect(x: content.x + a.dx, y: content.y + a.dy, width: content.width, height: content.height)
        let new = Rect(x: content.x + b.dx, y: content.y + b.dy, width: content.width, height: content.height)
        return old.union(new)
    }

    /// Everything static content in `content` can ever cover on this orbit (the content grown by N).
    public func reach(of content: Rect) -> Rect {
        Rect(x: content.x - pixels, y: content.y - pixels, width: content.width + 2 * pixels, height: content.height + 2 * pixels)
    }

    /// The first time after `t` at which the offset may change (the next step's start).
    public func nextStep(afterNanos t: Int64) -> Int64 {
        guard path.count > 1 else { return Int64.max }
        let i = stepIndex(atNanos: t)
        let periodStart = t - (((t % periodNanos) + periodNanos) % periodNanos)
        // The step boundaries are at ceil(k · period / count).
        let k = Int64(i + 1)
        let (q, r) = Int64(path.count).dividingFullWidth(k.multipliedFullWidth(by: periodNanos))
        let boundary = r == 0 ? q : q + 1
        var next = periodStart + boundary
        if next <= t { next = t + 1 }
        return next
    }
}

/// `[display] pixel_shift = { pixels = N, period_minutes = M }`: off when absent.
public struct PixelShift: Sendable, Equatable {
    public static let maxPixels = 32
    public let pixels: Int
    public let periodMinutes: Double

    /// Errors name the key and the bad value: "display.pixel_shift.pixels = 0: …".
    public init(pixels: Int, periodMinutes: Double, key: String = "display.pixel_shift") throws {
        guard (1...Self.maxPixels).contains(pixels) else {
            throw KioskError.config("\(key).pixels = \(pixels): must be 1…\(Self.maxPixels) (a few pixels; leave pixel_shift out to turn it off)")
        }
        guard periodMinutes.isFinite, periodMinutes >= 0.1, periodMinutes <= 24 * 60 else {
            throw KioskError.config("\(key).period_minutes = \(periodMinutes): must be 0.1…1440 minutes")
        }
        self.pixels = pixels
        self.periodMinutes = periodMinutes
    }
}
