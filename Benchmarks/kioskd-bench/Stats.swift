#if canImport(Glibc)
import Glibc
#endif
import KioskCore

/// Timings of repeated runs of one operation, in milliseconds.
struct Samples: Sendable {
    var ms: [Double]
    private var sorted: [Double]

    init(_ ms: [Double]) {
        self.ms = ms
        self.sorted = ms.sorted()
    }
    var count: Int { ms.count }
    var isEmpty: Bool { ms.isEmpty }
    var min: Double { sorted.first ?? .nan }
    var max: Double { sorted.last ?? .nan }
    var median: Double { percentile(0.5) }
    var p99: Double { percentile(0.99) }
    var mean: Double { ms.isEmpty ? .nan : ms.reduce(0, +) / Double(ms.count) }

    /// Nearest-rank percentile (0…1) with linear interpolation between ranks.
    func percentile(_ p: Double) -> Double {
        guard !sorted.isEmpty else { return .nan }
        let pos = p * Double(sorted.count - 1)
        let lo = Int(pos.rounded(.down)), hi = Swift.min(lo + 1, sorted.count - 1)
        let f = pos - Double(lo)
        return sorted[lo] * (1 - f) + sorted[hi] * f
    }
}

/// Times `body` `runs` times after `warmup` untimed runs; each sample is one call, in ms (CLOCK_MONOTONIC).
func measure(runs: Int, warmup: Int = 3, _ body: () throws -> Void) rethrows -> Samples {
    for _ in 0..<warmup { try body() }
    var out: [Double] = []
    out.reserveCapacity(runs)
    for _ in 0..<runs {
        let t0 = nowNanos(.monotonic)
        try body()
        out.append(Double(nowNanos(.monotonic) - t0) / 1e6)
    }
    return Samples(out)
}

/// CPU time (user + system) of this process so far, in seconds (getrusage(RUSAGE_SELF)).
func processCPUSeconds() -> Double {
    var ru = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &ru)
    return cpuSeconds(ru)
}

func cpuSeconds(_ ru: rusage) -> Double {
    Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6 + Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
}

/// Formats milliseconds with 3 significant-ish digits ("0.412", "12.3", "1480").
func fmtMs(_ v: Double) -> String {
    guard v.isFinite else { return "–" }
    if v < 0.01 { return fmt(v, 4) }
    if v < 1 { return fmt(v, 3) }
    if v < 10 { return fmt(v, 2) }
    if v < 100 { return fmt(v, 1) }
    return fmt(v, 0)
}

func fmt(_ v: Double, _ decimals: Int) -> String {
    guard v.isFinite else { return "–" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let r = (v * scale).rounded() / scale
    var s = "\(r)"
    if decimals == 0 {
        s = "\(Int(r))"
    } else if let dot = s.firstIndex(of: ".") {
        let have = s.distance(from: dot, to: s.endIndex) - 1
        if have < decimals { s += String(repeating: "0", count: decimals - have) }
    } else if !s.contains("e") {
        s += "." + String(repeating: "0", count: decimals)
    }
    return s
}

func pad(_ s: String, _ width: Int, right: Bool = false) -> String {
    let n = s.count
    guard n < width else { return s }
    let fill = String(repeating: " ", count: width - n)
    return right ? fill + s : s + fill
}
