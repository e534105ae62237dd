import Foundation
import KioskCore
import KioskRender
import KioskScenes
import Logging
import KioskPosix

/// The running kiosk: config, scenes on a `SceneManager`, display, input and durable state, all
/// on one `EventLoop` thread. Every method is called on the loop's thread (the control server
/// and signal handlers `post` to it).
public final class Daemon: @unchecked Sendable {
    public let loop: EventLoop
    public private(set) var config: DaemonConfig
    public let registry: SceneRegistry
    public let state: StateStore
    public let display: DisplayOutput
    public let input: InputSource?
    public let manager: SceneManager
    /// The chosen theme (config, or `kioskctl theme`); `activeThemeName` may differ during a `theme_schedule` period.
    public private(set) var themeName: String
    /// The theme on screen.
    public private(set) var activeThemeName: String
    private var baseTheme: Theme
    private var themeTimer: EventLoop.TimerID?
    /// A theme chosen by hand holds until the next scheduled theme change (unix seconds).
    private var themeOverrideUntil: Int64?
    /// Schedule, idle and manual blanking.
    public let blanking: BlankController
    private let logger: Logger
    private let startedNs = nowNanos(.monotonic)
    private var environment: [String: String]

    /// After the first frame is on screen (systemd READY=1).
    public var onReady: (() -> Void)?
    /// A one-line status changed ("scene clock on HDMI-A-1 1920x1080"; systemd STATUS=).
    public var onStatus: ((String) -> Void)?
    /// After every presented frame.
    public var onFrame: (() -> Void)?

    static let sceneKey = "daemon.scene"
    static let themeKey = "daemon.theme"
    static let themeConfigKey = "daemon.theme.config"

    /// Makes the scenes of `config` and a scene manager over `display`. Call `start()` on the loop.
    public init(config: DaemonConfig, registry: SceneRegistry = .standard, display: DisplayOutput, input: InputSource?,
                state: StateStore, loop: EventLoop, time: TimeSource = SystemTimeSource(), logger: Logger,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.config = config
        self.registry = registry
        self.state = state
        self.display = display
        self.input = input
        self.loop = loop
        self.logger = logger
        self.environment = environment
        let scenes = try registry.make(config.scenes, state: state, logger: logger, dataDirectory: Daemon.dataDirectory(config))
        // A theme chosen at run time stays until the config's theme changes.
        var theme = config.theme
        themeName = config.themeName
        if let saved = state.load(Daemon.themeKey), state.load(Daemon.themeConfigKey) == config.themeName, saved != config.themeName {
            if let t = try? ThemeLoader.load(named: saved, directory: config.themeDirectory) {
                theme = t
                themeName = saved
            } else {
                logger.warning("the theme chosen at run time is gone; using the config's", metadata: ["theme": "\(saved)"])
            }
        }
        baseTheme = theme
        activeThemeName = themeName
        manager = SceneManager(scenes: scenes, theme: theme, display: display, loop: loop, time: time,
                               switching: config.switching, logger: logger)
        manager.gestureRecognizer = GestureRecognizer(thresholds: config.gestures)
        manager.showsCursor = config.input.cursor
        blanking = try BlankController(settings: config.display, display: display, loop: loop, time: time, logger: logger)
    }

    /// Where scenes write files (saved paintings).
    static func dataDirectory(_ config: DaemonConfig) -> String { "\(config.stateDirectory)/paintings" }

