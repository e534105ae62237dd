import KioskControl
import KioskCore
import KioskFleet
import KioskMQTT
import KioskScenes

extension Daemon {
    /// Joins the `[fleet]` group over `transport` (call on the loop, after `start()` and
    /// `startPipeline`): the fleet becomes the intake's first stage, claiming the shared
    /// counters by name, so that their changes from touch, keys and every transport become
    /// fleet commands — also on the scenes a reload makes; values from the primary are shown
    /// on the scenes holding the name then, and "offline" is marked on screen while the broker
    /// is out of reach. Throws a config error for a shared counter no scene has.
    public func startFleet(transport: FleetTransport, kioskID: String) throws {
        loop.assertInLoop()
        guard let settings = config.fleet, fleet == nil else { return }
        let manager = self.manager
        let engine = try FleetEngine(settings: settings, kioskID: kioskID, transport: transport, scheduler: loop, state: state,
                                     names: counterNames, counter: { [weak self] name in self?.fleetCounter(name) },
                                     // Shown as the pipeline's values are, on the scenes holding the name then.
                                     shown: { [weak self] v in
                                         self?.show([ShownValue(scene: nil, counter: v.counter, value: v.value, up: v.up)], now: v.at)
                                     },
                                     // A stage of the command pipeline: the counter's value and the
                                     // record are committed on its thread with the other changes of
                                     // the batch; the engine hears back on the loop.
                                     commit: { [weak self] writes, done in
                                         guard let self else { return done(KioskError.state("kioskd is stopping")) }
                                         self.commitThroughPipeline(writes, done: done)
                                     },
                                     now: { manager.time.now() }, logger: logger)
        fleet = engine
        engine.onChange = { [weak self] in
            self?.scenesDidChange()
            self?.changes.noteChange()
        }
        engine.onConnectivity = { [weak self] up in self?.showFleetConnectivity(up) }
        engine.onConflict = { [weak self, weak transport] in
            self?.showFleetConnectivity(transport?.isConnected ?? false)
            self?.changes.noteChange()
        }
        intake.claimForFleet(Set(engine.sharedCounters), group: settings.group)
        intake.joinFleet(engine)
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
        if let fleet = config.fleet { _ = try FleetEngine.sharedNames(fleet, names: counterNames) }
    }

    /// Every counter name the scenes hold now.
    var counterNames: [String] { scenes(as: CounterControl.self).flatMap(\.counterNames) }

    /// A counter as the scenes holding its name have it now (for the fleet, which holds no
    /// scene): the first one's rules and value, and every one's state key.
    func fleetCounter(_ name: String) -> FleetCounter? {
        let holders = scenes(as: CounterControl.self).filter { $0.counterNames.contains(name) }
        guard let first = holders.first, let rules = try? first.rules(of: name), let value = try? first.value(of: name) else { return nil }
        return FleetCounter(rules: rules, value: value, keys: holders.map { $0.stateKey(name) })
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

    /// The corner marks: "offline" while the broker is out of reach, "two primaries" while another
    /// primary of the group is seen (`FleetEngine.otherPrimaries`), after "state not saved" (`corner`).
    func showFleetConnectivity(_ up: Bool) {
        if case .unavailable = state.durability { corner.set(.state, "state not saved") }
        corner.set(.fleetOffline, up ? nil : "offline")
        corner.set(.fleetPrimaries, fleet?.otherPrimaries.isEmpty == false ? "two primaries" : nil)
    }
}
