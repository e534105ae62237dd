import KioskCore

/// Which way a digit wheel turns: up when the value grows (the next digit comes in from
/// below), down when it shrinks.
public enum RollDirection: String, Sendable, Equatable {
    case up, down
}

/// What a tap, a gesture or a key does to a counter (config values). `undo` (keys only) takes
/// back the scene's last counter change.
public enum CounterAction: String, Sendable, Equatable, CaseIterable {
    case increment, decrement, reset, none, undo
}

/// Ease-in-out (cubic) for the rolling animation: 0 → 0, 0.5 → 0.5, 1 → 1.
public func easeInOutCubic(_ t: Double) -> Double {
    let x = min(max(t, 0), 1)
    if x < 0.5 { return 4 * x * x * x }
    let f = -2 * x + 2
    return 1 - f * f * f / 2
}

/// One digit wheel turning from one digit to another.
public struct DigitRoll: Sendable, Equatable {
    public var from: Int
    public var to: Int
    public var direction: RollDirection
    /// CLOCK_MONOTONIC start of the roll and its length, in nanoseconds.
    public var startNs: Int64
    public var durationNs: Int64

    public init(from: Int, to: Int, direction: RollDirection, startNs: Int64, durationNs: Int64) {
        self.from = from; self.to = to; self.direction = direction; self.startNs = startNs; self.durationNs = durationNs
    }

    /// Eased progress 0…1 at `ns`.
    public func progress(at ns: Int64) -> Double {
        guard durationNs > 0 else { return 1 }
        return easeInOutCubic(Double(ns - startNs) / Double(durationNs))
    }
    public func isFinished(at ns: Int64) -> Bool { ns - startNs >= durationNs }
}

extension CounterAction {
    /// The edit a touch or key action asks for (nil for `.none`).
    public var edit: CounterEdit? {
        switch self {
        case .increment: return .increment
        case .decrement: return .decrement
        case .reset: return .reset
        case .none, .undo: return nil
        }
    }
}
