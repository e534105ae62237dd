import FoundationEssentials
import KioskConfig
import KioskControl
import KioskCore
import KioskHTTP
import KioskRender
import KioskState
import KioskWeb
import Logging
import enum NIOCore.NIOSingletons
import class NIOPosix.MultiThreadedEventLoopGroup
import ServiceLifecycle
import Synchronization
import KioskPosix
import CKioskExecutorHook
import class KioskDRM.DRMHandover

/// Runs the render/event loop on its own thread: the daemon starts on it, and a graceful
/// shutdown stops the scenes, input and display there (the display restores the console).
public final class RenderLoopService: Service {
    private let daemon: LoopBound<Daemon>
    /// The daemon's loop, which this service runs and stops (so the concrete epoll loop).
    private let loop: EventLoop
    private let notifier: SystemdNotifier
    private let logger: Logger
    /// Whether the render thread was started (`start()`), and what its loop ended with.
    private let started = Mutex(false)
    private let finished = OneShot<Error?>()

    /// `daemon` must be on an epoll `EventLoop` (a daemon on a test's virtual-time loop is driven
    /// by the test, not by a service).
    public init(daemon: Daemon, notifier: SystemdNotifier, logger: Logger) {
        guard let loop = daemon.eventLoop else {
            preconditionFailure("RenderLoopService: the daemon runs on \(type(of: daemon.loop)), not on an EventLoop this service can run")
        }
        self.daemon = LoopBound(daemon, loop: loop)
        self.loop = loop
        self.notifier = notifier
        self.logger = logger
    }

    /// Starts the render thread: the daemon starts on it and it runs the loop. `run()` does this
    /// if nothing has; `DaemonRunner.run` does it as soon as the daemon is built, so the first
    /// frame is drawn while the control server starts. Once: later calls do nothing.
    public func start() throws {
        let first = started.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        guard first else { return }
        let daemon = self.daemon
        let notifier = self.notifier
        let loop = self.loop
        let finished = self.finished
        do {
            try NamedThread.detach(name: "kioskd-render") {
                loop.post {
                    daemon.value.start()
                    daemon.value.startPipeline()
                    daemon.value.startComponents()
                    notifier.startWatchdog(on: loop)
                }
                do {
                    try loop.run()
                    finished.fulfil(nil)
                } catch {
                    finished.fulfil(error)
                }
            }
        } catch {
            started.withLock { $0 = false }
            throw error
        }
    }

    public func run() async throws {
        try start()
        let daemon = self.daemon
        let notifier = self.notifier
        let loop = self.loop
        let finished = self.finished
        let outcome: Error? = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await finished.value()
            } onCancel: {
                finished.fulfil(CancellationError())
            }
        } onGracefulShutdown: {
            loop.post {
                // Cards in systemd's store keep their pictures for the next kioskd (a restart).
                DRMHandover.process.exiting()
                notifier.stopping()
                notifier.stopWatchdog(on: loop)
                // Components first (MQTT: `offline` published and the broker left, at most 2 s), then the rest.
                let finish = {
                    daemon.value.shutdown()
                    loop.stop()
                }
                daemon.value.stopComponents(then: finish)
            }
        }
        if let e = outcome {
            if e is CancellationError {
                logger.warning("render loop did not stop in time; exiting without waiting for it")
                return
            }
            logger.critical("render loop failed", metadata: ["error": "\(e)"])
            throw e
        }
    }
}

/// Serves the control socket until shutdown. Listed after the render loop, so it is stopped
/// first: it stops accepting, lets the requests it has received be carried out and answered
/// (bounded by `ControlLimits.drainTimeout`) while the render loop still runs, and only then
/// returns, after which the render loop is stopped.
public final class ControlServerService: Service {
    public let server: ControlServer
    /// Called once the socket listens (`ReadyGate`).
    private let onListening: @Sendable () -> Void
    public init(server: ControlServer, onListening: @escaping @Sendable () -> Void = {}) {
        self.server = server
        self.onListening = onListening
    }

