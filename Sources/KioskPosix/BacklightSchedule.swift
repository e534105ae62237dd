import KioskCore

/// Runs a `BrightnessPolicy` on a `Scheduler`: tells `apply` what the panel should show whenever
/// that changes — blank, or lit at a percentage — with one wall-clock timer armed for the next
/// change, stepping every `fadeStepNanos` while a scheduled fade runs. A wall-clock step (NTP,
/// `date -s`) re-evaluates at once. Call everything on the loop's thread.
public final class BacklightScheduleController {
    private let scheduler: any Scheduler
    private let apply: (PanelState) -> Void
    private var timer: TimerID?
    public private(set) var policy: BrightnessPolicy
    /// The state last passed to `apply`.
    public private(set) var current: PanelState?
    /// How often a scheduled fade is stepped (the backlight fader smooths between steps).
    public var fadeStepNanos: Int64

    public init(scheduler: any Scheduler, policy: BrightnessPolicy, fadeStepNanos: Int64 = 1_000_000_000,
                apply: @escaping (PanelState) -> Void) {
        self.scheduler = scheduler
        self.policy = policy
        self.fadeStepNanos = max(1_000_000, fadeStepNanos)
        self.apply = apply
    }

    /// Applies the state for now and arms the timer.
    public func start() { evaluate() }

    public func stop() {
        if let t = timer { scheduler.cancel(t); timer = nil }
    }

    /// New settings (config reload) or a new default level (`kioskctl brightness`).
    public func update(policy: BrightnessPolicy) {
        self.policy = policy
        evaluate()
    }

    /// A touch or key: wakes a scheduled-off panel for the wake time. Returns whether it woke.
    @discardableResult
    public func touched() -> Bool {
        let s = Self.seconds(scheduler.now(.realtime))
        guard policy.touched(at: s) else { return false }
        evaluate()
        return true
    }

    /// The time zone changed (`SystemTimeZone.reload()` done): local times mean other instants now.
    public func zoneChanged() { evaluate() }

    private static func seconds(_ nanos: Int64) -> Int64 {
        nanos >= 0 ? nanos / 1_000_000_000 : (nanos - 999_999_999) / 1_000_000_000
    }

    private func evaluate() {
        if let t = timer { scheduler.cancel(t); timer = nil }
        let now = scheduler.now(.realtime)
        let state = policy.state(atNanos: now)
        if state != current {
            current = state
            apply(state)
        }
        let s = Self.seconds(now)
        var next = policy.nextChange(after: s).map { $0 * 1_000_000_000 }
        if policy.isFading(at: s) { next = min(next ?? Int64.max, now + fadeStepNanos) }
        guard let next else { return }
        timer = try? scheduler.schedule(at: next, clock: .realtime) { [weak self] _ in
            self?.timer = nil
            self?.evaluate()
        }
    }
}
