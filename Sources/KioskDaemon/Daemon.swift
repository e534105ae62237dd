import Foundation
import KioskControl
import KioskCore
import KioskRender
import KioskScenes
import KioskWeb
import Logging
import KioskPosix

/// The running kiosk: config, scenes on a `SceneManager`, display, input and durable state, all
/// on one `EventLoop` thread. Every method is called on the loop's thread (the control server
/// and signal handlers `post` to it). The theme on screen is kept by a `ThemeController`, a
/// reload is carried out by a `ReloadCoordinator`, control commands by a `ControlCommandHandler`.
public final class Daemon {
    public let loop: EventLoop
    public internal(set) var config: DaemonConfig
    public let registry: SceneRegistry
    public let state: StateStore
    public let display: DisplayOutput
    public let input: InputSource?
    public let manager: SceneManager
    /// The chosen theme (config, or `kioskctl theme`); `activeThemeName` may differ during a `theme_schedule` period.
    public var themeName: String { themes.chosenName }
    /// The theme on screen.
    public var activeThemeName: String { themes.activeName }
    let themes: ThemeController
    /// Schedule, idle and manual blanking.
    public let blanking: BlankController
    let logger: Logger
    let startedNs = nowNanos(.monotonic)
    private let reloader: ReloadCoordinator
    private let commands = ControlCommandHandler()
    /// Where time sync, the time zone and sysfs are looked for (tests set it before `start()`).
    public var wallHooks = WallHooks()
    let wallRuntime = WallRuntime()
    /// Tells remote observers (web pages, MQTT) the kiosk's state after every change.
    public private(set) var changes: ChangeFeed!
    /// Pairing codes and paired phones (nil: no web server); the phone page's live streams.
    public internal(set) var pairing: PairingBook?
    var webLive: WebLive?
    /// `web.pair_gesture`'s recogniser and the timer armed for its hold (nil: no gesture).
    var pairGesture: PairGesture?
    var pairGestureTimer: TimerID?
    /// The MQTT bridge (`[mqtt]` configured), made by `DaemonRunner`; nil: MQTT is off.
    public var mqtt: MQTTBridge?
    /// Shared counters of a `[fleet]` group (`startFleet`); nil without one.
    public internal(set) var fleet: FleetEngine?
    /// The command pipeline (`startPipeline`): counter changes, and the scene, theme and clock
    /// mode chosen, are committed on its thread, in groups, and shown when they are on disk.
    /// Nil: they are saved on the loop's thread.
    public internal(set) var pipeline: CommandPipeline?

    /// After the first frame is on screen (systemd READY=1).
    public var onReady: (() -> Void)?
    /// A one-line status changed ("scene clock on HDMI-A-1 1920x1080"; systemd STATUS=).
    public var onStatus: ((String) -> Void)?
    /// After every presented frame.
    public var onFrame: (() -> Void)?

    static let sceneKey = "daemon.scene"
    static let themeKey = "daemon.theme"
    static let themeConfigKey = "daemon.theme.config"
    /// A clock scene's colour mode chosen at run time, and the config's `color_mode` it was chosen under.
    static func clockModeKey(_ scene: String) -> String { "clock.\(scene).mode" }
    static func clockModeConfigKey(_ scene: String) -> String { "clock.\(scene).mode.config" }

