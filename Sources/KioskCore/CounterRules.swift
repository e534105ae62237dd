/// Odometer rules as pure functions: digit splitting, which wheels change, wrap limits.
public enum Odometer {
    /// The largest value `digits` digits can show: 10^digits − 1.
    public static func maxValue(digits: Int) -> Int {
        var m = 1
        for _ in 0..<digits { m *= 10 }
        return m - 1
    }

    /// The digits of `value` zero-padded to `count`, most significant first (234, 4 → [0, 2, 3, 4]).
    /// `value` must be in 0…10^count − 1.
    public static func digits(of value: Int, count: Int) -> [Int] {
        precondition(value >= 0 && value <= maxValue(digits: count), "\(value) does not fit in \(count) digits")
        var out = [Int](repeating: 0, count: count)
        var v = value
        for i in stride(from: count - 1, through: 0, by: -1) {
            out[i] = v % 10
            v /= 10
        }
        return out
    }

    /// The positions (0 = most significant) whose digit differs between two values.
    public static func changedPositions(from old: Int, to new: Int, count: Int) -> [Int] {
        let a = digits(of: old, count: count), b = digits(of: new, count: count)
        return (0..<count).filter { a[$0] != b[$0] }
    }

    /// The value after one increment: wraps from 10^N − 1 to `minimum` like a car odometer.
    public static func incremented(_ value: Int, digits: Int, minimum: Int = 0) -> Int {
        value >= maxValue(digits: digits) ? minimum : value + 1
    }

    /// Text shown for a value: zero-padded to `count` digits.
    public static func padded(_ value: Int, count: Int) -> String {
        digits(of: value, count: count).map(String.init).joined()
    }
}

/// One change asked of a counter, from any source (control command, touch, key).
public enum CounterEdit: Sendable, Equatable {
    case set(Int)
    case increment
    case decrement
    case reset

    /// The request field a refusal names: the value of a set, else the counter's name.
    public var field: String {
        if case .set = self { return "value" }
        return "name"
    }
}

/// A counter's limits and the value an edit gives, as a pure decision: the same rules (and the
/// same refusals) whether the change is made in the scene or in the command pipeline.
public struct CounterRules: Sendable, Equatable {
    public var counter: String
    public var digits: Int
    public var minimum: Int
    public var maximum: Int { Odometer.maxValue(digits: digits) }

    public init(counter: String, digits: Int, minimum: Int) {
        self.counter = counter; self.digits = digits; self.minimum = minimum
    }

    /// The value after `edit` from `old`, or the refusal naming the counter and the limit
    /// (`KioskError.outOfRange`; the value stays `old`).
    public func apply(_ edit: CounterEdit, to old: Int) throws -> Int {
        switch edit {
        case .set(let value):
            guard value <= maximum else {
                throw KioskError.outOfRange("counter '\(counter)': \(value) is above the largest value \(maximum) that \(digits) digits can show; the value stays \(old)")
            }
            guard value >= minimum else {
                throw KioskError.outOfRange("counter '\(counter)': \(value) is below the minimum \(minimum); the value stays \(old)")
            }
            return value
        case .increment:
            return Odometer.incremented(old, digits: digits, minimum: minimum)
        case .decrement:
            guard old > minimum else {
                throw KioskError.outOfRange("counter '\(counter)' is at its minimum \(minimum); it cannot be decremented")
            }
            return old - 1
        case .reset:
            return minimum
        }
    }
}

extension CounterEdit {
    /// Whether the wheels turn upwards for this edit from `old` to `new`: an increment (also
    /// when it wraps to the minimum), or a set to a value not below the old one.
    public func rollsUp(from old: Int, to new: Int) -> Bool {
        switch self {
        case .increment: return true
        case .set: return new >= old
        case .decrement, .reset: return false
        }
    }
}
