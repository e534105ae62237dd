import KioskCore

extension ControlCommand.CounterOp {
    /// The edit a counter command asks for (`value` for `set`); nil for `get`. The one mapping
    /// of a transport's operation to an edit.
    public func edit(_ value: Int?) -> CounterEdit? {
        switch self {
        case .get: return nil
        case .set: return .set(value ?? 0)
        case .inc: return .increment
        case .dec: return .decrement
        case .reset: return .reset
        }
    }
}