    /// The scenes of `config` (at start and on reload), each clock with the colour mode chosen at
    /// run time while its config's `color_mode` is still the one it was chosen under (editing
    /// the config wins).
    static func makeScenes(_ config: DaemonConfig, registry: SceneRegistry, state: StateStore, logger: Logger) throws -> [Scene] {
        let scenes = try registry.make(config.scenes, state: state, logger: logger, dataDirectory: Daemon.dataDirectory(config))
        for case let c as ClockScene in scenes {
            guard let saved = state.load(clockModeKey(c.name)),
                  state.load(clockModeConfigKey(c.name)) == c.configuredColorMode.rawValue else { continue }
            guard let mode = ClockColorMode(rawValue: saved) else {
                logger.warning("the clock mode chosen at run time is unknown; using the config's", metadata: ["scene": "\(c.name)", "mode": "\(saved)"])
                continue
            }
            c.setColorMode(mode)
        }
        return scenes
    }

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
        self.reloader = ReloadCoordinator(environment: environment)
        let scenes = try Daemon.makeScenes(config, registry: registry, state: state, logger: logger)
        // A theme chosen at run time stays until the config's theme changes.
        var theme = config.theme
        var themeName = config.themeName
        if let saved = state.load(Daemon.themeKey), state.load(Daemon.themeConfigKey) == config.themeName, saved != config.themeName {
            if let t = try? ThemeLoader.load(named: saved, directory: config.themeDirectory) {
                theme = t
                themeName = saved
            } else {
                logger.warning("the theme chosen at run time is gone; using the config's", metadata: ["theme": "\(saved)"])
            }
        }
        manager = SceneManager(scenes: scenes, theme: theme, display: display, loop: loop, time: time,
                               switching: config.switching, logger: logger)
        themes = ThemeController(chosenName: themeName, chosen: theme, schedule: config.themeSchedule, manager: manager, loop: loop, logger: logger)
        manager.gestureRecognizer = GestureRecognizer(thresholds: config.gestures)
        manager.showsCursor = config.input.cursor
        manager.pixelOrbit = config.wall.pixelOrbit
        blanking = try BlankController(settings: config.display, wall: config.wall,
                                       defaultPercent: state.load(Daemon.brightnessKey).flatMap(Double.init).map { min(max($0, 0), 100) } ?? 100,
                                       display: display, loop: loop, time: time, logger: logger)
        changes = ChangeFeed(scheduler: loop) { [weak self] in self?.kioskState() }
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
        manager.onFrame = { [weak self] _ in
            self?.onFrame?()
            self?.changes.noteChange()
        }
        manager.onSceneChange = { [weak self] name in
            guard let self else { return }
            // Control requests save before showing (nothing more to write here); swipes, keys and
            // the rotation save now: through the command pipeline, without waiting for the disk.
            if self.state.durability == .durable {
                if let pipeline = self.pipeline {
                    let logger = self.logger
                    pipeline.submitWrites([(Daemon.sceneKey, name)], delivery: .here) { outcome in
                        if case .refused(let e) = outcome { logger.error("cannot save the current scene", metadata: ["error": "\(e)"]) }
                    }
                } else {
                    do { try self.state.save(Daemon.sceneKey, name) } catch {
                        self.logger.error("cannot save the current scene", metadata: ["error": "\(error)"])
                    }
                }
            }
            self.publishStatus()
            self.changes.noteChange()
        }
        if case .unavailable = state.durability { manager.stateWarning = "state not saved" }
        manager.inputFilter = { [weak self] e in (self?.blanking.input(e) ?? false) || (self?.pairingKey(e) ?? false) || (self?.pairingGesture(e) ?? false) }
        blanking.onUnblank = { [weak self] in self?.manager.setNeedsFrame(full: true) }
        themes.onChange = { [weak self] in
            self?.publishStatus()
            self?.changes.noteChange()
        }
        blanking.onChange = { [weak self] in self?.changes.noteChange() }
        let saved = state.load(Daemon.sceneKey)
        startWall()
        manager.start(initialScene: saved)
        blanking.evaluate()
        refreshTheme()
        logger.info("kioskd started", metadata: ["scene": "\(manager.current.name)", "theme": "\(themeName)",
                                                 "display": "\(display.displayDescription)", "config": "\(config.file)"])
    }

    /// Stops timers, then input, then the display (which restores the console).
    public func shutdown() {
        fleet?.stop()
        pipeline?.stop()
        manager.stop()
        blanking.stop()
        stopWall()
        themes.stop()
        input?.shutdown()
        display.shutdown()
        state.close() // gives the state directory (and its lock) back
        logger.info("kioskd stopped")
    }

    public var statusLine: String {
        "scene \(manager.current.name) (\(manager.current.statusSummary)), theme \(activeThemeName), \(display.displayDescription)"
    }

    func publishStatus() { onStatus?(statusLine) }

    /// Shows the scheduled theme of the current period (or the chosen one) and arms a wall-clock
    /// timer for the next change (it also fires when the clock is set).
    public func refreshTheme(force: Bool = false) { themes.refresh(force: force) }

    /// Reads the config file again; a bad config is reported (file:line:key) and the running one kept.
    @discardableResult
    public func reload() -> Result<String, KioskError> { reloader.reload(self) }

    /// Carries out one control command (on the loop thread) and returns the answer.
    public func handle(_ command: ControlCommand) -> ControlResponse {
        defer { changes.noteChange() }
        return commands.handle(command, on: self)
    }

    /// Carries out one control command and gives the answer to `reply`, at once or later (on the
    /// loop's thread): every transport (control socket, web, MQTT) goes through this one, so a
    /// command whose answer must wait (a shared counter's change coming back from the fleet's
    /// primary) is answered the same way everywhere.
    public func handle(_ command: ControlCommand, reply: @escaping (ControlResponse) -> Void) {
        if let route = asyncRoute, route(command, reply) { return }
        if pipeline != nil, routeToPipeline(command, reply: reply) { return }
        if pipeline != nil, case .revokeDevice(let name) = command, let pairing {
            // Answered once the revocation is on disk (the device is refused from now on).
            pairing.revoke(name) { [weak self] answer in
                reply(answer)
                self?.changes.noteChange()
            }
            return
        }
        if pipeline != nil, commands.submitChoice(command, on: self, reply: reply) {
            changes.noteChange()
            return
        }
        reply(handle(command))
    }

    /// Takes commands that are answered later (returns true when it took `command`); nil: none.
    public var asyncRoute: ((ControlCommand, @escaping (ControlResponse) -> Void) -> Bool)?

    /// What `GET /status` answers.
    public func status() -> StatusAnswer { commands.status(self) }

}
