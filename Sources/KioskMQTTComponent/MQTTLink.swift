import FoundationEssentials
import KioskComponent
import KioskControl
import KioskConfig
import KioskCore
import KioskMQTT
import KioskPosix
import KioskScenes
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension MQTTBridge {
    // MARK: - The MQTT thread's side

    /// Owns the client on the MQTT loop: subscriptions, publishing, commands.
    final class Link {
        let client: MQTTClient
        let loop: any KioskLoop
        let topics: KioskTopics
        let logger: Logger
        let shared: Shared
        let renderLoop: any KioskLoop
        /// Every command but a counter change: carried out on the render loop.
        let handle: LoopBound<(ControlCommand, @escaping (ControlResponse) -> Void) -> Void>
        /// The outputs' names when there are several (their commands' topics); empty with one.
        let outputs: [String]
        private var bridge: WeakLoopBound<MQTTBridge>?
        /// Where counter commands go, from this thread (the daemon's one entrance).
        private let submit: @Sendable (String, CounterEdit, String?, @escaping @Sendable (ControlResponse) -> Void) -> Void
        /// Retained payloads published on this connection, by topic.
        private var published: [String: [UInt8]] = [:]
        /// The themes Home Assistant's discovery offers: the theme files, and every theme shown.
        private var themes: [String] = []
        private var loggedRetainedCommand = false
        /// The game clocks as last kept (their topics are computed from these) and the timer
        /// that publishes a running one's time left when its whole second changes.
        private var gameClocks: [KioskState.GameClock] = []
        private var clockTimer: TimerID?
        private var shuttingDown = false

        init(client: MQTTClient, loop: any KioskLoop, topics: KioskTopics, logger: Logger, shared: Shared,
             renderLoop: any KioskLoop, handle: LoopBound<(ControlCommand, @escaping (ControlResponse) -> Void) -> Void>,
             submit: @escaping @Sendable (String, CounterEdit, String?, @escaping @Sendable (ControlResponse) -> Void) -> Void, outputs: [String]) {
            self.client = client
            self.loop = loop
            self.topics = topics
            self.logger = logger
            self.shared = shared
            self.renderLoop = renderLoop
            self.handle = handle
            self.submit = submit
            self.outputs = outputs
        }

        /// Before the thread runs.
        func setUp(bridge: WeakLoopBound<MQTTBridge>) {
            self.bridge = bridge
        }

        /// On the MQTT thread: subscribes and connects.
        func start() {
            let bridge = self.bridge
            client.onStateChange = { [unowned self] state in
                if state == .connected { self.published.removeAll() }
                self.renderLoop.post { bridge?.value?.clientStateChanged(state) }
            }
            client.subscribe(topics.setFilter) { [unowned self] m in self.received(m) }
            client.subscribe(topics.counterFilter) { [unowned self] m in self.received(m) }
            client.subscribe(topics.clockFilter) { [unowned self] m in self.received(m) }
            if !outputs.isEmpty { client.subscribe(topics.outputFilter) { [unowned self] m in self.received(m) } }
            client.subscribe("\(client.config.discoveryPrefix)/status") { [unowned self] m in
                guard m.text == "online", self.client.state == .connected else { return }
                self.logger.info("Home Assistant is online: publishing discovery and state again")
                self.renderLoop.post { bridge?.value?.publishAll() }
            }
            client.start()
        }

        /// Stops the client (`offline`, DISCONNECT), then the loop: at once when done, after
        /// `within` seconds at the latest.
        static func shutDown(_ link: WeakLoopBound<Link>, _ loop: EventLoop, within: Double = 2) {
            guard let l = link.value, !l.shuttingDown else { loop.stop(); return }
            l.shuttingDown = true
            _ = try? loop.schedule(after: Int64(within * 1e9)) { _ in loop.stop() }
            l.client.stop { loop.stop() }
        }

        func publish(_ p: Publication) {
            defer { shared.unacknowledged.subtract(1, ordering: .relaxed) }
            guard client.state == .connected else { return }
            if p.fresh { published.removeAll() }
            if let d = p.themeDirectory { themes = ThemeLoader.available(in: d) }
            if let t = p.state?.theme, !themes.contains(t) { themes = (themes + [t]).sorted() }
            let states = p.state.map { retained($0, themes: themes, name: p.deviceName) } ?? []
            for (topic, payload) in states where published[topic] != payload {
                published[topic] = payload
                send(topic, payload, retain: true)
            }
            if let state = p.state {
                gameClocks = state.gameClocks
                publishClocks()
            }
            if let s = p.status.flatMap(Self.statusJSON) {
                published[topics.status] = s
                send(topics.status, s, retain: true)
            }
        }

        /// Each game clock's topics that changed, now; then a timer for the next whole second a
        /// running clock's time left changes at (at most one publication a second per clock).
        private func publishClocks() {
            if let t = clockTimer { loop.cancel(t); clockTimer = nil }
            guard client.state == .connected, !shuttingDown else { return }
            let now = loop.now(.monotonic)
            for c in gameClocks {
                for (topic, payload) in c.publications(topics, atMonotonicNs: now) where published[topic] != payload {
                    published[topic] = payload
                    send(topic, payload, retain: true)
                }
            }
            guard let next = gameClocks.compactMap({ $0.nextChangeNs(after: now) }).min() else { return }
            clockTimer = try? loop.schedule(at: next, clock: .monotonic) { [weak self] _ in
                self?.clockTimer = nil
                self?.publishClocks()
            }
        }

        /// The retained topics of `state`: Home Assistant's discovery, the scene, theme, panel,
        /// each output's and each counter's.
        private func retained(_ state: KioskState, themes: [String], name: String?) -> [(topic: String, payload: [UInt8])] {
            let config = client.config
            let discovery = HADiscovery(id: config.id, prefix: config.discoveryPrefix, scenes: state.scenes, themes: themes,
                                        counters: state.counters.map { .init(name: $0.name, label: $0.label, minimum: $0.minimum, maximum: $0.maximum) },
                                        outputs: (state.outputs ?? []).map { .init(name: $0.name, scenes: $0.scenes) },
                                        screens: (state.screens ?? []).map(\.name), clocks: state.gameClocks.map(\.scene), name: name)
            var r: [(topic: String, payload: [UInt8])] = [(discovery.topic, discovery.json())]
            r.append((topics.scene, Array(state.scene.utf8)))
            r.append((topics.theme, Array(state.theme.utf8)))
            r.append((topics.blank, Array((state.blanked ? "ON" : "OFF").utf8)))
            for o in state.outputs ?? [] {
                r.append(("\(topics.output(o.name))/scene", Array(o.scene.utf8)))
                r.append(("\(topics.output(o.name))/blank", Array((o.blanked ? "ON" : "OFF").utf8)))
            }
            r += state.showingPublications(topics)
            for c in state.counters { r.append((topics.counter(c.name), Array(String(c.value).utf8))) }
            return r
        }

        /// `kioskd/ID/status`: JSON with fps, frame time p99 (ms), frames, uptime (s), output,
        /// scene, theme and panel.
        static func statusJSON(_ s: StatusAnswer) -> [UInt8]? {
            var object: [String: Any] = [
                "fps": s.fps, "frame_ms_p99": s.frameMs.p99, "frames": s.frames, "uptime_s": s.uptimeSeconds,
                "output": s.output, "scene": s.scene, "theme": s.theme, "blanked": s.blanked,
            ]
            if let g = s.frameGapMs {
                object["frame_gap_ms"] = g.lastMinute
                object["frame_gap_ms_max"] = g.sinceStart
            }
            if let t = s.timeSync { object["time_synced"] = t.synchronized }
            if let w = s.warnings { object["warnings"] = w }
            if let outputs = s.outputs {
                object["screens"] = outputs.map { o in
                    OutputTruth(name: o.name ?? o.description, connected: o.connected ?? true, mode: o.mode, blanked: o.blanked,
                                backlightPercent: o.backlightPercent, cecPower: o.cec?.power, lastFrameShown: o.lastFrameShown,
                                framesShownLastMinute: o.framesShownLastMinute, notShowing: o.notShowing).jsonObject
                }
            }
            return try? JSONValue(any: object)?.bytes()
        }

        private func send(_ topic: String, _ payload: [UInt8], retain: Bool) {
            shared.unacknowledged.add(1, ordering: .relaxed)
            let shared = self.shared
            client.publish(topic, payload, qos: 1, retain: retain) { _ in shared.unacknowledged.subtract(1, ordering: .relaxed) }
        }

        func publishError(_ message: String) {
            logger.notice("MQTT command refused: \(message)")
            send(topics.error, Array(message.utf8), retain: false)
        }

        private func received(_ m: MQTTClient.Message) {
            if m.retained {
                // A retained command would be carried out again at every reconnect.
                if !loggedRetainedCommand {
                    logger.warning("MQTT: ignored a retained command on \(m.topic); publish commands without the retain flag")
                    loggedRetainedCommand = true
                }
                return
            }
            let levels = m.topic.dropFirst(topics.base.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            switch MQTTBridge.command(levels: levels, payload: m.text, outputs: outputs, clocks: gameClocks.map(\.scene)) {
            case .failure(let e):
                publishError(e.message)
            case .success(.none):
                return // a state topic of ours, not a command
            case .success(.some(let command)):
                if case .counter(let name, let op, let value) = command, let edit = op.edit(value) {
                    switch MQTTBridge.changeID(m.payload, topic: "counter/\(name)/\(op.rawValue)") {
                    case .failure(let e): publishError(e.message)
                    case .success(let id): toIntake(name, edit, id: id)
                    }
                    return
                }
                // Everything else is carried out on the render loop, its refusal published from here.
                let me = WeakLoopBound(self, loop: loop), mqttLoop = loop
                let handle = self.handle
                renderLoop.post {
                    handle.value(command) { response in
                        guard response.status >= 400 else { return }
                        let message = response.errorMessage ?? "refused (HTTP \(response.status))"
                        mqttLoop.post { me.value?.publishError(message) }
                    }
                }
            }
        }

        /// A counter change enters the daemon's intake from this thread (a local counter's is
        /// committed by the pipeline without the render loop; a shared one goes to the fleet); a
        /// refusal is published from this thread.
        private func toIntake(_ name: String, _ edit: CounterEdit, id: String?) {
            let n = shared.inPipeline.add(1, ordering: .sequentiallyConsistent).newValue
            if n > shared.inPipelinePeak.load(ordering: .relaxed) { shared.inPipelinePeak.store(n, ordering: .relaxed) }
            // The client pauses reading at the bound (`MQTTSession`).
            let wasPaused = client.readingPaused
            client.commandsWaiting(n)
            if client.readingPaused && !wasPaused {
                // Armed once paused: a completion from now on may post the resume.
                shared.resumePosted.store(false, ordering: .sequentiallyConsistent)
                // Drained before the store was seen: no completion is left to post it.
                client.commandsWaiting(shared.inPipeline.load(ordering: .sequentiallyConsistent))
            }
            let shared = self.shared, mqttLoop = loop
            let me = WeakLoopBound(self, loop: loop)
            submit(name, edit, id) { answer in
                let left = shared.inPipeline.subtract(1, ordering: .sequentiallyConsistent).newValue
                if answer.status >= 400 {
                    let message = answer.errorMessage ?? "counter '\(name)': refused (HTTP \(answer.status))"
                    mqttLoop.post { me.value?.publishError(message) }
                }
                if left <= MQTTSession.resumeWaitingCommands,
                   !shared.resumePosted.exchange(true, ordering: .sequentiallyConsistent) {
                    mqttLoop.post { me.value?.resumeReading() }
                }
            }
        }

        private func resumeReading() {
            client.commandsWaiting(shared.inPipeline.load(ordering: .relaxed))
        }

        // Fleet transport (MQTTFleetTransport), on this thread.
        func fleetPublish(_ topic: String, _ payload: [UInt8], retain: Bool) {
            client.publish(topic, payload, qos: 1, retain: retain)
        }

        func fleetSubscribe(_ filter: String, _ handler: LoopBound<(String, [UInt8], Bool) -> Void>) {
            let renderLoop = self.renderLoop
            client.subscribe(filter, qos: 1) { message in
                let topic = message.topic, payload = message.payload, retained = message.retained
                renderLoop.post { handler.value(topic, payload, retained) }
            }
        }
    }
}

extension KioskState {
    /// The retained `kioskd/ID/output/NAME/showing` topics: "ON" while the screen shows, else "OFF".
    func showingPublications(_ topics: KioskTopics) -> [(topic: String, payload: [UInt8])] {
        (screens ?? []).map { ("\(topics.output($0.name))/showing", Array(($0.showing ? "ON" : "OFF").utf8)) }
    }
}
