import FoundationEssentials
import KioskComponent
import KioskConfig
import KioskControl
import KioskCore
import KioskMQTT
import KioskPosix
import KioskScenes
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The kiosk on an MQTT broker: publishes its state (scene, theme, counters, panel, status) as
/// retained topics under `kioskd/ID/`, carries out the commands sent to `…/set` (and a counter's
/// `inc`, `dec`, `reset`) like every other transport, and announces itself to Home Assistant
/// (device-based discovery).
///
/// Two threads. The MQTT client runs on a loop and a thread of its own (`kioskd-mqtt`, from
/// `start` to `stop`): the render loop never touches the broker's socket. A counter change
/// received goes from there straight into the command pipeline (as the control socket's do) and
/// a refusal is published on `kioskd/ID/error` from there too; other commands (scene, theme,
/// blank, counters the pipeline does not own) are posted to the render loop and carried out by
/// the context's `handle` (the daemon's, as every transport's), their refusals posted back. The
/// state to publish is read on the render loop from the context's change feed (it reads the
/// daemon's objects) and posted to the MQTT thread as values; that thread builds the payloads
/// (the Home Assistant discovery's and the status's JSON) and publishes what differs from what
/// was last published on this connection. On every connect, and when Home Assistant says `online` on `PREFIX/status`,
/// discovery and every state are published again.
///
/// Commands received but not yet committed are held in kioskd's memory (libmosquitto sends the
/// PUBACK on receipt): at most `maxCommandsInPipeline`; beyond that, reading from the broker
/// pauses until half of them are committed (the broker holds the rest, within its own limits).
public final class MQTTBridge: DaemonComponent {
    public let config: MQTTConfig
    public let topics: KioskTopics
    /// The MQTT client's loop, run by the thread `kioskd-mqtt` from `start` until `stop`
    /// (concrete: this bridge runs and stops it).
    public let mqttLoop: EventLoop
    /// The client's state, counters and queue, readable from any thread.
    public let clientView: MQTTClient.View
    /// Called on the render loop after every connect, once this bridge has handed its state over
    /// for publishing.
    public var onConnected: [() -> Void] = []
    /// Called on the render loop after every change of the client's state.
    public var onStateChange: [(MQTTClient.State) -> Void] = []
    /// Seconds between status publications (besides the one after a change of scene, theme or panel).
    public var statusInterval: Double = 30
    /// Counter commands received over MQTT and not yet committed (and answered) by the pipeline
    /// before reading from the broker pauses.
    public static let maxCommandsInPipeline = MQTTSession.maxWaitingCommands

    /// Figures shared by the two threads.
    final class Shared: Sendable {
        /// Publications handed to the MQTT thread and not yet handled there, plus messages
        /// published and not yet acknowledged by the broker.
        let unacknowledged = Atomic<Int>(0)
        /// Counter commands handed to the pipeline and not yet decided.
        let inPipeline = Atomic<Int>(0)
        /// The most commands that were in the pipeline at once.
        let inPipelinePeak = Atomic<Int>(0)
        /// A resume of reading is posted to the MQTT thread (once per pause).
        let resumePosted = Atomic<Bool>(false)
    }

    /// The client's state now (from any thread).
    public var clientState: MQTTClient.State { clientView.snapshot.state }
    /// Messages published by the bridge that the broker has not acknowledged yet (QoS 1),
    /// counting those still on their way to the MQTT thread.
    public var unacknowledged: Int { shared.unacknowledged.load(ordering: .relaxed) }
    /// Counter commands received over MQTT that the pipeline has not decided yet.
    public var commandsInPipeline: Int { shared.inPipeline.load(ordering: .relaxed) }
    /// The most commands received over MQTT that waited for the pipeline at once.
    public var commandsInPipelinePeak: Int { shared.inPipelinePeak.load(ordering: .relaxed) }

