import KioskComponent
import KioskControl
import KioskCore

extension Daemon {
    /// Adds a feature to start after the command pipeline (`startComponents`), in this order;
    /// started at once when the components run already.
    public func add(_ component: any DaemonComponent) {
        components.append(component)
        if componentsRunning { start([component]) }
    }

    /// The MQTT bridge (`[mqtt]` configured); nil: MQTT is off.
    public var mqtt: MQTTBridge? { components.lazy.compactMap { $0 as? MQTTBridge }.first }

    /// Starts the components in the order added (on the loop, after `startPipeline`: a counter
    /// change they take goes to the pipeline at once); one that cannot start is logged and left
    /// out. Then joins the fleet over MQTT (`startFleetOverMQTT`). Once.
    public func startComponents() {
        guard !componentsRunning else { return }
        componentsRunning = true
        start(components)
        startFleetOverMQTT()
    }

    private func start(_ list: [any DaemonComponent]) {
        let context = componentContext()
        for c in list {
            do {
                try c.start(context: context)
            } catch {
                logger.critical("cannot start \(c.componentName)", metadata: ["error": "\(error)"])
                components.removeAll { $0 === c }
            }
        }
    }

    /// Stops the components in reverse order, each after the one added after it stopped, then
    /// calls `done` (on the loop).
    public func stopComponents(then done: @escaping () -> Void) {
        func stop(_ rest: ArraySlice<any DaemonComponent>) {
            guard let last = rest.last else { return done() }
            last.stop { stop(rest.dropLast()) }
        }
        stop(components[...])
    }

    /// What a component sees of this daemon: every closure holds it weakly.
    func componentContext() -> ComponentContext {
        let intake = self.intake
        return ComponentContext(
            loop: loop, logger: logger,
            submit: { name, edit, id, reply in intake.submit(name, edit, id: id, answerOn: .decided, reply: reply) },
            handle: { [weak self] command, reply in self?.handle(command, reply: reply) },
            changes: changes,
            kioskState: { [weak self] in self?.kioskState() },
            status: { [weak self] in self?.status() },
            warnings: { [weak self] in self?.warnings() ?? [] },
            displayDescription: { [weak self] in self?.display.displayDescription ?? "" },
            outputs: heads.count > 1 ? heads.map(\.name) : [],
            themeDirectory: { [weak self] in self?.config.themeDirectory ?? "" },
            corner: corner, sharedCounters: sharedCounters())
    }
}
