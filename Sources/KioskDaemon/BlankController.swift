import KioskCore
import Logging
import KioskPosix

/// Turns the panel off and on: daily periods (`[display.blank] schedule`, woken by a touch for
/// `wake_seconds`), after `idle_seconds` without input, or by hand (`POST /blank`, which holds
/// until the next scheduled change). Runs on the event loop; arms one timer for the next change.
public final class BlankController {
    private var policies: [BlankPolicy]
    private var idleSeconds: Double
    private let display: DisplayOutput
    private let loop: EventLoop
    private let time: TimeSource
    private let logger: Logger
    private var timer: EventLoop.TimerID?
    private var idleTimer: EventLoop.TimerID?
    /// A manual choice, until the next scheduled change.
    private var manual: (blank: Bool, until: Int64?)?
    private var lastInputNs: Int64
    /// Called after the panel was lit again (the scene must repaint everything).
    public var onUnblank: (() -> Void)?
    /// After the panel was blanked or lit.
    public var onChange: (() -> Void)?

    /// Parses the schedule strings (already checked by the config) into policies.
    public init(settings: DisplaySettings, display: DisplayOutput, loop: EventLoop, time: TimeSource, logger: Logger) throws {
        self.policies = try settings.blankSchedule.map {
            BlankPolicy(schedule: try BlankSchedule(parsing: $0), wakeSeconds: Int(settings.wakeSeconds.rounded()))
        }
        self.idleSeconds = settings.idleBlankSeconds
        self.display = display
        self.loop = loop
        self.time = time
        self.logger = logger
        self.lastInputNs = time.now().monotonicNs
    }

    /// New settings (config reload): keeps a manual choice, re-evaluates now.
    public func update(settings: DisplaySettings) throws {
        policies = try settings.blankSchedule.map {
            BlankPolicy(schedule: try BlankSchedule(parsing: $0), wakeSeconds: Int(settings.wakeSeconds.rounded()))
        }
        idleSeconds = settings.idleBlankSeconds
        evaluate()
    }

    private var nowSeconds: Int64 { time.now().realtimeNs / 1_000_000_000 }

    /// Whether the panel should be off now, and when that may change next (unix seconds / monotonic ns).
    func decide() -> (blank: Bool, nextUnix: Int64?, idleDueNs: Int64?) {
        let now = time.now()
        let s = now.realtimeNs / 1_000_000_000
        let next: Int64? = policies.compactMap { $0.nextChange(after: s) }.min()
        if let m = manual {
            if let u = m.until, s >= u { manual = nil } else {
                return (m.blank, m.until, nil)
            }
        }
        var blank = policies.contains { $0.shouldBlank(at: s) }
        var idleDue: Int64?
        if idleSeconds > 0 {
            let due = lastInputNs + Int64(idleSeconds * 1e9)
            if now.monotonicNs >= due { blank = true } else { idleDue = due }
        }
        return (blank, next, idleDue)
    }

    /// Applies the decision to the display and arms the timer for the next change.
    public func evaluate() {
        loop.assertInLoop()
        let d = decide()
        if d.blank != display.isBlanked {
            do {
                try display.setBlanked(d.blank)
                logger.info(d.blank ? "panel blanked" : "panel lit", metadata: ["display": "\(display.displayDescription)"])
                if !d.blank { onUnblank?() }
                onChange?()
            } catch {
                logger.error("cannot change blanking", metadata: ["display": "\(display.displayDescription)", "error": "\(error)"])
            }
        }
        if let t = timer { loop.cancel(t); timer = nil }
        if let t = idleTimer { loop.cancel(t); idleTimer = nil }
        // Schedule changes on the wall clock (re-evaluated when the clock is set), idle on the monotonic one.
        if let u = d.nextUnix {
            timer = try? loop.schedule(at: u * 1_000_000_000, clock: .realtime) { [weak self] _ in
                self?.timer = nil
                self?.evaluate()
            }
        }
        if let i = d.idleDueNs {
            idleTimer = try? loop.schedule(at: i, clock: .monotonic) { [weak self] _ in
                self?.idleTimer = nil
                self?.evaluate()
            }
        }
    }

    /// Sets the panel by hand until the next scheduled change.
    public func setManual(_ blank: Bool) {
        loop.assertInLoop()
        let s = nowSeconds
        manual = (blank, policies.compactMap { $0.nextChange(after: s) }.min())
        if !blank { lastInputNs = time.now().monotonicNs }
        evaluate()
    }

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
        if manual?.blank == true { manual = nil }
        evaluate()
        // Swallow the events of the touch that woke the panel.
        return true
    }

    public func stop() {
        if let t = timer { loop.cancel(t); timer = nil }
        if let t = idleTimer { loop.cancel(t); idleTimer = nil }
    }
}
