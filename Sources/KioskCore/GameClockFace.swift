/// What a game or shot clock shows, and when that next changes: the face is a function of the
/// time left, rounded so that counting down `0.0` appears exactly when time is up (never
/// before), and counting up the period's length appears exactly when it ends.
public enum ClockFace: Sendable, Equatable, CustomStringConvertible {
    /// `M:SS` (the game clock above its tenths threshold): "10:00", "9:59".
    case minutesSeconds(minutes: Int, seconds: Int)
    /// `S` (the shot clock above its tenths threshold): "24".
    case seconds(Int)
    /// `S.t` (under the threshold): "59.9", "0.0".
    case secondsTenths(seconds: Int, tenths: Int)

    public var description: String { text }
    public var text: String {
        switch self {
        case .minutesSeconds(let m, let s): return "\(m):\(s < 10 ? "0" : "")\(s)"
        case .seconds(let s): return "\(s)"
        case .secondsTenths(let s, let t): return "\(s).\(t)"
        }
    }

    /// How a clock's whole seconds are written above the tenths threshold.
    public enum Style: Sendable, Equatable {
        /// `M:SS` (the game clock).
        case minutesSeconds
        /// `S` (the shot clock).
        case seconds
    }

    static let nsPerTenth: Int64 = 100_000_000
    static let nsPerSecond: Int64 = 1_000_000_000

    /// Tenths shown when `remainingNs` is left counting down: rounded up, so 0 only at zero.
    static func shownTenths(remainingNs: Int64) -> Int64 { (max(remainingNs, 0) + nsPerTenth - 1) / nsPerTenth }
    /// The threshold in tenths: a shown value of n tenths is "below" it when n < this.
    static func thresholdTenths(_ ms: Int) -> Int64 { (Int64(ms) + 99) / 100 }

    /// The face counting down with `remainingNs` left: `S.t` when the shown value is below
    /// `tenthsBelowMs`, whole seconds (rounded up) otherwise.
    public static func countingDown(remainingNs: Int64, tenthsBelowMs: Int, style: Style) -> ClockFace {
        let n = shownTenths(remainingNs: remainingNs)
        if n < thresholdTenths(tenthsBelowMs) { return .secondsTenths(seconds: Int(n / 10), tenths: Int(n % 10)) }
        return wholeSeconds(Int((n + 9) / 10), style: style)
    }

    /// The face counting up with `elapsedNs` played: whole seconds, rounded down.
    public static func countingUp(elapsedNs: Int64, style: Style) -> ClockFace {
        wholeSeconds(Int(max(elapsedNs, 0) / nsPerSecond), style: style)
    }

    static func wholeSeconds(_ s: Int, style: Style) -> ClockFace {
        style == .minutesSeconds ? .minutesSeconds(minutes: s / 60, seconds: s % 60) : .seconds(s)
    }

    /// Counting down, the time left (in ns) at which the face next changes after showing it with
    /// `remainingNs` left: the next tenth under the threshold (or where it is crossed), else the
    /// next whole second; nil at zero.
    static func nextChangeRemainingNs(remainingNs: Int64, tenthsBelowMs: Int) -> Int64? {
        let n = shownTenths(remainingNs: remainingNs)
        guard n > 0 else { return nil }
        let threshold = thresholdTenths(tenthsBelowMs)
        // The face is a function of n; n drops from k + 1 to k the instant k tenths are left.
        let k = n - 1 < threshold ? n - 1 : max((n - 1) / 10 * 10, threshold - 1)
        return k * nsPerTenth
    }
}

/// Text for clock values in messages and settings.
public enum ClockText {
    /// `M:SS` or `M:SS.t` for a number of milliseconds (tenths shown only when not zero; rounded down).
    public static func minutesSeconds(_ ms: Int) -> String {
        let sign = ms < 0 ? "-" : ""
        let a = abs(ms)
        let s = a / 1000, t = (a % 1000) / 100
        return "\(sign)\(s / 60):\(s % 60 < 10 ? "0" : "")\(s % 60)" + (t > 0 ? ".\(t)" : "")
    }

    /// Seconds with a tenth when there is one: "24", "14.5".
    public static func seconds(_ ms: Int) -> String {
        let a = abs(ms)
        return (ms < 0 ? "-" : "") + "\(a / 1000)" + (a % 1000 >= 100 ? ".\(a % 1000 / 100)" : "")
    }
}

extension GameClock {
    /// What the game clock shows at `now`.
    public func face(at now: WallTime) -> ClockFace {
        let remaining = game.remainingNs(at: now.monotonicNs)
        switch rules.direction {
        case .down: return ClockFace.countingDown(remainingNs: remaining, tenthsBelowMs: rules.tenthsBelowMs, style: .minutesSeconds)
        case .up: return ClockFace.countingUp(elapsedNs: Int64(rules.periodLengthMs) * Self.nsPerMs - remaining, style: .minutesSeconds)
        }
    }

    /// What the shot clock shows at `now` (nil: no shot clock). It always counts down.
    public func shotFace(at now: WallTime) -> ClockFace? {
        shot.map { ClockFace.countingDown(remainingNs: $0.remainingNs(at: now.monotonicNs), tenthsBelowMs: rules.shotTenthsBelowMs, style: .seconds) }
    }

    /// The period as shown: "P1".
    public var periodText: String { "P\(period)" }

    /// The monotonic instant after `now` at which something shown next changes — a face's next
    /// second or tenth, or a clock reaching zero; nil while both clocks are stopped. A scene
    /// wakes at this instant, so a running clock costs one frame a second above its tenths
    /// threshold and ten under it, and a stopped one none.
    public func nextChangeNs(after now: WallTime) -> Int64? {
        var candidates: [Int64] = upcomingEvents.map(\.monotonicNs)
        if rules.showsGameClock, let zero = game.zeroInstantNs {
            let remaining = game.remainingNs(at: now.monotonicNs)
            switch rules.direction {
            case .down:
                if let r = ClockFace.nextChangeRemainingNs(remainingNs: remaining, tenthsBelowMs: rules.tenthsBelowMs) { candidates.append(zero - r) }
            case .up:
                let length = Int64(rules.periodLengthMs) * Self.nsPerMs
                let next = ((length - remaining) / ClockFace.nsPerSecond + 1) * ClockFace.nsPerSecond
                if next <= length { candidates.append(zero - length + next) }
            }
        }
        if let s = shot, let zero = s.zeroInstantNs,
           let r = ClockFace.nextChangeRemainingNs(remainingNs: s.remainingNs(at: now.monotonicNs), tenthsBelowMs: rules.shotTenthsBelowMs) {
            candidates.append(zero - r)
        }
        return candidates.filter { $0 > now.monotonicNs }.min()
    }
}