    /// Shows the first scene (the one on screen before the last stop, if it still exists).
    public func start() {
        input?.setRotation(display.rotation)
        input?.onEvent = { [weak self] e in self?.manager.input(e) }
        manager.onFirstFrame = { [weak self] in
            guard let self else { return }
            self.logger.info("first frame on screen", metadata: ["display": "\(self.display.displayDescription)", "scene": "\(self.manager.current.name)"])
            self.onReady?()
            self.publishStatus()
        }
        manager.onFrame = { [weak self] _ in self?.onFrame?() }
        manager.onSceneChange = { [weak self] name in
            guard let self else { return }
            // Control requests save before showing (a no-op here); swipes, keys and the rotation save now.
            if self.state.durability == .durable {
                do { try self.state.save(Daemon.sceneKey, name) } catch {
                    self.logger.error("cannot save the current scene", metadata: ["error": "\(error)"])
                }
            }
            self.publishStatus()
        }
        if case .unavailable = state.durability { manager.stateWarning = "state not saved" }
        manager.inputFilter = { [weak self] e in self?.blanking.input(e) ?? false }
        blanking.onUnblank = { [weak self] in self?.manager.setNeedsFrame(full: true) }
        let saved = state.load(Daemon.sceneKey)
        manager.start(initialScene: saved)
        blanking.evaluate()
        refreshTheme()
        logger.info("kioskd started", metadata: ["scene": "\(manager.current.name)", "theme": "\(themeName)",
                                                 "display": "\(display.displayDescription)", "config": "\(config.file)"])
    }

    /// Stops timers, then input, then the display (which restores the console).
    public func shutdown() {
        manager.stop()
        blanking.stop()
        if let t = themeTimer { loop.cancel(t); themeTimer = nil }
        input?.shutdown()
        display.shutdown()
        state.close() // gives the state directory (and its lock) back
        logger.info("kioskd stopped")
    }

    public var statusLine: String {
        "scene \(manager.current.name) (\(manager.current.statusSummary)), theme \(activeThemeName), \(display.displayDescription)"
    }

    private func publishStatus() { onStatus?(statusLine) }

    // MARK: theme schedule

    /// Shows the scheduled theme of the current period (or the chosen one) and arms a wall-clock
    /// timer for the next change (it also fires when the clock is set).
    public func refreshTheme(force: Bool = false) {
        let now = manager.time.now()
        let s = now.realtimeNs / 1_000_000_000
        if let u = themeOverrideUntil, s >= u { themeOverrideUntil = nil }
        var name = themeName
        var theme = baseTheme
        if themeOverrideUntil == nil, let e = config.themeSchedule.first(where: { $0.period.isBlank(at: s) }) {
            name = e.name
            theme = e.theme
        }
        if force || name != activeThemeName || theme != manager.theme {
            activeThemeName = name
            manager.setTheme(theme)
            logger.info("theme on screen", metadata: ["theme": "\(name)"])
            publishStatus()
        }
        if let t = themeTimer { loop.cancel(t); themeTimer = nil }
        var next = config.themeSchedule.map { $0.period.nextTransition(after: s) }.min()
        if let u = themeOverrideUntil { next = min(next ?? u, u) }
        guard let n = next else { return }
        themeTimer = try? loop.schedule(at: n * 1_000_000_000, clock: .realtime) { [weak self] _ in
            self?.themeTimer = nil
            self?.refreshTheme()
        }
    }

    // MARK: reload

    /// Reads the config file again; a bad config is reported (file:line:key) and the running one kept.
    @discardableResult
    public func reload() -> Result<String, KioskError> {
        do {
            let new = try DaemonConfig.load(path: config.file, environment: environment, kinds: registry.kinds)
            let scenes = try registry.make(new.scenes, state: state, logger: logger, dataDirectory: Daemon.dataDirectory(new))
            var notes: [String] = []
            if new.display != config.display { notes.append("[display] changes take effect at the next start") }
            if new.input != config.input { notes.append("[input] changes take effect at the next start") }
            if new.control != config.control { notes.append("[control] changes take effect at the next start") }
            if new.stateDirectory != config.stateDirectory { notes.append("state_dir changes take effect at the next start") }
            if new.stateMode != config.stateMode { notes.append("state changes take effect at the next start") }
            // The config's theme wins when it changed; otherwise a theme chosen at run time stays.
            // Either way it is read again, so edits to its file apply.
            let theme: Theme
            if new.themeName != config.themeName || themeName == new.themeName {
                theme = new.theme
                themeName = new.themeName
                try? state.save(Daemon.themeKey, new.themeName)
                try? state.save(Daemon.themeConfigKey, new.themeName)
            } else {
                theme = try ThemeLoader.load(named: themeName, directory: new.themeDirectory)
            }
            config = new
            manager.gestureRecognizer = GestureRecognizer(thresholds: new.gestures)
            manager.showsCursor = new.input.cursor
            try blanking.update(settings: new.display)
            baseTheme = theme
            manager.replaceScenes(scenes, switching: new.switching, theme: theme)
            activeThemeName = themeName
            refreshTheme()
            let msg = "reloaded \(new.file): scenes \(scenes.map(\.name).joined(separator: ", ")), theme \(themeName)"
                + (notes.isEmpty ? "" : "; " + notes.joined(separator: "; "))
            logger.notice("\(msg)")
            publishStatus()
            return .success(msg)
        } catch {
            let e = (error as? KioskError) ?? KioskError.config("\(config.file): \(error)")
            logger.error("config reload failed; keeping the running config", metadata: ["error": "\(e.message)"])
            return .failure(e)
        }
    }

