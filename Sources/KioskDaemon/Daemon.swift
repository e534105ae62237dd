import FoundationEssentials
import Glibc
import KioskConfig
import KioskControl
import KioskCore
import KioskFleet
import KioskRender
import KioskScenes
import KioskState
import KioskWeb
import Logging
import KioskPosix

/// The running kiosk: config, scenes on a `SceneManager`, display, input and durable state, all
/// on one loop's thread (the epoll `EventLoop` in the process, a virtual-time loop in tests).
/// Every method is called on the loop's thread (the control server and signal handlers `post`
/// to it). The theme on screen is kept by a `ThemeController`, a reload is carried out by a
/// `ReloadCoordinator`, control commands by a `ControlCommandHandler`.
public final class Daemon {
    public let loop: any KioskLoop
    /// The loop when it is the epoll `EventLoop` (nil on a virtual-time loop): for whoever runs
    /// and stops it (the render loop service, tests that run the loop by hand).
    public var eventLoop: EventLoop? { loop as? EventLoop }
    public internal(set) var config: DaemonConfig
    public let registry: SceneRegistry
    public let state: StateStore
    /// The outputs driven, in config order (never empty).
    public let heads: [OutputHead]
    public let input: InputSource?
    /// What the displays need kept alive (`Backends.Displays.owner`: a DRM card several outputs share).
    public var displayOwner: AnyObject?
    /// The first output's display, scene manager, blanking and theme (the only ones of a
    /// single-output kioskd; the backlight and the brightness schedule act on this output).
    public var display: DisplayOutput { heads[0].display }
    public var manager: SceneManager { heads[0].manager }
    /// The chosen theme (config, or `kioskctl theme`); `activeThemeName` may differ during a `theme_schedule` period.
    public var themeName: String { themes.chosenName }
    /// The theme on screen.
    public var activeThemeName: String { themes.activeName }
    var themes: ThemeController { heads[0].themes }
    /// Schedule, idle and manual blanking.
    public var blanking: BlankController { heads[0].blanking }
    let logger: Logger
    let startedNs = nowNanos(.monotonic)
    private let reloader: ReloadCoordinator
    private let commands = ControlCommandHandler()
    /// Where time sync, the time zone and sysfs are looked for (tests set it before `start()`).
    public var wallHooks = WallHooks()
    let wallRuntime = WallRuntime()
    var horn: DaemonHorn? // [audio]'s horn (DaemonHorn.swift)
    let counterUndo = CounterUndo() // the counter changes a key bound to "undo" takes back (CounterUndo.swift)
    /// Tells remote observers (web pages, MQTT) the kiosk's state after every change.
    public private(set) var changes: ChangeFeed!
    /// The features started after the pipeline, stopped in reverse (`add`, DaemonComponents.swift).
    public internal(set) var components: [any DaemonComponent] = []
    /// `startComponents` ran: a component added now starts at once.
    var componentsRunning = false
    /// The corner warning's one writer: every output's corner.
    public private(set) lazy var corner = CornerWarnings { [weak self] text in for h in self?.heads ?? [] { h.manager.stateWarning = text } }
    /// Shared counters of a `[fleet]` group (its component's engine, `startFleet`); nil without one.
    public var fleet: FleetEngine? { components.lazy.compactMap { ($0 as? FleetComponent)?.engine }.first }
    /// The command pipeline, made with the daemon and started by `startPipeline`: counter
    /// changes, and the scene, theme and clock mode chosen, are committed on its thread, in
    /// groups, and shown when they are on disk. Every kept value goes through it.
    public let pipeline: CommandPipeline
    /// The one entrance of counter changes: every transport, touch and keys.
    public let intake: CounterIntake
    /// Where the counter scenes hand a touch or key on a counter: into `intake` (every scene made, also on a reload).
    let counterIntents: (CounterIntent) -> Void
    /// Where slow work goes so that the loop only draws, reads input and flips
    /// (DaemonOffLoop.swift): PNG encoding and the files a reload or a theme choice reads on the
    /// `kioskd-work` thread; tests may give another before `start()`.
    public var work: OffLoopWork {
        didSet { for h in heads { h.manager.offLoop = work } }
    }
    /// Writes that wait for the disk (a painting's encoding, write and fsync), on a thread of
    /// their own (`kioskd-save`), so that a slow disk delays no screenshot and no reload.
    public var writes: OffLoopWork {
        didSet { for h in heads { h.manager.sceneWrites = writes } }
    }
    /// Reloads waiting for their files to be read (`reload(then:)`).
    var reloadsInFlight: [ReloadInFlight] = []
    var settings = DaemonSettings() // the settings layer and its waiting changes (DaemonSettings.swift)