    public func run() async throws {
        try await server.start()
        onListening()
        try? await gracefulShutdown()
        await server.stop()
    }
}

/// Builds and runs kioskd: config → theme → state → scenes → display → input → scene manager →
/// services (render loop, control server), with SIGTERM/SIGINT for a graceful stop and SIGHUP
/// for a config reload.
public enum DaemonRunner {
    /// The state store for `config`: files in the state directory, or memory for
    /// `state = "volatile"`. A state directory that cannot be used for saving (read-only root,
    /// missing and not creatable) does not stop the daemon: the store reads what is there and
    /// refuses saves with the reason. Another daemon on the directory, or an unsafe directory, is
    /// an error.
    public static func makeState(_ config: DaemonConfig, logger: Logger) throws -> StateStore {
        if config.stateMode == .volatile {
            logger.notice("state = \"volatile\": counter values and scene and theme choices are kept in memory only and lost when kioskd stops")
            return MemoryStateStore(durability: .volatile)
        }
        return try FileStateStore(directory: config.stateDirectory, logger: logger, access: .readWriteOrReadOnly)
    }

    /// Everything up to a ready-to-start `Daemon` (not yet started); `time`: the scenes' clock (a
    /// test's virtual one; default the system's).
    public static func makeDaemon(config: DaemonConfig, state: StateStore, registry: SceneRegistry = .standard,
                                  loop: any KioskLoop, time: TimeSource = SystemTimeSource(), logger: Logger) throws -> Daemon {
        // The settings kept beside the config file, laid over it (DaemonSettings.swift).
        let (config, settings) = layered(config, state: state, registry: registry, logger: logger)
        let made = try Backends.makeDisplays(config, loop: loop, logger: logger)
        let displays = made.outputs
        let input: InputSource?
        do {
            input = try Backends.makeInput(config, rotation: displays[0].rotation, loop: loop, logger: logger)
        } catch {
            for d in displays { d.shutdown() }
            throw error
        }
        do {
            let daemon = try Daemon(config: config, registry: registry, displays: displays, input: input, state: state, loop: loop,
                                    time: time, logger: logger)
            daemon.displayOwner = made.owner
            daemon.settings = settings
            return daemon
        } catch {
            input?.shutdown()
            for d in displays { d.shutdown() }
            throw error
        }
    }

    /// The control server in front of `daemon`: each request runs on the render loop, unless its
    /// deadline passed before the loop got to it (then it is dropped and answered 503). A
    /// counter change enters the daemon's `CounterIntake` from the server's thread instead (the
    /// same deadline rule: `ControlJob.run`).
    public static func makeControlServer(settings: ControlSettings, limits: ControlLimits = ControlLimits(),
                                         daemon: Daemon, logger: Logger) -> ControlServer {
        let intake = daemon.intake
        let daemon = LoopBound(daemon, loop: daemon.loop)
        return ControlServer(settings: settings, limits: limits, logger: logger) { job in
            if case .counter(let name, let op, let value) = job.command, let edit = op.edit(value) {
                job.run { _, reply in intake.submit(name, edit, answerOn: .decided, reply: reply) }
                return
            }
            daemon.post { daemon in job.run { command, reply in daemon.handle(command, reply: reply) } }
        }
    }

    /// Runs Swift concurrency's jobs (the service group, the control server's start and stop) on
    /// one SwiftNIO loop thread instead of libdispatch's worker pool. On Linux libdispatch starts
    /// a timer on its manager thread as soon as its first pool worker starts, and never stops it:
    /// every second it reads /proc to count runnable workers, so an idle daemon would wake twice
    /// a second (that timer and the clock's tick). A loop thread sleeps until it has work.
    /// Call first, on the main thread, before anything runs asynchronously; false when the
    /// runtime does not allow it (then the daemon runs as before, with the extra wake-up).
    ///
    /// SwiftNIO finds the runtime's hook with `dlsym`, which fails in the release kioskd: it links
    /// the Swift runtime statically, and the runtime's symbols are then not exported. The hook is
    /// then set here through a C reference resolved at link time, to the same effect.
    @discardableResult
    public static func runConcurrencyOnLoopThread() -> Bool {
        NIOSingletons.groupLoopCountSuggestion = 1
        if NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor() { return true }
        return kiosk_install_swift_enqueue_global_hook(unsafeBitCast(enqueueOnLoopThread, to: UnsafeMutableRawPointer.self))
    }

