import Foundation

/// A game clock's truth for `clock-drift`: running since the CLOCK_MONOTONIC instant `sinceNs`
/// with `remainingMs` left then, counting down. What kioskd showed is compared with it.
struct ClockTruth {
    var sinceNs: Int64
    var remainingMs: Int

    /// An error (shown − truth), in ns, known within `low…high` (a status read's instant is only
    /// known to lie between the request and its answer).
    struct Interval: Equatable {
        var low: Int64
        var high: Int64
    }

    static let frameNs: Int64 = 17_000_000
    static let minuteNs: Int64 = 60_000_000_000

    /// The most time left that `face` shows counting down: "12:34" → 754 s, "9.5" → 9.5 s
    /// (the face appears the instant exactly that much is left). Nil: not a face.
    static func faceUpperNs(_ face: String) -> Int64? {
        let parts = face.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2, let m = Int64(parts[0]), let s = Int64(parts[1]), parts[1].count == 2 { return (m * 60 + s) * 1_000_000_000 }
        let tenths = face.split(separator: ".", omittingEmptySubsequences: false)
        if tenths.count == 2, let s = Int64(tenths[0]), let t = Int64(tenths[1]), tenths[1].count == 1 { return (s * 10 + t) * 100_000_000 }
        return nil
    }

    /// Status answered `ms` (rounded up to the millisecond) at an instant between `askedNs` and
    /// `answeredNs`: shown − truth.
    func statusError(remainingMs ms: Int, askedNs a: Int64, answeredNs b: Int64) -> Interval {
        let end = sinceNs + Int64(remainingMs) * 1_000_000, shown = Int64(ms) * 1_000_000
        return Interval(low: shown - (end - a), high: shown - (end - b))
    }

    /// A frame at `frameNs` that first shows `face`: how long after the truth reached it.
    func lag(face: String, frameNs f: Int64) -> Int64? {
        Self.faceUpperNs(face).map { f - (sinceNs + Int64(remainingMs) * 1_000_000 - $0) }
    }

    /// One line of a frame log (`game clock shown [frame_ns=… game=… game_ns=… running=true …]`).
    struct Shown: Equatable {
        var frameNs: Int64
        var face: String
        /// The time left kioskd computed for that frame.
        var remainingNs: Int64
    }

    /// The running clock's lines of a frame log.
    static func shown(_ log: String) -> [Shown] {
        log.split(separator: "\n").compactMap { line in
            guard line.contains("game clock shown"), line.contains("running=true"),
                  let f = field(line, "frame_ns").flatMap({ Int64($0) }), let face = field(line, "game"),
                  let r = field(line, "game_ns").flatMap({ Int64($0) }) else { return nil }
            return Shown(frameNs: f, face: face, remainingNs: r)
        }
    }

    static func field(_ line: Substring, _ key: String) -> String? {
        guard let r = line.range(of: " \(key)=") ?? line.range(of: "[\(key)=") else { return nil }
        return String(line[r.upperBound...].prefix { $0 != " " && $0 != "]" })
    }

    struct Report {
        var lines: [String] = []
        var problems: [String] = []
    }

    /// The figures and the problems: a frame whose time left is not the truth's, a face shown
    /// before the truth reached it, a minute whose promptest face came more than one frame after
    /// the truth (a clock off by X shows no lag below X; single late frames are the machine's
    /// load), a status read off by more than one frame.
    func report(frameLog: String, statusErrors: [Interval], ranSeconds: Int) -> Report {
        var out = Report()
        let all = Self.shown(frameLog)
        func ms(_ ns: Int64) -> String { String(format: "%.3f", Double(ns) / 1e6) }
        // The time left each frame computed, against the truth at the frame's instant.
        let offsets = all.map { $0.remainingNs - (Int64(remainingMs) * 1_000_000 - ($0.frameNs - sinceNs)) }
        var changes: [(frameNs: Int64, face: String, lag: Int64)] = []
        for (prev, cur) in zip(all, all.dropFirst()) where prev.face != cur.face {
            if let l = lag(face: cur.face, frameNs: cur.frameNs) { changes.append((cur.frameNs, cur.face, l)) }
        }
        guard let first = changes.first, let last = changes.last, let worstOffset = offsets.map({ abs($0) }).max() else {
            out.problems.append("the frame log has no face changes of a running clock (is kioskd logging at debug?)")
            return out
        }
        let lags = changes.map(\.lag).sorted()
        out.lines.append("frames: \(all.count); time left computed at each frame − the truth at its instant: at most \(worstOffset) ns")
        out.lines.append("face changes: \(changes.count) over \(String(format: "%.1f", Double(last.frameNs - first.frameNs) / 1e9)) s; from the truth reaching a face to the frame showing it: "
                         + "min \(ms(lags.first!)) ms, median \(ms(lags[lags.count / 2])) ms, p99 \(ms(lags[lags.count * 99 / 100])) ms, max \(ms(lags.last!)) ms")
        // Per minute: the promptest face (what the clock's error cannot hide under).
        var minutes: [Int64: Int64] = [:]
        for c in changes { minutes[(c.frameNs - sinceNs) / Self.minuteNs, default: .max] = min(minutes[(c.frameNs - sinceNs) / Self.minuteNs] ?? .max, c.lag) }
        let prompt = minutes.keys.sorted().map { minutes[$0]! }
        out.lines.append("promptest face of each minute: " + prompt.map { ms($0) }.joined(separator: ", ") + " ms (first → last: \(ms(prompt.last! - prompt.first!)) ms)")
        out.lines.append("after \(ranSeconds) s: the last face \(last.face) came \(ms(last.lag)) ms after the truth reached it")
        if let s = statusErrors.last {
            let width = statusErrors.map { $0.high - $0.low }.max()!
            out.lines.append("status remaining_ms − truth over each read's bracket: last \(ms(s.low))…\(ms(s.high)) ms; \(statusErrors.count) reads, brackets up to \(ms(width)) ms wide")
        }
        if worstOffset > 0 { out.problems.append("a frame's time left differs from the truth's by \(worstOffset) ns") }
        for c in changes where c.lag < 0 { out.problems.append("the face \(c.face) came \(ms(-c.lag)) ms before the truth reached it") }
        for (i, p) in prompt.enumerated() where p > Self.frameNs {
            out.problems.append("minute \(i + 1): no face came within one frame of the truth (the promptest \(ms(p)) ms after it)")
        }
        for s in statusErrors where s.high < -Self.frameNs || s.low > Self.frameNs {
            out.problems.append("status was off by \(ms(s.low))…\(ms(s.high)) ms (more than one frame)")
        }
        return out
    }
}