    public var componentName: String { "mqtt" }
    /// What the bridge sees of the daemon (from `start`).
    private var context: ComponentContext?
    private let logger: Logger
    private let shared = Shared()
    /// The client until `start` hands it to the MQTT thread's side.
    private var client: MQTTClient?
    private var link: WeakLoopBound<Link>?
    private var started = false
    private var threadRunning = false
    private var stopWaiters: [() -> Void] = []
    private var observer: Int?
    private var statusTimer: TimerID?
    private var skippedCounters: Set<String> = []
    private var lastStatusKey: String?
    /// Whether the clock was synchronised at the last change (the status's key).
    private var lastTimeSynced = true
    /// The device's name in Home Assistant's discovery (`config.deviceName` until `rename`).
    public private(set) var deviceName: String?

    /// Makes the client and its loop (nothing runs or is sent before `start`).
    public init(config: MQTTConfig, logger: Logger) throws {
        self.config = config
        self.logger = logger
        self.topics = KioskTopics(id: config.id)
        deviceName = config.deviceName
        mqttLoop = try EventLoop()
        let client = try MQTTClient(config: config, loop: mqttLoop, logger: logger)
        clientView = client.view
        self.client = client
    }

    deinit {
        // Not stopped (tests): the thread stops its client (offline, DISCONNECT) and ends.
        if threadRunning, let link = self.link {
            let mqttLoop = self.mqttLoop
            mqttLoop.post { Link.shutDown(link, mqttLoop) }
        }
    }

    /// Adds a handler called after every connect (see `onConnected`).
    public func addConnectHandler(_ handler: @escaping () -> Void) { onConnected.append(handler) }

    /// Starts the MQTT thread: it subscribes to the command topics and Home Assistant's status,
    /// and connects. On the render loop, after `Daemon.startPipeline` (counter commands then go
    /// to the pipeline without the render loop).
    public func start(context: ComponentContext) {
        let loop = context.loop
        loop.assertInLoop()
        guard !started, let client else { return }
        started = true
        self.context = context
        self.client = nil
        let l = Link(client: client, loop: mqttLoop, topics: topics, logger: logger, shared: shared, renderLoop: loop,
                     handle: LoopBound(context.handle, loop: loop), submit: context.submit, outputs: context.outputs)
        l.setUp(bridge: WeakLoopBound(self, loop: loop))
        let owned = LoopBound(l, loop: mqttLoop)
        link = WeakLoopBound(l, loop: mqttLoop)
        observer = context.changes.observe { [weak self] state in self?.changed(state) }
        scheduleStatus()
        threadRunning = true
        let mqttLoop = self.mqttLoop, renderLoop = loop
        let me = WeakLoopBound(self, loop: loop)
        do {
            try NamedThread.detach(name: "kioskd-mqtt") {
                mqttLoop.post { owned.value.start() }
                do {
                    try mqttLoop.run()
                } catch {
                    owned.value.logger.critical("the MQTT loop failed", metadata: ["error": "\(error)"])
                }
                renderLoop.post { me.value?.threadEnded() }
            }
        } catch {
            threadRunning = false
            logger.critical("MQTT: cannot start its thread; no broker is reached", metadata: ["error": "\(error)"])
        }
    }

    /// Publishes `offline`, disconnects, ends the MQTT thread, then calls `completion` (on the
    /// render loop): once the thread has ended, or after `timeout` seconds at the latest (a broker
    /// that does not answer never holds up a stop).
    public func stop(timeout: Double = 2, completion: @escaping () -> Void) {
        guard let context, let link else { completion(); return }
        let loop = context.loop
        loop.assertInLoop()
        if let o = observer { context.changes.remove(o); observer = nil }
        if let t = statusTimer { loop.cancel(t); statusTimer = nil }
        guard threadRunning else { completion(); return }
        var done = false
        var guardTimer: TimerID?
        let logger = self.logger
        let finish = {
            guard !done else { return }
            done = true
            if let t = guardTimer { loop.cancel(t) }
            completion()
        }
        guardTimer = try? loop.schedule(after: Int64(timeout * 1e9)) { _ in
            guardTimer = nil
            if !done { logger.warning("MQTT: the broker did not take the disconnect within \(timeout) s; stopping anyway") }
            finish()
        }
        stopWaiters.append(finish)
        let mqttLoop = self.mqttLoop
        mqttLoop.post { Link.shutDown(link, mqttLoop, within: timeout) }
    }

    public func stop(then done: @escaping () -> Void) { stop(timeout: 2, completion: done) }

    private func threadEnded() {
        threadRunning = false
        let waiters = stopWaiters
        stopWaiters.removeAll()
        for w in waiters { w() }
    }