    /// Loads fontconfig's configuration on the calling thread (`FontSetup`): kioskd's main
    /// thread calls it while the daemon starts on the others, so the first frame does not wait for it.
    public static func prepareFonts() { FontSetup.prepare() }

    /// True when Swift concurrency's jobs run on the SwiftNIO loop thread (the hook is set).
    public static var concurrencyRunsOnLoopThread: Bool { kiosk_swift_enqueue_global_hook() != nil }

    /// The runtime's global-enqueue hook: `(job, the runtime's own enqueue)`, both thin function
    /// pointers. Every job goes to the singleton SwiftNIO group (one loop thread).
    private static let enqueueOnLoopThread: @convention(thin) (UnownedJob, @convention(thin) (UnownedJob) -> Void) -> Void = { job, _ in
        MultiThreadedEventLoopGroup.singleton.any().enqueue(ExecutorJob(job))
    }

    /// Runs until SIGTERM/SIGINT; stops in reverse order within `stopSeconds`.
    public static func run(config: DaemonConfig, registry: SceneRegistry = .standard, logger: Logger,
                           stopSeconds: Int = 5) async throws {
        ResourceLimits.raiseOpenFileLimit(logger: logger)
        if !concurrencyRunsOnLoopThread {
            logger.notice("Swift concurrency runs on libdispatch's worker pool: the idle daemon wakes once more each second")
        }
        let loop = try EventLoop()
        let state = try makeState(config, logger: logger)
        let daemon = try makeDaemon(config: config, state: state, registry: registry, loop: loop, logger: logger)
        let notifier = SystemdNotifier(logger: logger)
        // READY=1 once the first frame is on screen (or no display is connected) and the control
        // socket listens, whichever comes last.
        let ready = ReadyGate(waitingFor: [.frame, .control]) { notifier.ready() }
        daemon.onReady = { ready.done(.frame) }
        daemon.onStatus = { notifier.status($0) }

        // The daemon's config: the settings layer over the file (`[homeassistant] name`).
        if let mqtt = daemon.config.mqtt { daemon.add(try MQTTBridge(config: mqtt, logger: logger)) }
        try daemon.checkFleet()

        // SIGHUP, SIGUSR1, SIGUSR2 (SIGTERM and SIGINT stop the group below).
        let handoff = DisplayHandoff(displays: LoopBound(daemon.heads.map(\.display), loop: loop), logger: logger)
        let signals = DaemonSignals(daemon: LoopBound(daemon, loop: loop), handoff: handoff, notifier: notifier, logger: logger)
        defer {
            signals.cancel()
            handoff.restore()
        }
        let web = try config.web.map { try WebService.make(settings: $0, daemon: daemon, logger: logger) }

        // Everything above touched the daemon on this thread; from here it belongs to the render
        // thread, which starts now: the first frame is drawn while the control server and the
        // service group start here (both on the way to READY=1).
        let render = RenderLoopService(daemon: daemon, notifier: notifier, logger: logger)
        try render.start()
        let server = makeControlServer(settings: config.control, daemon: daemon, logger: logger)

        // Each service is named here: without a name ServiceLifecycle describes the service
        // with "\(service)", a reflection of its stored properties at every start (~0.5 ms).
        var groupConfig = ServiceGroupConfiguration(
            services: [
                .init(service: render, serviceName: "render loop"),
                // A control server that cannot start stops the render loop gracefully (console restored).
                .init(service: ControlServerService(server: server, onListening: { ready.done(.control) }),
                      failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "control server"),
            ] + (web.map { web in
                // Stopped first (listed last): live streams end before the control server and the render loop stop.
                [.init(service: web, failureTerminationBehavior: .gracefullyShutdownGroup, serviceName: "web page")]
            } ?? []),
            gracefulShutdownSignals: DaemonSignals.gracefulStop,
            logger: logger)
        groupConfig.maximumGracefulShutdownDuration = .seconds(stopSeconds)
        let group = ServiceGroup(configuration: groupConfig)
        try await group.run()
    }