    // MARK: control

    /// Carries out one control command (on the loop thread) and returns the answer.
    public func handle(_ command: ControlCommand) -> ControlResponse {
        let now = manager.time.now()
        do {
            switch command {
            case .status:
                return .json(200, status())
            case .outputs:
                return .json(200, ["outputs": [["description": display.displayDescription,
                                                 "logical_size": display.logicalSize.map { "\($0.width)x\($0.height)" } as Any? ?? NSNull(),
                                                 "rotation": display.rotation.rawValue, "blanked": display.isBlanked]]])
            case .scene(let name):
                guard manager.scenes.contains(where: { $0.name == name }) else {
                    do { try manager.show(sceneNamed: name) } catch { return .from(error, field: "name") }
                    return .ok(["scene": manager.current.name])
                }
                // Saved before it is shown: a choice that cannot be saved is refused and not shown.
                var answer: [String: Any] = [:]
                if let refusal = keepChoice([(Daemon.sceneKey, name)], "scene '\(name)'", stays: "the scene stays '\(manager.current.name)'", into: &answer) {
                    return refusal
                }
                try manager.show(sceneNamed: name)
                answer["scene"] = manager.current.name
                return .ok(answer)
            case .theme(let name):
                let t: Theme
                do { t = try ThemeLoader.load(named: name, directory: config.themeDirectory) } catch { return .from(error, field: "name") }
                // The chosen theme applies at the next start only while the config's theme is the
                // one it was chosen under: with that already saved, one save decides; otherwise the
                // choice is saved first and takes effect with the second save.
                var saves = [(Daemon.themeKey, name)]
                if state.load(Daemon.themeConfigKey) != config.themeName { saves.append((Daemon.themeConfigKey, config.themeName)) }
                var answer: [String: Any] = [:]
                if let refusal = keepChoice(saves, "theme '\(name)'", stays: "the theme stays '\(activeThemeName)'", into: &answer) {
                    return refusal
                }
                themeName = name
                baseTheme = t
                let s = now.realtimeNs / 1_000_000_000
                themeOverrideUntil = config.themeSchedule.map { $0.period.nextTransition(after: s) }.min()
                refreshTheme(force: true)
                answer["theme"] = name
                return .ok(answer)
            case .counter(let name, let op, let value):
                let owners = manager.scene(as: CounterControl.self)
                guard let c = owners.first(where: { $0.counterNames.contains(name) }) else {
                    let all = owners.flatMap(\.counterNames)
                    return .error(404, "unknown counter '\(name)'; " + (all.isEmpty ? "no scene has counters" : "counters: \(all.joined(separator: ", "))"), field: "name")
                }
                do {
                    switch op {
                    case .get: return .json(200, ["counter": name, "value": try c.value(of: name)])
                    case .set: try c.set(name, to: value ?? 0, now: now)
                    case .inc: try c.increment(name, now: now)
                    case .dec: try c.decrement(name, now: now)
                    case .reset: try c.reset(name, now: now)
                    }
                } catch {
                    return .from(error, field: op == .set ? "value" : "name")
                }
                manager.sceneDidChange()
                return .ok(["counter": name, "value": (try? c.value(of: name)) ?? 0])
            case .paint(let op, let name):
                guard let p = manager.scene(as: PaintControl.self).first else {
                    return .error(404, "no paint scene is configured (scenes: \(manager.scenes.map(\.name).joined(separator: ", ")))")
                }
                var extra: [String: Any] = [:]
                switch op {
                case .clear: p.clear()
                case .undo: extra["changed"] = p.undo()
                case .redo: extra["changed"] = p.redo()
                case .save:
                    do { extra["path"] = try p.save(name: name) } catch let e as KioskError where e.errno == EEXIST {
                        return .error(409, e.message, field: "name")
                    } catch {
                        logger.error("cannot save the painting", metadata: ["error": "\(error)"])
                        return .from(error, field: "name")
                    }
                }
                extra["strokes"] = p.strokeCount
                manager.sceneDidChange()
                return .ok(extra)
            case .screenshot:
                manager.renderIfPossible()
                return ControlResponse(status: 200, contentType: "image/png", body: try manager.screenshotPNG())
            case .blank(let on):
                blanking.setManual(on)
                return .ok(["blanked": display.isBlanked])
            case .reload:
                switch reload() {
                case .success(let m): return .ok(["message": m])
                case .failure(let e): return .error(422, e.message)
                }
            }
        } catch {
            logger.error("control command failed", metadata: ["command": "\(command)", "error": "\(error)"])
            return .from(error)
        }
    }

