import FoundationEssentials
import Glibc

/// Measures a recorded sound: where it starts and ends, its level and the strength of given
/// frequencies (the horn's checks, in the unit tests and in the kernel test's recording).
public struct ToneAnalysis: Sendable {
    public let samples: [Int16]
    public let rate: Int
    /// A sample louder than this (of 32767) is sound; quieter is silence.
    public var threshold: Int16 = 1000

    public init(samples: [Int16], rate: Int, threshold: Int16 = 1000) {
        self.samples = samples; self.rate = rate; self.threshold = threshold
    }

    /// The first sample louder than `threshold`.
    public var onset: Int? { samples.firstIndex { abs(Int($0)) > Int(threshold) } }
    /// The last sample louder than `threshold`.
    public var end: Int? { samples.lastIndex { abs(Int($0)) > Int(threshold) } }
    /// Seconds from the first to the last loud sample.
    public var soundSeconds: Double {
        guard let a = onset, let b = end else { return 0 }
        return Double(b - a + 1) / Double(rate)
    }
    /// The largest magnitude.
    public var peak: Int { samples.reduce(0) { max($0, abs(Int($1))) } }

    /// Root mean square over `range` (default: all), as a fraction of full scale.
    public func rms(_ range: Range<Int>? = nil) -> Double {
        let r = range ?? 0..<samples.count
        guard !r.isEmpty else { return 0 }
        var sum = 0.0
        for i in r { let v = Double(samples[i]) / 32768; sum += v * v }
        return (sum / Double(r.count)).squareRoot()
    }

    /// The amplitude (fraction of full scale) of `frequency` over `range` (Goertzel's algorithm).
    public func amplitude(of frequency: Double, in range: Range<Int>? = nil) -> Double {
        let r = range ?? 0..<samples.count
        guard !r.isEmpty else { return 0 }
        let w = 2 * Double.pi * frequency / Double(rate), c = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for i in r {
            let s0 = Double(samples[i]) / 32768 + c * s1 - s2
            s2 = s1; s1 = s0
        }
        let power = s1 * s1 + s2 * s2 - c * s1 * s2
        return 2 * power.squareRoot() / Double(r.count)
    }

    /// The frequency of a single tone over `range`, from its rising zero crossings.
    public func zeroCrossingFrequency(in range: Range<Int>? = nil) -> Double {
        let r = range ?? 0..<samples.count
        var first: Int?, last = 0, count = 0
        for i in r.dropFirst() where samples[i - 1] < 0 && samples[i] >= 0 {
            if first == nil { first = i } else { count += 1 }
            last = i
        }
        guard let first, count > 0 else { return 0 }
        return Double(count) * Double(rate) / Double(last - first)
    }
}
