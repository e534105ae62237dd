import KioskCore

/// One stroke of a painting: a colour, a width in pixels and the points the finger passed
/// through (in scene pixels), drawn as a smooth curve through every point.
public struct Stroke: Sendable, Equatable {
    public var color: Color
    public var width: Double
    public private(set) var points: [Point]

    public init(start: Point, color: Color, width: Double) {
        self.color = color
        self.width = width
        self.points = [start]
    }
    public init(points: [Point], color: Color, width: Double) {
        precondition(!points.isEmpty, "a stroke has at least one point")
        self.color = color; self.width = width; self.points = points
    }
    /// Where the stroke began.
    public var startPoint: Point { points[0] }
    public mutating func add(_ point: Point) { points.append(point) }
}

/// What changed in a painting (the observer's message).
public enum PaintingChange: Sendable, Equatable {
    /// A finger (touch slot) started a stroke.
    case started(slot: Int)
    /// The stroke of `slot` gained points; `from` is the index of the first new point.
    case extended(slot: Int, from: Int)
    /// The stroke of `slot` ended (lifted or cancelled) and is now `strokes[index]`.
    case finished(slot: Int, index: Int)
    /// The last finished stroke was removed (and can be redone).
    case undone(Stroke)
    /// A removed stroke came back as `strokes[index]`.
    case redone(index: Int)
    /// Every stroke was removed.
    case cleared
}

/// Told when a painting changes (the model notifies its observers; the scene never polls).
public protocol PaintingObserver: AnyObject {
    func painting(_ painting: Painting, didChange change: PaintingChange)
}

/// The painting: finished strokes in the order they were finished, the strokes being drawn
/// (one per finger, keyed by touch slot), and the strokes that can be redone.
/// It knows nothing about drawing.
public final class Painting {
    /// Finished strokes, oldest first (the drawing order).
    public private(set) var strokes: [Stroke] = []
    /// Strokes being drawn, by touch slot.
    public private(set) var active: [Int: Stroke] = [:]
    /// Slots in the order their strokes started (drawing order of the active strokes).
    public private(set) var activeOrder: [Int] = []
    /// Undone strokes, the next one to redo last.
    public private(set) var redoStack: [Stroke] = []
    /// How many of the latest strokes can be undone; 0 = all of them.
    public var maxUndo: Int
    /// Strokes below this index can no longer be undone (`maxUndo`).
    public private(set) var undoFloor = 0

    private var observers: [WeakPaintingObserver] = []
    private struct WeakPaintingObserver { weak var value: PaintingObserver? }

    public init(maxUndo: Int = 0) { self.maxUndo = maxUndo }

    public func addObserver(_ o: PaintingObserver) {
        observers.removeAll { $0.value == nil }
        observers.append(WeakPaintingObserver(value: o))
    }
    public func removeObserver(_ o: PaintingObserver) {
        observers.removeAll { $0.value == nil || $0.value === o }
    }
    private func notify(_ change: PaintingChange) {
        for o in observers { o.value?.painting(self, didChange: change) }
    }

    public var isEmpty: Bool { strokes.isEmpty && active.isEmpty }
    public var canUndo: Bool { strokes.count > undoFloor }
    public var canRedo: Bool { !redoStack.isEmpty }

    /// Starts a stroke for a finger (touch down). A stroke still open on that slot is finished first.
    public func startStroke(slot: Int, at point: Point, color: Color, width: Double) {
        if active[slot] != nil { endStroke(slot: slot) }
        active[slot] = Stroke(start: point, color: color, width: width)
        activeOrder.append(slot)
        notify(.started(slot: slot))
    }

    /// Adds a point to a finger's stroke (touch motion); false when the slot has no stroke or
    /// the point repeats the last one.
    @discardableResult
    public func continueStroke(slot: Int, to point: Point) -> Bool {
        guard var s = active[slot], s.points.last != point else { return false }
        active[slot] = nil          // keep the points array uniquely referenced while appending
        s.add(point)
        let from = s.points.count - 1
        active[slot] = s
        notify(.extended(slot: slot, from: from))
        return true
    }

    /// Ends a finger's stroke (touch up, or cancel: the stroke stays as drawn). New strokes
    /// make the redo stack empty.
    @discardableResult
    public func endStroke(slot: Int) -> Bool {
        guard let s = active.removeValue(forKey: slot) else { return false }
        activeOrder.removeAll { $0 == slot }
        strokes.append(s)
        redoStack.removeAll()
        if maxUndo > 0 { undoFloor = max(undoFloor, strokes.count - maxUndo) }
        notify(.finished(slot: slot, index: strokes.count - 1))
        return true
    }

    /// Removes the last finished stroke; false when there is nothing (more) to undo.
    @discardableResult
    public func undo() -> Bool {
        guard canUndo, let s = strokes.popLast() else { return false }
        redoStack.append(s)
        notify(.undone(s))
        return true
    }

    /// Brings back the last undone stroke; false when there is nothing to redo.
    @discardableResult
    public func redo() -> Bool {
        guard let s = redoStack.popLast() else { return false }
        strokes.append(s)
        notify(.redone(index: strokes.count - 1))
        return true
    }

    /// Removes every stroke, the ones being drawn included (their fingers draw nothing more
    /// until lifted), and forgets what could be redone.
    public func clear() {
        strokes.removeAll()
        active.removeAll()
        activeOrder.removeAll()
        redoStack.removeAll()
        undoFloor = 0
        notify(.cleared)
    }
}