    /// Renders the configured scene on the headless backend and writes what the viewer sees as
    /// PNG: the first frame, or the frame `afterSeconds` later. With several outputs the first
    /// goes to `path` and each other one beside it (`snapshotPath(path, output:)`).
    public static func snapshot(config: DaemonConfig, to path: String, afterSeconds: Double,
                                strokes: [[Point]] = [],
                                registry: SceneRegistry = .standard, logger: Logger) throws {
        var c = config
        c.display.backend = .headless
        let loop = try EventLoop()
        // Read only and without the lock: a snapshot may be taken beside the running daemon.
        // What the snapshot changes (a scripted tap on a counter) is kept in memory, never saved.
        let state: StateStore = c.stateMode == .volatile ? MemoryStateStore(durability: .volatile)
            : SnapshotStateStore(over: try FileStateStore(directory: c.stateDirectory, logger: logger, access: .readOnly))
        let daemon = try makeDaemon(config: c, state: state, registry: registry, loop: loop, logger: logger)
        var failure: Error?
        var done = false
        daemon.start()
        daemon.startPipeline()
        daemon.corner.set(.state, nil) // the snapshot reads the state; it never saves
        if !strokes.isEmpty {
            // Fingers drawn before the frame is taken (demos and screenshots of the paint scene).
            let t0 = UInt64(nowNanos(.monotonic) / 1000)
            for e in TouchScript.strokes(strokes, startUsec: t0, stepUsec: 8_000) { daemon.manager.input(e) }
        }
        let finish = {
            do {
                for (i, h) in daemon.heads.enumerated() {
                    try h.manager.screenshot(to: i == 0 ? path : snapshotPath(path, output: h.name))
                }
            } catch { failure = error }
            done = true
        }
        let takeFrame = LoopBound({
            if afterSeconds > 0 {
                do { try loop.schedule(after: Int64(afterSeconds * 1e9)) { _ in finish() } } catch { failure = error; done = true }
            } else {
                loop.deferToEndOfIteration { finish() }
            }
        }, loop: loop)
        // A tap on a counter went into the pipeline (kept in memory): the frame is taken once
        // its value is shown. The pipeline answers in order, so this empty group's answer comes
        // after the taps' values reached the loop.
        daemon.pipeline.submitWrites([]) { _ in takeFrame.value() }
        let deadline = nowNanos(.monotonic) + Int64((afterSeconds + 10) * 1e9)
        while !done {
            try loop.runOnce(timeoutMs: 100)
            if nowNanos(.monotonic) > deadline { throw KioskError.display("no frame was drawn within \(afterSeconds + 10) s") }
        }
        daemon.shutdown()
        if let failure { throw failure }
        guard daemon.manager.frameCount > 0 else { throw KioskError.display("the scene drew no frame") }
    }

    /// Where a snapshot of output `output` (not the first) is written beside `path`:
    /// `shot.png` → `shot-DSI-1.png` (characters outside `A–Z a–z 0–9 . _ -` become `_`).
    public static func snapshotPath(_ path: String, output: String) -> String {
        let safe = String(output.map { c in c.isASCII && (c.isLetter || c.isNumber || "._-".contains(c)) ? c : "_" })
        if path.hasSuffix(".png") { return String(path.dropLast(4)) + "-\(safe).png" }
        return path + "-\(safe)"
    }
}