    /// Once: after the first frame is on screen, or at start when no output has a display
    /// connected (kioskd then waits for one; systemd READY=1).
    public var onReady: (() -> Void)?
    /// `onReady` was called.
    private var toldReady = false
    /// A one-line status changed ("scene clock on HDMI-A-1 1920x1080"; systemd STATUS=).
    public var onStatus: ((String) -> Void)?
    /// After every presented frame.
    public var onFrame: (() -> Void)?
    /// A frame found a game clock at zero (the horn's hook; DaemonClock.swift): on the loop, once per event.
    public var onClockEvent: ((GameClockEvent) -> Void)?

    static let sceneKey = "daemon.scene"
    static let themeKey = "daemon.theme"
    static let themeConfigKey = "daemon.theme.config"
    /// A clock scene's colour mode chosen at run time, and the config's `color_mode` it was chosen under.
    static func clockModeKey(_ scene: String) -> String { "clock.\(scene).mode" }
    static func clockModeConfigKey(_ scene: String) -> String { "clock.\(scene).mode.config" }

    /// The scenes of `config` (at start and on reload), each clock with the colour mode chosen
    /// at run time while its config's `color_mode` is unchanged (editing the config wins).
    static func makeScenes(_ config: DaemonConfig, registry: SceneRegistry, state: StateStore,
                           intents: @escaping (CounterIntent) -> Void, logger: Logger) throws -> [Scene] {
        let scenes = try registry.make(config.scenes, state: state, intents: intents, logger: logger, dataDirectory: Daemon.dataDirectory(config))
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

    /// Makes the scenes of `config` and a scene manager over `display` (a config with one output).
    /// Call `start()` on the loop.
    public convenience init(config: DaemonConfig, registry: SceneRegistry = .standard, display: DisplayOutput, input: InputSource?,
                            state: StateStore, loop: any KioskLoop, time: TimeSource = SystemTimeSource(), logger: Logger,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try self.init(config: config, registry: registry, displays: [display], input: input, state: state, loop: loop,
                      time: time, logger: logger, environment: environment)
    }

    /// Makes the scenes of `config` and a scene manager for each of its outputs over `displays`
    /// (one per output, in config order). Call `start()` on the loop.
    public init(config: DaemonConfig, registry: SceneRegistry = .standard, displays: [DisplayOutput], input: InputSource?,
                state: StateStore, loop: any KioskLoop, time: TimeSource = SystemTimeSource(), logger: Logger,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        let outputs = config.outputs
        guard displays.count == outputs.count else {
            throw KioskError.display("\(outputs.count) outputs are configured but \(displays.count) displays were made")
        }
        self.config = config
        self.registry = registry
        self.state = state
        self.input = input
        self.loop = loop
        self.logger = logger
        self.reloader = ReloadCoordinator(environment: environment)
        self.work = WorkerThread(name: "kioskd-work", loop: loop)
        self.writes = WorkerThread(name: "kioskd-save", loop: loop)
        let pipeline = CommandPipeline(store: state, logger: logger) { work in loop.post(work) }
        let intake = CounterIntake(pipeline: pipeline, loop: loop)
        self.pipeline = pipeline
        self.intake = intake
        let intents: (CounterIntent) -> Void = { [logger] intent in
            intake.submit(intent.counter, intent.edit, scene: intent.scene, answerOn: .loop) { answer in
                guard answer.status >= 400 else { return }
                logger.warning("counter action refused", metadata: ["scene": "\(intent.scene)", "counter": "\(intent.counter)", "edit": "\(intent.edit)",
                                                                  "error": "\(answer.errorMessage ?? "HTTP \(answer.status)")"])
            }
        }
        self.counterIntents = intents
        let perOutput = try Daemon.makeOutputScenes(config, registry: registry, state: state, intents: intents, logger: logger)
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
        let defaultPercent = state.load(Daemon.brightnessKey).flatMap(Double.init).map { min(max($0, 0), 100) } ?? 100
        var heads: [OutputHead] = []
        for (i, (output, display)) in zip(outputs, displays).enumerated() {
            var l = logger
            if outputs.count > 1 { l[metadataKey: "output"] = "\(output.name)" }
            // An output with a theme of its own shows it always; the others the chosen one and the schedule.
            let own = output.theme.map { (output.themeName ?? "", $0) }
            let manager = SceneManager(scenes: perOutput[i], theme: own?.1 ?? theme, display: display, loop: loop, time: time,
                                       switching: config.switching, logger: l)
            let themes = ThemeController(chosenName: own?.0 ?? themeName, chosen: own?.1 ?? theme,
                                         schedule: own == nil ? config.themeSchedule : [], manager: manager, loop: loop, logger: l)
            manager.gestureRecognizer = GestureRecognizer(thresholds: config.gestures)
            manager.showsCursor = config.input.cursor && i == Daemon.keysOutputIndex(config)
            manager.pixelOrbit = config.wall.pixelOrbit
            // The backlight and the brightness schedule are the first output's.
            let blanking = try BlankController(settings: output.blankSettings(config.display), wall: i == 0 ? config.wall : WallDisplaySettings(),
                                               defaultPercent: i == 0 ? defaultPercent : 100, display: display, loop: loop, time: time, logger: l)
            heads.append(OutputHead(settings: output, display: display, manager: manager, blanking: blanking, themes: themes))
        }
        self.heads = heads
        for h in heads {
            h.manager.offLoop = work
            h.manager.sceneWrites = writes
        }
        changes = ChangeFeed(scheduler: loop) { [weak self] in self?.kioskState() }
        // The fleet's counters are claimed by name from the start: no other stage decides them,
        // also before the group is joined (`startFleet`).
        if let fleet = config.fleet {
            let all = heads.flatMap(\.manager.scenes).compactMap { $0 as? CounterScene }.flatMap(\.counterNames)
            intake.claimForFleet(fleet.counters.map { Set($0) } ?? Set(all), group: fleet.group)
        }
        // The pipeline knows the counters before the loop runs: a change the control server
        // takes first waits in its queue until `startPipeline` starts the thread.
        updatePipelineDirectory()
    }

    /// The output keys and mice act on (`[input] keys_output`, else the first).
    static func keysOutputIndex(_ config: DaemonConfig) -> Int {
        guard let k = config.input.keysOutput?.lowercased() else { return 0 }
        return config.outputs.firstIndex { $0.name.lowercased() == k } ?? 0
    }

    /// Where scenes write files (saved paintings).
    static func dataDirectory(_ config: DaemonConfig) -> String { "\(config.stateDirectory)/paintings" }

    /// Shows each output's first scene (the one on screen before the last stop, if it still exists).
    public func start() {
        input?.setRotation(display.rotation)
        if heads.count > 1 {
            input?.onRoutedEvent = { [weak self] e, output in self?.routeInput(e, output: output) }
        } else {
            input?.onEvent = { [weak self] e in self?.manager.input(e) }
        }
        for head in heads {
            let manager = head.manager, blanking = head.blanking
            manager.onFirstFrame = { [weak self, unowned head] in
                guard let self else { return }
                self.logger.info("first frame on screen", metadata: ["display": "\(head.display.displayDescription)", "scene": "\(head.manager.current.name)"])
                // systemd hears of the first frame on any output (an output may be unplugged).
                self.tellReady()
                self.publishStatus()
            }
            manager.onFrame = { [weak self, unowned head] _ in
                guard let self else { return }
                self.onFrame?()
                self.changes.noteChange()
                if head.statusAwaitsFrame {
                    // Back after its display went away: the status says what is shown again.
                    head.statusAwaitsFrame = false
                    self.publishStatus()
                }
            }
            manager.onDisplayChange = { [weak self, unowned head] event in
                guard let self, event == .inactive else { return }
                head.statusAwaitsFrame = true
                if self.waitingForDisplay {
                    // The TV switched off (or unplugged) after start: waiting, as at boot.
                    self.logger.notice("waiting for a display: the last output showing a frame lost its display",
                                       metadata: ["output": "\(head.name)"])
                }
                self.publishStatus()
            }
            let key = head.sceneKey
            manager.onSceneChange = { [weak self] name in
                guard let self else { return }
                // Control requests save before showing (nothing more to write here); swipes, keys and
                // the rotation save now: through the command pipeline, without waiting for the disk.
                if self.state.durability == .durable {
                    let logger = self.logger
                    self.pipeline.submitWrites([(key, name)], delivery: .here) { outcome in
                        if case .refused(let e) = outcome { logger.error("cannot save the current scene", metadata: ["error": "\(e)"]) }
                    }
                }
                self.publishStatus()
                self.changes.noteChange()
            }
            manager.inputFilter = { [weak self] e in (blanking.input(e)) || (self?.web?.input(e) ?? false) }
            blanking.onUnblank = { manager.setNeedsFrame(full: true) }
            head.themes.onChange = { [weak self] in
                self?.publishStatus()
                self?.changes.noteChange()
            }
            blanking.onChange = { [weak self] in self?.changes.noteChange() }
        }
        if case .unavailable = state.durability { corner.set(.state, "state not saved") }
        startWall()
        for head in heads {
            head.manager.start(initialScene: state.load(head.sceneKey))
            head.blanking.evaluate()
        }
        startCEC()
        startHorn()
        refreshTheme()
        if waitingForDisplay {
            // Up and waiting: the scene is shown as soon as a display is connected.
            logger.notice("waiting for a display: no output has one connected", metadata: ["display": "\(heads.map(\.display.displayDescription).joined(separator: "; "))"])
            tellReady()
            publishStatus()
            // Once that is told: the first frame's one-time costs (fonts, shaping) now, not when the display comes.
            loop.deferToEndOfIteration { [weak self] in self?.warmUp() }
        }
        logger.info("kioskd started", metadata: ["scene": "\(heads.map(\.manager.current.name).joined(separator: ", "))", "theme": "\(themeName)",
                                                 "display": "\(heads.map(\.display.displayDescription).joined(separator: "; "))", "config": "\(config.file)"])
    }

    /// Gives an input event to the output it belongs to: touches to the output of their device
    /// (`output`), keys and mice to `[input] keys_output` (the first output by default).
    func routeInput(_ event: InputEvent, output: Int?) {
        let i = output.map { min(max($0, 0), heads.count - 1) } ?? Daemon.keysOutputIndex(config)
        heads[i].manager.input(event)
    }

    /// Stops timers, then input, then the displays (which restore the console).
    public func shutdown() {
        fleet?.stop()
        pipeline.stop()
        writes.finish(timeout: 5) // a painting being saved reaches the disk
        work.finish(timeout: 5)
        for h in heads {
            h.manager.stop()
            h.blanking.stop()
        }
        stopCEC()
        stopHorn()
        stopWall()
        for h in heads { h.themes.stop() }
        input?.shutdown()
        for h in heads { h.display.shutdown() }
        state.close() // gives the state directory (and its lock) back
        logger.info("kioskd stopped")
    }

    public var statusLine: String {
        let line = heads.map { h in "scene \(h.manager.current.name) (\(h.manager.current.statusSummary)), theme \(h.themes.activeName), \(h.display.displayDescription)" }
            .joined(separator: "; ")
        return waitingForDisplay ? "waiting for a display; \(line)" : line
    }

    /// Whether no output can show a frame: every display is inactive (nothing connected).
    public var waitingForDisplay: Bool { heads.allSatisfy { $0.display.logicalSize == nil } }

    /// Draws each waiting output's scene once off screen, at its configured mode's size or
    /// 1920x1080 (`SceneManager.warmUp`).
    private func warmUp() {
        for h in heads where h.display.logicalSize == nil {
            let size = h.settings.mode.flatMap { DaemonConfig.parseMode($0)?.0 } ?? Size(width: 1920, height: 1080)
            h.manager.warmUp(size: h.display.rotation.logicalSize(physical: size))
        }
    }

    private func tellReady() {
        guard !toldReady else { return }
        toldReady = true
        onReady?()
    }

    func publishStatus() { onStatus?(statusLine) }

    /// Shows the scheduled theme of the current period (or the chosen one) and arms a wall-clock
    /// timer for the next change (it also fires when the clock is set).
    public func refreshTheme(force: Bool = false) { for h in heads { h.themes.refresh(force: force) } }

    /// Reads the config file again (the settings layer over it); a bad config is reported (file:line:key) and the running one kept.
    @discardableResult
    public func reload() -> Result<String, KioskError> { reloader.reload(self) }

    /// Applies a reload whose files `reading` holds (read off the loop: `reload(then:)`).
    func reload(reading: ReloadCoordinator.Reading) -> Result<String, KioskError> { reloader.reload(self, reading: reading) }
    var reloadEnvironment: [String: String] { reloader.environment }

    /// Carries out one control command on the loop and returns the answer at once. A command
    /// that keeps a value (a counter change; the scene, theme, clock mode or brightness chosen)
    /// is refused here (500): it is answered once kept, through `handle(_:reply:)`, the road
    /// every transport takes.
    public func handle(_ command: ControlCommand) -> ControlResponse {
        defer { changes.noteChange() }
        return commands.handle(command, on: self)
    }

    /// Carries out one control command and gives the answer to `reply`, at once or later (on the
    /// loop's thread): every transport (control socket, web, MQTT) goes through this one, so a
    /// command whose answer must wait (a shared counter's change coming back from the fleet's
    /// primary) is answered the same way everywhere.
    public func handle(_ command: ControlCommand, reply: @escaping (ControlResponse) -> Void) {
        if case .counter(let name, let op, let value) = command, let edit = op.edit(value) {
            // Answered on the loop: by the fleet, or once the pipeline committed it.
            let bound = LoopBound(reply, loop: loop)
            intake.submit(name, edit, answerOn: .loop) { answer in bound.value(answer) }
            return
        }
        if case .revokeDevice(let name) = command, let pairing {
            // Answered once the revocation is on disk (the device is refused from now on).
            pairing.revoke(name) { [weak self] answer in
                reply(answer)
                self?.changes.noteChange()
            }
            return
        }
        if commands.submitOffLoop(command, on: self, reply: reply) { return }
        if commands.submitChoice(command, on: self, reply: reply) {
            changes.noteChange()
            return
        }
        reply(handle(command))
    }

    /// What `GET /status` answers.
    public func status() -> StatusAnswer { commands.status(self) }
}
