import KioskComponent
import KioskControl
import KioskCore
import KioskFleet
import KioskMQTT
import KioskScenes

extension Daemon {
    /// Joins the `[fleet]` group over `transport` (call on the loop, after `start()` and
    /// `startPipeline`): a `FleetComponent`, started at once and stopped with the others.
    /// Throws a config error for a shared counter no scene has.
    public func startFleet(transport: FleetTransport, kioskID: String) throws {
        loop.assertInLoop()
        guard let settings = config.fleet, fleet == nil else { return }
        let component = FleetComponent(settings: settings, kioskID: kioskID, transport: transport)
        try component.start(context: componentContext())
        components.append(component)
        if let engine = component.engine { joinFleetSettings(engine) }
    }

    /// The fleet's and the MQTT client's problems, for the status (`warnings`).
    public func warnings() -> [String] {
        var list: [String] = []
        if let f = fleet, !f.otherPrimaries.isEmpty {
            list.append("two primaries in fleet group '\(f.settings.group)': \(f.otherPrimaries.joined(separator: ", ")) and \(f.kioskID); shared changes are refused")
        }
        if let f = fleet { list += f.clockWarnings }
        list += settingsWarnings
        if let m = mqtt, let d = m.clientView.snapshot.duplicateIDWarning { list.append(d) }
        return list
    }

    /// Fails (config error naming `fleet.counters`) when a listed shared counter is in no scene.
    public func checkFleet() throws {
        if let fleet = config.fleet { _ = try FleetEngine.sharedNames(fleet, names: counterNames) }
    }

    /// Every counter name the scenes hold now.
    var counterNames: [String] { scenes(as: CounterControl.self).flatMap(\.counterNames) }

    /// The counters as a component deciding some of them sees them (`ComponentContext.sharedCounters`):
    /// found by name in the scenes when used (the fleet holds no scene), shown and committed as
    /// the pipeline's are, claimed from the intake.
    func sharedCounters() -> SharedCounters {
        let time = manager.time
        var counters = SharedCounters(
            state: state, now: { time.now() },
            names: { [weak self] in self?.counterNames ?? [] },
            counter: { [weak self] name in self?.sharedCounter(name) },
            show: { [weak self] counter, value, up, at in
                self?.show([ShownValue(scene: nil, counter: counter, value: value, up: up)], now: at)
            },
            commit: { [weak self] writes, done in
                guard let self else { return done(KioskError.state("kioskd is stopping")) }
                self.commitThroughPipeline(writes, done: done)
            },
            claim: { [weak self] names, group, stage in
                guard let self else { return }
                intake.claimForFleet(names, group: group)
                intake.joinFleet(stage)
                updatePipelineDirectory()
            },
            changed: { [weak self] in
                self?.scenesDidChange()
                self?.changes.noteChange()
            })
        counters.clocks = sharedClocks()
        return counters
    }

    /// A counter as the scenes holding its name have it now: the first one's rules and value,
    /// and every one's state key.
    func sharedCounter(_ name: String) -> SharedCounter? {
        let holders = scenes(as: CounterControl.self).filter { $0.counterNames.contains(name) }
        guard let first = holders.first, let rules = try? first.rules(of: name), let value = try? first.value(of: name) else { return nil }
        return SharedCounter(rules: rules, value: value, keys: holders.map { $0.stateKey(name) })
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
}
