/// A point in floating-point coordinates.
public struct Point: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) { self.x = x; self.y = y }
    public static let zero = Point(x: 0, y: 0)
    public var description: String { "(\(x), \(y))" }
    public func distance(to other: Point) -> Double {
        let dx = other.x - x, dy = other.y - y
        return (dx * dx + dy * dy).squareRoot()
    }
}

/// A size in whole pixels.
public struct Size: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) { self.width = width; self.height = height }
    public var description: String { "\(width)x\(height)" }
    public var area: Int { width * height }
}

/// An integer pixel rectangle (x, y, width, height); empty when width or height is ≤ 0.
public struct Rect: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }
    public init(size: Size) { self.init(x: 0, y: 0, width: size.width, height: size.height) }
    /// The smallest integer rectangle covering the given floating-point box.
    public static func covering(minX: Double, minY: Double, maxX: Double, maxY: Double) -> Rect {
        let x0 = Int((minX).rounded(.down)), y0 = Int((minY).rounded(.down))
        let x1 = Int((maxX).rounded(.up)), y1 = Int((maxY).rounded(.up))
        return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
    public var isEmpty: Bool { width <= 0 || height <= 0 }
    public var maxX: Int { x + width }
    public var maxY: Int { y + height }
    public var area: Int { isEmpty ? 0 : width * height }
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }

    public func intersection(_ other: Rect) -> Rect {
        let x0 = max(x, other.x), y0 = max(y, other.y)
        let x1 = min(maxX, other.maxX), y1 = min(maxY, other.maxY)
        if x1 <= x0 || y1 <= y0 { return Rect(x: 0, y: 0, width: 0, height: 0) }
        return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }
    public func union(_ other: Rect) -> Rect {
        if isEmpty { return other }
        if other.isEmpty { return self }
        let x0 = min(x, other.x), y0 = min(y, other.y)
        return Rect(x: x0, y: y0, width: max(maxX, other.maxX) - x0, height: max(maxY, other.maxY) - y0)
    }
    public func intersects(_ other: Rect) -> Bool { !intersection(other).isEmpty }
    public func contains(_ other: Rect) -> Bool {
        other.isEmpty || (other.x >= x && other.y >= y && other.maxX <= maxX && other.maxY <= maxY)
    }
    public func contains(_ p: Point) -> Bool {
        p.x >= Double(x) && p.y >= Double(y) && p.x < Double(maxX) && p.y < Double(maxY)
    }
    public func insetBy(_ d: Int) -> Rect { Rect(x: x + d, y: y + d, width: width - 2 * d, height: height - 2 * d) }
}

/// The set of rectangles that changed in a frame, kept small: rectangles that overlap or
/// nearly touch are merged, and past `limit` rectangles everything collapses into their union.
public struct Damage: Sendable, Equatable, CustomStringConvertible {
    public private(set) var rects: [Rect] = []
    public let limit: Int

    public init(limit: Int = 16) { self.limit = limit }
    public init(_ rects: [Rect], limit: Int = 16) {
        self.limit = limit
        for r in rects { add(r) }
    }
    public static func full(_ size: Size) -> Damage { Damage([Rect(size: size)]) }

    public var isEmpty: Bool { rects.isEmpty }
    /// Total pixels covered (rectangles are kept disjoint-ish; overlaps are merged).
    public var area: Int { rects.reduce(0) { $0 + $1.area } }
    public var bounds: Rect { rects.reduce(Rect(x: 0, y: 0, width: 0, height: 0)) { $0.union($1) } }
    public var description: String { rects.map(\.description).joined(separator: ",") }

    public mutating func add(_ rect: Rect) {
        guard !rect.isEmpty else { return }
        var r = rect
        // Merge with every rectangle it overlaps (repeat until stable).
        var merged = true
        while merged {
            merged = false
            for i in rects.indices.reversed() where rects[i].intersects(r) || rects[i].contains(r) {
                r = r.union(rects[i])
                rects.remove(at: i)
                merged = true
            }
        }
        rects.append(r)
        if rects.count > limit {
            let u = bounds
            rects = [u]
        }
    }
    public mutating func formUnion(_ other: Damage) { for r in other.rects { add(r) } }
    /// Damage clipped to a rectangle (usually the screen).
    public func clipped(to bounds: Rect) -> Damage {
        Damage(rects.map { $0.intersection(bounds) }.filter { !$0.isEmpty }, limit: limit)
    }
}