    /// Runs `body` with the MQTT thread's side of the bridge, on the MQTT thread.
    func onMQTTThread(_ body: @escaping @Sendable (Link) -> Void) {
        guard let link else { return }
        mqttLoop.post { if let l = link.value { body(l) } }
    }

    // MARK: - Publishing (read on the render loop, built and published on the MQTT thread)

    /// On the render loop, posted by the MQTT thread after every change of the client's state.
    func clientStateChanged(_ state: MQTTClient.State) {
        if state == .connected {
            publishAll()
            for h in onConnected { h() }
        }
        for h in onStateChange { h(state) }
    }

    /// Discovery, every state and the status, as if nothing had been published yet.
    func publishAll() {
        guard let context, let state = context.kioskState() else { return }
        lastStatusKey = nil // the status goes out with the states
        changed(state, fresh: true)
    }

    private func changed(_ state: KioskState, fresh: Bool = false) {
        guard clientState == .connected, let context else { return }
        var counters: [KioskState.Counter] = []
        for c in state.counters where !counters.contains(where: { $0.name == c.name }) {
            if let problem = KioskTopics.counterNameProblem(c.name) {
                if skippedCounters.insert(c.name).inserted {
                    logger.warning("MQTT: counter \"\(c.name)\" \(problem); it is not published")
                }
                continue
            }
            counters.append(c)
        }
        var published = state
        published.counters = counters
        lastTimeSynced = state.timeSynced
        var p = Publication(fresh: fresh, state: published, themeDirectory: fresh ? context.themeDirectory() : nil, deviceName: deviceName)
        // The status names the scene, theme and panel's output: published again when they change.
        let key = statusKey(scene: state.scene, theme: state.theme, blanked: state.blanked, output: context.displayDescription(),
                            synced: state.timeSynced, warnings: context.warnings())
        if key != lastStatusKey { p.status = statusAnswer() }
        hand(p)
    }

    private func statusKey(scene: String, theme: String, blanked: Bool, output: String, synced: Bool, warnings: [String]) -> String {
        "\(scene)|\(theme)|\(blanked)|\(output)|\(synced)|\(warnings)"
    }

    /// The state to publish, as values for the MQTT thread (which builds the payloads).
    struct Publication: Sendable {
        /// Forget what was published on this connection (a connect, Home Assistant came online).
        var fresh = false
        /// The scene, theme, panel and counters (those with a name a topic can carry); nil: the status only.
        var state: KioskState?
        /// Read the theme files' names again from this folder (on the MQTT thread).
        var themeDirectory: String?
        /// The device's name in the discovery (with `state`).
        var deviceName: String?
        var status: StatusAnswer?
    }

    /// On the render loop, after a reload changed `[homeassistant] name`: the discovery is
    /// published again (retained) with the new device name, on the same connection (not
    /// dropped); unique ids, entity ids and topics do not change. Not connected: it goes out
    /// with everything else at the next connect.
    public func rename(_ name: String?) {
        guard name != deviceName else { return }
        deviceName = name
        logger.notice("MQTT: Home Assistant's name for this kiosk is now \"\(name ?? "kioskd \(config.id)")\"; publishing the discovery again")
        guard let state = context?.kioskState() else { return }
        changed(state)
    }

    private func hand(_ p: Publication) {
        shared.unacknowledged.add(1, ordering: .relaxed)
        onMQTTThread { $0.publish(p) }
    }

    /// The status to publish now (`kioskd/ID/status`, built by `Link.statusJSON`).
    private func statusAnswer() -> StatusAnswer? {
        guard let s = context?.status() else { return nil }
        lastStatusKey = statusKey(scene: s.scene, theme: s.theme, blanked: s.blanked, output: s.output, synced: lastTimeSynced, warnings: s.warnings ?? [])
        return s
    }

    private func scheduleStatus() {
        statusTimer = try? context?.loop.schedule(after: Int64(statusInterval * 1e9)) { [weak self] _ in
            guard let self else { return }
            if self.clientState == .connected, let status = self.statusAnswer() {
                var p = Publication()
                p.status = status
                self.hand(p)
            }
            self.scheduleStatus()
        }
    }
}
