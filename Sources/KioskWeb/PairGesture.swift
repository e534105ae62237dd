import KioskCore

/// A corner of the screen (normalised touch coordinates: x grows to the right, y downwards).
public enum ScreenCorner: String, Sendable, Equatable, CaseIterable {
    case topLeft = "top-left", topRight = "top-right", bottomLeft = "bottom-left", bottomRight = "bottom-right"

    /// Whether a touch at (x, y) lies in this corner's square of `size` (a fraction of the width and the height).
    public func contains(x: Double, y: Double, size: Double) -> Bool {
        let left = x <= size, right = x >= 1 - size, top = y <= size, bottom = y >= 1 - size
        switch self {
        case .topLeft: return left && top
        case .topRight: return right && top
        case .bottomLeft: return left && bottom
        case .bottomRight: return right && bottom
        }
    }
}

/// `[web] pair_gesture`: a finger held on a corner of the kiosk's screen opens an operator code.
public struct PairGestureSettings: Sendable, Equatable {
    public var corner: ScreenCorner
    /// How long the finger is held, in microseconds.
    public var holdUsec: UInt64
    public init(corner: ScreenCorner, holdUsec: UInt64) { self.corner = corner; self.holdUsec = holdUsec }
}

/// Recognises the pairing gesture: one finger put down in the corner (its square of
/// `cornerSize`) and held there for `holdUsec`. Pure, like `GestureRecognizer`: feed touches in
/// order, arm a monotonic timer for `nextDeadline()` and call `advance(toUsec:)` when it fires.
/// A touch that starts in the corner belongs to the gesture until it is lifted (the scene never
/// sees it, so holding the corner cannot also be a scene's long press).
public struct PairGesture: Sendable {
    /// The corner's square: this fraction of the screen's width and height.
    public static let cornerSize = 0.1
    public let settings: PairGestureSettings
    private var slot: Int?
    private var startUsec: UInt64 = 0
    /// The finger left the corner, or the prompt was opened: nothing more until it is lifted.
    private var done = false

    public init(settings: PairGestureSettings) { self.settings = settings }

    /// When the hold completes (µs, the touches' clock), or nil when no hold is under way.
    public func nextDeadline() -> UInt64? {
        guard slot != nil, !done else { return nil }
        return startUsec &+ settings.holdUsec
    }

    /// True once when a hold's deadline is at or before `now` (open the pairing prompt).
    public mutating func advance(toUsec now: UInt64) -> Bool {
        guard let d = nextDeadline(), now >= d else { return false }
        done = true
        return true
    }

    /// Feeds one touch. `swallow`: the touch belongs to the gesture (do not pass it on);
    /// `open`: the hold completed.
    public mutating func feed(_ e: TouchEvent) -> (swallow: Bool, open: Bool) {
        let open = advance(toUsec: e.timeUsec)
        switch e.phase {
        case .down:
            guard slot == nil, settings.corner.contains(x: e.x, y: e.y, size: Self.cornerSize) else { return (false, open) }
            slot = e.slot
            startUsec = e.timeUsec
            done = false
            return (true, open)
        case .motion:
            guard slot == e.slot else { return (false, open) }
            if !settings.corner.contains(x: e.x, y: e.y, size: Self.cornerSize) { done = true }
            return (true, open)
        case .up, .cancel:
            guard slot == e.slot else { return (false, open) }
            slot = nil
            done = false
            return (true, open)
        }
    }
}