    /// Saves a scene or theme choice before it is applied. Returns the refusal when a durable
    /// save failed (500, or 507 when the disk is full; nothing changes). When state is not being
    /// saved (unusable directory, or `state = "volatile"`) the choice is applied and the answer
    /// says it is not kept ("saved": false and a note).
    private func keepChoice(_ saves: [(String, String)], _ what: String, stays: String, into answer: inout [String: Any]) -> ControlResponse? {
        switch state.durability {
        case .durable:
            do {
                for (k, v) in saves { try state.save(k, v) }
            } catch {
                let errnum = (error as? KioskError)?.errno ?? 0
                logger.error("cannot save the choice of \(what); refused", metadata: ["error": "\(error)"])
                return .error(errnum == ENOSPC || errnum == EDQUOT ? 507 : 500, "cannot save the choice of \(what): \(error); \(stays)")
            }
        case .volatile:
            answer["saved"] = false
            answer["note"] = "state = \"volatile\": the choice of \(what) lasts until kioskd stops"
        case .unavailable(let why):
            answer["saved"] = false
            answer["note"] = "state is not being saved (\(why)): the choice of \(what) lasts until kioskd stops"
        }
        return nil
    }

    /// The `state` part of the status: "durable", "volatile" or "not saved" with the reason.
    public var stateStatus: [String: Any] {
        var out: [String: Any] = ["directory": config.stateDirectory]
        switch state.durability {
        case .durable:
            out["mode"] = "durable"; out["durable"] = true
        case .volatile:
            out["mode"] = "volatile"; out["durable"] = false
            out["reason"] = "state = \"volatile\" in the config: values are kept in memory until kioskd stops"
        case .unavailable(let why):
            out["mode"] = "not saved"; out["durable"] = false; out["reason"] = why
        }
        return out
    }

    /// What `GET /status` answers.
    public func status() -> [String: Any] {
        let s = manager.stats
        let uptime = Double(nowNanos(.monotonic) - startedNs) / 1e9
        return [
            "scene": manager.current.name,
            "scene_kind": manager.current.kind,
            "scene_summary": manager.current.statusSummary,
            "scenes": manager.scenes.map(\.name),
            "theme": activeThemeName,
            "chosen_theme": themeName,
            "output": display.displayDescription,
            "mode": display.logicalSize.map { "\($0.width)x\($0.height)" } ?? "none",
            "rotation": display.rotation.rawValue,
            "blanked": display.isBlanked,
            "fps": (s.fps * 10).rounded() / 10,
            "frames": s.frames,
            "frame_ms": ["p50": round3(s.p50Ms), "p90": round3(s.p90Ms), "p99": round3(s.p99Ms), "max": round3(s.maxMs)],
            "uptime_seconds": (uptime * 10).rounded() / 10,
            "input_devices": (input?.devices ?? []).map { ["name": $0.name, "sysname": $0.sysname, "capabilities": $0.capabilities.names] },
            "config": config.file,
            "state": stateStatus,
        ]
    }

    private func round3(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
}
