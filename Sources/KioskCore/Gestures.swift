/// Limits that tell a tap, a long press and a swipe apart.
///
/// Distances are in normalised scene units, measured per axis: 0.1 horizontally is a tenth of
/// the scene's width, 0.1 vertically a tenth of its height (so a swipe of 0.2 crosses a fifth
/// of the screen in its direction whatever the aspect ratio). Times are in microseconds.
public struct GestureThresholds: Sendable, Equatable {
    /// A tap lasts at most this long from down to up.
    public var tapMaxDuration: UInt64
    /// A tap (and a long press) moves at most this far on either axis from where it started.
    public var tapMaxMovement: Double
    /// A finger held still this long is a long press (reported while it is still down).
    public var longPressDuration: UInt64
    /// A swipe moves at least this far along its main axis between down and up.
    public var swipeMinDistance: Double

    public init(tapMaxDuration: UInt64 = 300_000, tapMaxMovement: Double = 0.03,
                longPressDuration: UInt64 = 800_000, swipeMinDistance: Double = 0.15) {
        self.tapMaxDuration = tapMaxDuration
        self.tapMaxMovement = tapMaxMovement
        self.longPressDuration = longPressDuration
        self.swipeMinDistance = swipeMinDistance
    }

    /// Checks that the limits can be told apart; the error names the field.
    public func validate() throws {
        if tapMaxDuration == 0 { throw KioskError.config("tapMaxDuration must be greater than 0") }
        if longPressDuration <= tapMaxDuration {
            throw KioskError.config("longPressDuration (\(longPressDuration) µs) must be longer than tapMaxDuration (\(tapMaxDuration) µs)")
        }
        if !(tapMaxMovement.isFinite && tapMaxMovement > 0 && tapMaxMovement < 1) {
            throw KioskError.config("tapMaxMovement must be between 0 and 1 (a fraction of the screen), got \(tapMaxMovement)")
        }
        if !(swipeMinDistance.isFinite && swipeMinDistance > 0 && swipeMinDistance <= 1) {
            throw KioskError.config("swipeMinDistance must be between 0 and 1 (a fraction of the screen), got \(swipeMinDistance)")
        }
        if swipeMinDistance <= tapMaxMovement {
            throw KioskError.config("swipeMinDistance (\(swipeMinDistance)) must be larger than tapMaxMovement (\(tapMaxMovement))")
        }
    }
}

/// Recognises single-finger taps, long presses and swipes from touch events.
///
/// Pure: feed it `TouchEvent`s in order (`feed`), and when `nextDeadline()` is not nil arm a
/// monotonic timer for it and call `advance(toUsec:)` when it fires (a long press is reported
/// while the finger is still down). Only one finger makes gestures: a second finger landing
/// cancels the gesture in progress, and nothing is recognised again until every finger is up.
/// A cancelled touch (`.cancel`) ends the gesture without a result.
///
/// - tap: down and up within `tapMaxDuration`, never moving more than `tapMaxMovement`;
///   reported at the up position.
/// - long press: held `longPressDuration` without moving more than `tapMaxMovement`; reported
///   at the down position; the finger's up then makes nothing.
/// - swipe: up after moving at least `swipeMinDistance` along the dominant axis (any
///   duration); reported with its direction and the down position.
public struct GestureRecognizer: Sendable {
    public var thresholds: GestureThresholds

    private struct Track: Sendable {
        var slot: Int
        var start: Point
        var startUsec: UInt64
        var last: Point
        var moved = false
        var longPressed = false
    }
    private var track: Track?
    private var fingers: Set<Int> = []
    private var cancelled = false

    public init(thresholds: GestureThresholds = GestureThresholds()) {
        self.thresholds = thresholds
    }

    /// When a long press would be due (µs, the touches' clock), or nil if none can happen.
    public func nextDeadline() -> UInt64? {
        guard let t = track, !t.moved, !t.longPressed, !cancelled else { return nil }
        return t.startUsec &+ thresholds.longPressDuration
    }

    /// Reports a long press whose deadline is at or before `now`.
    public mutating func advance(toUsec now: UInt64) -> [Gesture] {
        guard let d = nextDeadline(), now >= d, let t = track else { return [] }
        track?.longPressed = true
        return [.longPress(x: t.start.x, y: t.start.y)]
    }

    /// Feeds one touch event; returns the gestures it completes (usually none).
    public mutating func feed(_ e: TouchEvent) -> [Gesture] {
        // A long press that came due before this event counts even if the timer was late.
        var out = advance(toUsec: e.timeUsec)
        switch e.phase {
        case .down:
            fingers.insert(e.slot)
            if fingers.count > 1 {
                cancelled = true
                track = nil
            } else if !cancelled {
                track = Track(slot: e.slot, start: e.position, startUsec: e.timeUsec, last: e.position)
            }
        case .motion:
            guard var t = track, t.slot == e.slot else { break }
            t.last = e.position
            if abs(e.x - t.start.x) > thresholds.tapMaxMovement || abs(e.y - t.start.y) > thresholds.tapMaxMovement {
                t.moved = true
            }
            track = t
        case .up:
            fingers.remove(e.slot)
            if let t = track, t.slot == e.slot {
                track = nil
                out += finish(t, end: e.position, endUsec: e.timeUsec)
            }
            if fingers.isEmpty { cancelled = false }
        case .cancel:
            fingers.remove(e.slot)
            if track?.slot == e.slot { track = nil }
            if fingers.isEmpty { cancelled = false }
        }
        return out
    }

    /// Forgets every finger (e.g. when the scene changes).
    public mutating func reset() {
        track = nil
        fingers.removeAll()
        cancelled = false
    }

    private func finish(_ t: Track, end: Point, endUsec: UInt64) -> [Gesture] {
        if t.longPressed { return [] }
        let dx = end.x - t.start.x, dy = end.y - t.start.y
        let moved = t.moved || abs(dx) > thresholds.tapMaxMovement || abs(dy) > thresholds.tapMaxMovement
        if abs(dx) >= abs(dy), abs(dx) >= thresholds.swipeMinDistance {
            return [.swipe(dx > 0 ? .right : .left, x: t.start.x, y: t.start.y)]
        }
        if abs(dy) > abs(dx), abs(dy) >= thresholds.swipeMinDistance {
            return [.swipe(dy > 0 ? .down : .up, x: t.start.x, y: t.start.y)]
        }
        if !moved, endUsec >= t.startUsec, endUsec - t.startUsec <= thresholds.tapMaxDuration {
            return [.tap(x: end.x, y: end.y)]
        }
        return []
    }
}
