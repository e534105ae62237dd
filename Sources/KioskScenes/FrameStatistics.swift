import KioskCore

/// Frame-time statistics over the last frames.
public struct FrameStats: Sendable, Equatable {
    public var frames: UInt64
    /// Frames per second over the last few seconds.
    public var fps: Double
    /// Frame cost (draw + present) percentiles, in milliseconds.
    public var p50Ms: Double
    public var p90Ms: Double
    public var p99Ms: Double
    public var maxMs: Double
    /// The render heartbeat: the longest time between two presented frames over the last
    /// minute and since start, in milliseconds (a 1 Hz clock shows ~1000; a stall shows more).
    public var maxGapLastMinuteMs: Double = 0
    public var maxGapMs: Double = 0
}

/// The cost and the time of the latest presented frames (at most `capacity` of each), and the
/// statistics over them: cost percentiles over all kept frames, the frame rate over the last
/// `windowNs` before a given instant.
struct FrameStatistics: Sendable {
    static let capacity = 600
    static let windowNs: Int64 = 5_000_000_000

    private(set) var frames: UInt64 = 0
    private var costsMs: [Double] = []
    private var times: [Int64] = []
    static let gapWindowNs: Int64 = 60_000_000_000
    /// Monotonic time of the latest frame.
    private var lastFrame: Int64?
    private(set) var maxGapNs: Int64 = 0
    /// Gaps ending within the last minute, each larger than every later one (a sliding-window
    /// maximum: the first is the largest).
    private var gaps: [(end: Int64, ns: Int64)] = []

    /// A frame presented at monotonic `time` that cost `costNs` to draw and present.
    mutating func record(costNs: Int64, at time: Int64) {
        frames += 1
        if let last = lastFrame {
            let gap = time - last
            maxGapNs = max(maxGapNs, gap)
            while let l = gaps.last, l.ns <= gap { gaps.removeLast() }
            gaps.append((time, gap))
        }
        while let f = gaps.first, time - f.end >= Self.gapWindowNs { gaps.removeFirst() }
        lastFrame = time
        costsMs.append(Double(costNs) / 1e6)
        times.append(time)
        if costsMs.count > Self.capacity { costsMs.removeFirst(costsMs.count - Self.capacity) }
        if times.count > Self.capacity { times.removeFirst(times.count - Self.capacity) }
    }

    /// The statistics as seen at monotonic `now`.
    func stats(now: Int64) -> FrameStats {
        let sorted = costsMs.sorted()
        func pct(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
        }
        let recent = times.filter { now - $0 < Self.windowNs }
        let minuteGap = gaps.first { now - $0.end < Self.gapWindowNs }?.ns ?? 0
        return FrameStats(frames: frames, fps: Double(recent.count) / (Double(Self.windowNs) / 1e9), p50Ms: pct(0.5),
                          p90Ms: pct(0.9), p99Ms: pct(0.99), maxMs: sorted.last ?? 0,
                          maxGapLastMinuteMs: Double(minuteGap) / 1e6, maxGapMs: Double(maxGapNs) / 1e6)
    }
}
