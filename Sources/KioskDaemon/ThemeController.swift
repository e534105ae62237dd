import KioskConfig
import KioskCore
import KioskPosix
import KioskScenes
import Logging

/// Which theme is on screen: the chosen one (config, or `kioskctl theme`), or the theme of the
/// current `theme_schedule` period. A theme chosen by hand holds until the next scheduled change.
/// Arms one wall-clock timer for the next change (it also fires when the clock is set). Runs on
/// the render loop's thread.
final class ThemeController {
    private let manager: SceneManager
    private let loop: any KioskLoop
    private let logger: Logger
    /// The config's schedule (replaced on reload).
    var schedule: [ScheduledTheme]
    /// The chosen theme's name and theme.
    private(set) var chosenName: String
    private var chosen: Theme
    /// The theme on screen.
    private(set) var activeName: String
    private var timer: TimerID?
    /// A theme chosen by hand holds until this time (unix seconds).
    private var overrideUntil: Int64?
    /// After the theme on screen changed.
    var onChange: (() -> Void)?

    init(chosenName: String, chosen: Theme, schedule: [ScheduledTheme], manager: SceneManager, loop: any KioskLoop, logger: Logger) {
        self.chosenName = chosenName
        self.chosen = chosen
        self.activeName = chosenName
        self.schedule = schedule
        self.manager = manager
        self.loop = loop
        self.logger = logger
    }

    /// A theme chosen by hand: shown now, until the next scheduled change.
    func choose(_ name: String, _ theme: Theme) {
        chosenName = name
        chosen = theme
        let s = manager.time.now().realtimeNs / 1_000_000_000
        overrideUntil = schedule.map { $0.period.nextTransition(after: s) }.min()
        refresh(force: true)
    }

    /// A reloaded config: its chosen theme and schedule (the scene manager already shows `theme`).
    func reloaded(chosenName: String, chosen: Theme, schedule: [ScheduledTheme]) {
        self.chosenName = chosenName
        self.chosen = chosen
        self.schedule = schedule
        activeName = chosenName
        refresh()
    }

    /// Shows the scheduled theme of the current period (or the chosen one) and arms the timer
    /// for the next change.
    func refresh(force: Bool = false) {
        loop.assertInLoop()
        let s = manager.time.now().realtimeNs / 1_000_000_000
        if let u = overrideUntil, s >= u { overrideUntil = nil }
        var name = chosenName
        var theme = chosen
        if overrideUntil == nil, let e = schedule.first(where: { $0.period.isBlank(at: s) }) {
            name = e.name
            theme = e.theme
        }
        if force || name != activeName || theme != manager.theme {
            activeName = name
            manager.setTheme(theme)
            logger.info("theme on screen", metadata: ["theme": "\(name)"])
            onChange?()
        }
        stop()
        var next = schedule.map { $0.period.nextTransition(after: s) }.min()
        if let u = overrideUntil { next = min(next ?? u, u) }
        guard let n = next else { return }
        timer = try? loop.schedule(at: n * 1_000_000_000, clock: .realtime) { [weak self] _ in
            self?.timer = nil
            self?.refresh()
        }
    }

    func stop() {
        if let t = timer { loop.cancel(t); timer = nil }
    }
}
