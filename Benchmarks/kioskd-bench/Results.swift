import KioskCore

/// A figure: repeated timings, or one value with a unit.
enum Metric {
    case samples(Samples)
    case value(Double, unit: String)

    var median: Double {
        switch self {
        case .samples(let s): return s.median
        case .value(let v, _): return v
        }
    }
    var unit: String {
        if case .value(_, let u) = self { return u }
        return "ms"
    }
    var samples: Samples? {
        if case .samples(let s) = self { return s }
        return nil
    }
}

/// One line of the table: kioskd's figure, the peer's (if any), and whether a ratio to the fill floor makes sense.
struct Row {
    var section: String
    var name: String
    var size: Size?
    var kioskd: Metric?
    var peer: Metric?
    /// Divide by the fill floor at `size` (frame costs only).
    var vsFloor: Bool = true
    var note: String = ""
    /// A short key for JSON and targets ("clock.tick").
    var key: String
}

/// Everything one run measured.
final class Results {
    var rows: [Row] = []
    var floors: [Size: FloorResult] = [:]
    var notes: [String] = []
    var peerStatus = "not run"
    var loadAtStart = 0.0

    func add(_ row: Row) { rows.append(row) }
    func row(_ key: String, _ size: Size?) -> Row? { rows.first { $0.key == key && $0.size == size } }
    func floorMs(_ size: Size?) -> Double? { size.flatMap { floors[$0]?.cairoFill.median } }
}
