import KioskConfig
import KioskCore
import Logging
import KioskPosix

/// Turns the panel off and on and sets its brightness, from one schedule: daily blank periods
/// (`[display.blank] schedule`) and brightness periods (`[display.brightness]`, whose `off`
/// periods blank too), both woken by a touch for `wake_seconds` at the period's level; blanking
/// after `idle_seconds` without input; by hand (`POST /blank`, `POST /brightness`, which hold until
/// the next scheduled change); and an ambient light sensor that dims below the scheduled level.
/// Runs on the event loop; arms one timer for the next change (every second during a fade, the
/// backlight fader smoothing in between).
public final class BlankController {
    private var policies: [BlankPolicy]
    private var brightness: BrightnessPolicy
    private var idleSeconds: Double
    private let display: DisplayOutput
    private let loop: any KioskLoop
    private let time: TimeSource
    private let logger: Logger
    private var timer: TimerID?
    private var idleTimer: TimerID?
    /// A manual choice, until the next scheduled change.
    private var manual: (blank: Bool, until: Int64?)?
    /// A manual level during a brightness schedule, until its next period.
    private var manualPercent: (percent: Double, until: Int64)?
    /// What the ambient light sensor asks for (nil: no sensor or no reading yet).
    public var ambientPercent: Double? {
        didSet { if oldValue != ambientPercent { evaluate(smooth: true) } }
    }
    private var lastInputNs: Int64
    /// The backlight the level is written to (nil: none; the panel is only blanked and lit).
    public var backlight: PanelBacklight?
    /// The level the panel is lit at (nil while blanked).
    public private(set) var level: Double?
    /// How often a scheduled fade is stepped (the backlight fader moves through the values between).
    static let fadeStepNanos: Int64 = 1_000_000_000
    /// Called after the panel was lit again (the scene must repaint everything).
    public var onUnblank: (() -> Void)?
    /// After the panel was blanked or lit, or its level changed.
    public var onChange: (() -> Void)?
    /// After the panel was blanked (true) or lit (false), whatever decided it: what follows the
    /// panel (a TV over HDMI-CEC).
    public var onBlankedChange: ((Bool) -> Void)?

    /// Parses the schedule strings (already checked by the config) into policies.
    /// - Parameter defaultPercent: the level without a brightness schedule (the saved `kioskctl brightness`).
    public init(settings: DisplaySettings, wall: WallDisplaySettings = WallDisplaySettings(), defaultPercent: Double = 100,
                display: DisplayOutput, loop: any KioskLoop, time: TimeSource, logger: Logger) throws {
        self.policies = try Self.blankPolicies(settings)
        self.brightness = BrightnessPolicy(blankSchedule: nil, brightness: wall.brightness,
                                           wakeSeconds: Int(settings.wakeSeconds.rounded()), defaultPercent: defaultPercent)
        self.idleSeconds = settings.idleBlankSeconds
        self.display = display
        self.loop = loop
        self.time = time
        self.logger = logger
        self.lastInputNs = time.now().monotonicNs
    }

    private static func blankPolicies(_ settings: DisplaySettings) throws -> [BlankPolicy] {
        try settings.blankSchedule.map {
            BlankPolicy(schedule: try BlankSchedule(parsing: $0), wakeSeconds: Int(settings.wakeSeconds.rounded()))
        }
    }

    /// New settings (config reload): keeps a manual choice, re-evaluates now.
    public func update(settings: DisplaySettings, wall: WallDisplaySettings? = nil) throws {
        policies = try Self.blankPolicies(settings)
        brightness = BrightnessPolicy(blankSchedule: nil, brightness: wall?.brightness ?? brightness.brightness,
                                      wakeSeconds: Int(settings.wakeSeconds.rounded()), defaultPercent: brightness.defaultPercent)
        idleSeconds = settings.idleBlankSeconds
        evaluate()
    }

    /// The brightness schedule in force (nil: none).
    public var schedule: BrightnessSchedule? { brightness.brightness }
    /// The level without a schedule.
    public var defaultPercent: Double { brightness.defaultPercent }

    private var nowSeconds: Int64 { Self.seconds(time.now().realtimeNs) }
    private static func seconds(_ ns: Int64) -> Int64 { ns >= 0 ? ns / 1_000_000_000 : (ns - 999_999_999) / 1_000_000_000 }

    struct Decision {
        var blank: Bool
        var percent: Double
        /// The next scheduled change (realtime ns).
        var nextNs: Int64?
        var idleDueNs: Int64?
        /// 0 % means "backlight off" (an explicit `kioskctl brightness 0`), not the dimmest lit level.
        var allowOff = false
    }

    /// Whether the panel should be off now, at which level it is lit, and when that may change next.
    func decide() -> Decision {
        let now = time.now()
        let s = Self.seconds(now.realtimeNs)
        var next: Int64? = (policies.compactMap { $0.nextChange(after: s) } + [brightness.nextChange(after: s)].compactMap { $0 }).min()
            .map { $0 * 1_000_000_000 }
        if brightness.isFading(at: s) { next = min(next ?? Int64.max, now.realtimeNs + Self.fadeStepNanos) }
        // The level of the brightness period (fades included); in an `off` period, the level a touch wakes it to.
        let scheduled = brightness.state(atNanos: now.realtimeNs)
        var percent: Double
        switch scheduled {
        case .lit(let p): percent = p
        case .blank: percent = brightness.wakePercent(at: s)
        }
        var explicit = brightness.brightness == nil
        if let m = manualPercent {
            if s >= m.until { manualPercent = nil } else { percent = m.percent; explicit = true }
        }
        let allowOff = explicit && percent == 0
        if let a = ambientPercent { percent = min(percent, a) }
        if let m = manual {
            if let u = m.until, s >= u { manual = nil } else {
                return Decision(blank: m.blank, percent: percent, nextNs: m.until.map { $0 * 1_000_000_000 }, idleDueNs: nil, allowOff: allowOff)
            }
        }
        var blank = scheduled == .blank || policies.contains { $0.shouldBlank(at: s) }
        var idleDue: Int64?
        if idleSeconds > 0 {
            let due = lastInputNs + Int64(idleSeconds * 1e9)
            if now.monotonicNs >= due { blank = true } else { idleDue = due }
        }
        return Decision(blank: blank, percent: percent, nextNs: next, idleDueNs: idleDue, allowOff: allowOff)
    }

