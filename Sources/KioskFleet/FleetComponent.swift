import KioskComponent
import KioskCore
import KioskState

/// The `[fleet]` group as a feature of the running daemon: on start it makes the `FleetEngine`
/// over `transport`, claims the shared counters from the intake (their changes from touch, keys
/// and every transport become fleet commands), shows the primary's values on the scenes holding
/// the names, and marks "offline" and "two primaries" in the screen's corner. What it needs of
/// the daemon is the context's `sharedCounters`.
public final class FleetComponent: DaemonComponent {
    public let componentName = "fleet"
    public let settings: FleetSettings
    public let kioskID: String
    let transport: FleetTransport
    /// The engine, once started.
    public private(set) var engine: FleetEngine?
    private var corner: CornerWarnings?

    public init(settings: FleetSettings, kioskID: String, transport: FleetTransport) {
        self.settings = settings
        self.kioskID = kioskID
        self.transport = transport
    }

    /// Throws a config error for a shared counter no scene has, or when the context gives no
    /// `sharedCounters`.
    public func start(context: ComponentContext) throws {
        guard engine == nil else { return }
        guard let counters = context.sharedCounters else {
            throw KioskError.state("the fleet needs the daemon's counters (ComponentContext.sharedCounters)")
        }
        let engine = try FleetEngine(settings: settings, kioskID: kioskID, transport: transport, scheduler: context.loop,
                                     state: counters.state, names: counters.names(), counter: counters.counter,
                                     // Shown as the pipeline's values are, on the scenes holding the name then.
                                     shown: { v in counters.show(v.counter, v.value, v.up, v.at) },
                                     // A stage of the command pipeline: committed on its thread with
                                     // the other changes of the batch; the engine hears back on the loop.
                                     commit: counters.commit, now: counters.now, logger: context.logger)
        engine.clocks = counters.clocks
        self.engine = engine
        corner = context.corner
        engine.onChange = counters.changed
        engine.onConnectivity = { [weak self] up in self?.showConnectivity(up, state: counters.state) }
        engine.onConflict = { [weak self] in
            guard let self else { return }
            showConnectivity(transport.isConnected, state: counters.state)
            context.changes.noteChange()
        }
        counters.claim(Set(engine.sharedCounters), settings.group, engine)
        engine.start()
        showConnectivity(transport.isConnected, state: counters.state)
    }

    public func stop(then done: @escaping () -> Void) {
        engine?.stop()
        done()
    }

    /// The corner marks: "offline" while the broker is out of reach, "two primaries" while another
    /// primary of the group is seen (`FleetEngine.otherPrimaries`), after "state not saved".
    func showConnectivity(_ up: Bool, state: any StateStore) {
        guard let corner else { return }
        if case .unavailable = state.durability { corner.set(.state, "state not saved") }
        corner.set(.fleetOffline, up ? nil : "offline")
        corner.set(.fleetPrimaries, engine?.otherPrimaries.isEmpty == false ? "two primaries" : nil)
    }
}
