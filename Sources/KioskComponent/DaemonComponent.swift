import KioskControl
import KioskCore
import KioskState
import Logging

/// A feature of the running daemon (the MQTT bridge, the phone page, …): started by the daemon
/// after its command pipeline is up, in the order added, with a `ComponentContext` (never the
/// daemon itself); stopped in reverse order. Both on the render loop.
public protocol DaemonComponent: AnyObject {
    /// For the log ("mqtt", "web").
    var componentName: String { get }
    /// Starts the feature: what it needs of the daemon is in `context`.
    func start(context: ComponentContext) throws
    /// Stops the feature, then calls `done` on the render loop (at once, or when a connection is
    /// closed: within a bound the component keeps).
    func stop(then done: @escaping () -> Void)
}

/// What a component sees of the daemon: the render loop, the one entrance of counter changes,
/// the change feed and the state it carries, every other command, the status, the corner
/// warning. Made by the daemon; every closure holds it weakly (a stopped daemon answers nothing).
/// Use on the render loop, except `submit`.
public struct ComponentContext {
    /// The render loop (draws, reads input, flips; runs every closure below but `submit`).
    public let loop: any KioskLoop
    public let logger: Logger
    /// A counter change into the daemon's one entrance (`CounterIntake`), from any thread;
    /// `reply` runs on the thread that decided it (the pipeline's, the loop for a shared counter).
    /// `id`: the change's own id (the fleet applies a change with an id once).
    public let submit: @Sendable (_ counter: String, _ edit: CounterEdit, _ id: String?,
                                  _ reply: @escaping @Sendable (ControlResponse) -> Void) -> Void
    /// Any other control command, carried out as every transport's are; the answer on the loop.
    public let handle: (_ command: ControlCommand, _ reply: @escaping (ControlResponse) -> Void) -> Void
    /// Tells observers the kiosk's state after every change.
    public let changes: ChangeFeed
    /// The state remote observers see, read now (nil: the daemon is gone).
    public let kioskState: () -> KioskState?
    /// What `GET /status` answers, read now (nil: the daemon is gone).
    public let status: () -> StatusAnswer?
    /// The status's warnings (fleet, MQTT), read now.
    public let warnings: () -> [String]
    /// The displays driven, as the status names them ("HDMI-A-1 1920x1080"), read now.
    public let displayDescription: () -> String
    /// The outputs' names when there are several (their commands' topics); empty with one.
    public let outputs: [String]
    /// The folder of the theme files (the config's, read now: a reload may change it).
    public let themeDirectory: () -> String
    /// The small warning in the screen's corner (its one writer).
    public let corner: CornerWarnings
    /// The counters, for a component deciding some of them (the fleet); nil: not given.
    public let sharedCounters: SharedCounters?

    public init(loop: any KioskLoop, logger: Logger,
                submit: @escaping @Sendable (String, CounterEdit, String?, @escaping @Sendable (ControlResponse) -> Void) -> Void,
                handle: @escaping (ControlCommand, @escaping (ControlResponse) -> Void) -> Void,
                changes: ChangeFeed, kioskState: @escaping () -> KioskState?, status: @escaping () -> StatusAnswer?,
                warnings: @escaping () -> [String], displayDescription: @escaping () -> String,
                outputs: [String], themeDirectory: @escaping () -> String, corner: CornerWarnings,
                sharedCounters: SharedCounters? = nil) {
        self.loop = loop
        self.logger = logger
        self.submit = submit
        self.handle = handle
        self.changes = changes
        self.kioskState = kioskState
        self.status = status
        self.warnings = warnings
        self.displayDescription = displayDescription
        self.outputs = outputs
        self.themeDirectory = themeDirectory
        self.corner = corner
        self.sharedCounters = sharedCounters
    }
}
