import KioskControl
import KioskCore
import KioskMQTT
import KioskScenes

extension Daemon {
    /// Joins the `[fleet]` group over `transport` (call on the loop, after `start()`): shared
    /// counters' changes from touch, keys and every control transport become fleet commands,
    /// values from the primary are shown, and "offline" is marked on screen while the broker is
    /// out of reach. Throws a config error for a shared counter no scene has.
    public func startFleet(transport: FleetTransport, kioskID: String) throws {
        loop.assertInLoop()
        guard let settings = config.fleet, fleet == nil else { return }
        let manager = self.manager
        let engine = try FleetEngine(settings: settings, kioskID: kioskID, transport: transport, scheduler: loop, state: state,
                                     counters: scenes(as: CounterControl.self), now: { manager.time.now() }, logger: logger)
        fleet = engine
        if pipeline != nil {
            // A stage of the command pipeline: the counter's value and the record are committed
            // on its thread with the other changes of the batch; the engine hears back on the loop.
            engine.commit = { [weak self] writes, done in
                if self?.commitThroughPipeline(writes, done: done) != true { done(KioskError.state("kioskd is stopping")) }
            }
        }
        engine.onChange = { [weak self] in
            self?.scenesDidChange()
            self?.changes.noteChange()
        }
        engine.onConnectivity = { [weak self] up in self?.showFleetConnectivity(up) }
        engine.onConflict = { [weak self, weak transport] in
            self?.showFleetConnectivity(transport?.isConnected ?? false)
            self?.changes.noteChange()
        }
        for scene in heads.flatMap(\.manager.scenes) {
            guard let scene = scene as? CounterScene else { continue }
            // The fleet takes its shared counters; the others go where they went before (the pipeline).
            let earlier = scene.changeRouter
            scene.changeRouter = { [weak engine] counter, action in (engine?.route(counter, action) ?? false) || (earlier?(counter, action) ?? false) }
        }
        let earlier = asyncRoute
        asyncRoute = { [weak self, weak engine] command, reply in
            if let engine, case .counter(let name, let op, let value) = command, op != .get, engine.isShared(name) {
                let fleetOp: FleetCommand.Op
                switch op {
                case .set: fleetOp = .set
                case .inc: fleetOp = .inc
                case .dec: fleetOp = .dec
                case .reset, .get: fleetOp = .reset
                }
                // After this iteration: the command may come from inside an MQTT client's read,
                // where the primary's publish must not happen.
                self?.loop.deferToEndOfIteration {
                    engine.submit(name, op: fleetOp, value: value) { answer in
                        reply(answer)
                        self?.changes.noteChange()
                    }
                }
                return true
            }
            return earlier?(command, reply) ?? false
        }
        engine.start()
        updatePipelineDirectory()
        showFleetConnectivity(transport.isConnected)
    }

    /// The fleet's and the MQTT client's problems, for the status (`warnings`).
    public func warnings() -> [String] {
        var list: [String] = []
        if let f = fleet, !f.otherPrimaries.isEmpty {
            list.append("two primaries in fleet group '\(f.settings.group)': \(f.otherPrimaries.joined(separator: ", ")) and \(f.kioskID); shared changes are refused")
        }
        if let m = mqtt, let d = m.clientView.snapshot.duplicateIDWarning { list.append(d) }
        return list
    }

    /// Fails (config error naming `fleet.counters`) when a listed shared counter is in no scene.
    public func checkFleet() throws {
        if let fleet = config.fleet { _ = try FleetEngine.sharedOwners(fleet, counters: scenes(as: CounterControl.self)) }
    }

    /// Joins the `[fleet]` group over the MQTT bridge's client, when both are configured (on the
    /// render loop, after the bridge started: the fleet stays on the render loop, its messages
    /// go to and come from the MQTT thread as posts).
    public func startFleetOverMQTT() {
        guard config.fleet != nil, let bridge = mqtt else { return }
        do {
            let transport = MQTTFleetTransport(bridge: bridge, loop: loop)
            bridge.onStateChange.append { [weak transport] state in transport?.stateChanged(state) }
            try startFleet(transport: transport, kioskID: bridge.config.id)
        } catch {
            logger.critical("cannot join the fleet", metadata: ["error": "\(error)"])
        }
    }

    /// The corner mark: "offline" while the broker is out of reach, "two primaries" while another
    /// primary of the group is seen (`FleetEngine.otherPrimaries`), after "state not saved".
    func showFleetConnectivity(_ up: Bool) {
        var marks: [String] = []
        if case .unavailable = state.durability { marks.append("state not saved") }
        if !up { marks.append("offline") }
        if let others = fleet?.otherPrimaries, !others.isEmpty { marks.append("two primaries") }
        for h in heads { h.manager.stateWarning = marks.isEmpty ? nil : marks.joined(separator: " · ") }
    }
}
