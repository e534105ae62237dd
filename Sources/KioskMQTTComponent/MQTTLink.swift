import Foundation
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
        let daemon: WeakLoopBound<Daemon>
        /// The outputs' names when there are several (their commands' topics); empty with one.
        let outputs: [String]
        private var bridge: WeakLoopBound<MQTTBridge>?
        /// Where counter commands go, from this thread (the daemon's one entrance).
        private let intake: CounterIntake
        /// Retained payloads published on this connection, by topic.
        private var published: [String: [UInt8]] = [:]
        private var loggedRetainedCommand = false
        private var shuttingDown = false

        init(client: MQTTClient, loop: any KioskLoop, topics: KioskTopics, logger: Logger, shared: Shared,
             renderLoop: any KioskLoop, daemon: WeakLoopBound<Daemon>, intake: CounterIntake, outputs: [String]) {
            self.client = client
            self.loop = loop
            self.topics = topics
            self.logger = logger
            self.shared = shared
            self.renderLoop = renderLoop
            self.daemon = daemon
            self.intake = intake
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
            for (topic, payload) in p.retained where published[topic] != payload {
                published[topic] = payload
                send(topic, payload, retain: true)
            }
            if let s = p.status {
                published[topics.status] = s
                send(topics.status, s, retain: true)
            }
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
            switch MQTTBridge.command(levels: levels, payload: m.text, outputs: outputs) {
            case .failure(let e):
                publishError(e.message)
            case .success(.none):
                return // a state topic of ours, not a command
            case .success(.some(let command)):
                if case .counter(let name, let op, let value) = command, let edit = op.edit(value) {
                    switch MQTTBridge.changeID(m.payload, topic: "counter/\(name)/\(op.rawValue)") {
                    case .failure(let e): publishError(e.message)
                    case .success(let id): toIntake(intake, name, edit, id: id)
                    }
                    return
                }
                // Everything else is carried out on the render loop, its refusal published from here.
                let me = WeakLoopBound(self, loop: loop), mqttLoop = loop
                let daemon = self.daemon
                renderLoop.post {
                    daemon.value?.handle(command) { response in
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
        private func toIntake(_ intake: CounterIntake, _ name: String, _ edit: CounterEdit, id: String?) {
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
            intake.submit(name, edit, id: id, answerOn: .decided) { answer in
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