    /// Applies the decision to the display and the backlight and arms the timer for the next
    /// change. `smooth`: a level change of a lit panel fades (scheduled fades, the sensor).
    public func evaluate(smooth: Bool = false) {
        loop.assertInLoop()
        let d = decide()
        var changed = false
        if d.blank != display.isBlanked {
            do {
                // Lit at the period's level from the first frame.
                if !d.blank { backlight?.set(percent: d.percent, fadeNanos: 0, allowOff: d.allowOff) }
                try display.setBlanked(d.blank)
                logger.info(d.blank ? "panel blanked" : "panel lit", metadata: ["display": "\(display.displayDescription)"]
                    .merging(d.blank ? [:] : ["brightness": "\(Self.text(d.percent))"]) { a, _ in a })
                if !d.blank { onUnblank?() }
                onBlankedChange?(d.blank)
                changed = true
            } catch {
                logger.error("cannot change blanking", metadata: ["display": "\(display.displayDescription)", "error": "\(error)"])
            }
        }
        let newLevel: Double? = display.isBlanked ? nil : d.percent
        if let p = newLevel {
            backlight?.set(percent: p, fadeNanos: smooth ? Self.fadeStepNanos : 0, allowOff: d.allowOff)
        } else {
            backlight?.stop()
        }
        if newLevel != level { changed = true }
        level = newLevel
        if changed { onChange?() }
        if let t = timer { loop.cancel(t); timer = nil }
        if let t = idleTimer { loop.cancel(t); idleTimer = nil }
        // Schedule changes on the wall clock (re-evaluated when the clock is set), idle on the monotonic one.
        if let n = d.nextNs {
            timer = try? loop.schedule(at: n, clock: .realtime) { [weak self] _ in
                self?.timer = nil
                self?.evaluate(smooth: true)
            }
        }
        if let i = d.idleDueNs {
            idleTimer = try? loop.schedule(at: i, clock: .monotonic) { [weak self] _ in
                self?.idleTimer = nil
                self?.evaluate()
            }
        }
    }

    /// "40 %", "12.5 %".
    public static func text(_ p: Double) -> String { (p == p.rounded() ? "\(Int(p))" : "\((p * 10).rounded() / 10)") + " %" }

    /// The next scheduled change (unix seconds) after `s`: a blank period's edge or a brightness period's start.
    private func nextScheduled(after s: Int64) -> Int64? {
        (policies.compactMap { $0.nextChange(after: s) } + [brightness.brightness?.nextBoundary(after: s, zone: brightness.zone)].compactMap { $0 }).min()
    }

    /// Sets the panel by hand until the next scheduled change.
    public func setManual(_ blank: Bool) {
        loop.assertInLoop()
        let s = nowSeconds
        manual = (blank, nextScheduled(after: s))
        if !blank { lastInputNs = time.now().monotonicNs }
        evaluate()
    }

    /// Sets the level by hand: the level without a schedule from now on, or until the next
    /// brightness period during a schedule. The write happens now; its error is thrown (a
    /// read-only file names the file and the fix).
    public func setBrightness(percent: Double) throws {
        loop.assertInLoop()
        let s = nowSeconds
        if let b = brightness.brightness {
            let zone = brightness.zone
            let nextPeriod = b.periods.map { LocalZone.nextOccurrence(ofSecondOfDay: $0.start.secondsSinceMidnight, after: s, zone: zone) }.min()
            manualPercent = (percent, nextPeriod ?? s + 86_400)
        } else {
            brightness.defaultPercent = percent
        }
        let d = decide()
        if !display.isBlanked, let backlight {
            try backlight.setNow(percent: d.percent, allowOff: d.allowOff)
        }
        evaluate()
    }

    /// The time zone changed: local periods mean other instants now.
    public func zoneChanged() { evaluate() }

    /// Sees every input event first. Returns true when the event only woke the panel (the scene must not get it).
    public func input(_ event: InputEvent) -> Bool {
        switch event {
        case .touch, .key, .pointerMotion: break
        default: return false
        }
        lastInputNs = time.now().monotonicNs
        // While lit, the idle timer (armed by `evaluate`) re-reads `lastInputNs` when it fires:
        // no timer work per event.
        guard display.isBlanked else { return false }
        let s = nowSeconds
        for i in policies.indices { policies[i].touched(at: s) }
        brightness.touched(at: s)
        if manual?.blank == true { manual = nil }
        evaluate()
        // Swallow the events of the touch that woke the panel.
        return true
    }

    public func stop() {
        if let t = timer { loop.cancel(t); timer = nil }
        if let t = idleTimer { loop.cancel(t); idleTimer = nil }
        backlight?.stop()
    }
}
