import KioskControl
import KioskCore
import KioskState

/// A counter as the scenes holding its name have it now: the rules a change is judged by, the
/// value shown and the state keys its value is kept under (one per scene holding it).
public struct SharedCounter: Equatable {
    public var rules: CounterRules
    public var value: Int
    public var keys: [String]
    public init(rules: CounterRules, value: Int, keys: [String]) {
        self.rules = rules; self.value = value; self.keys = keys
    }
}

/// What decides the counters a component claims from the intake (the fleet's engine): a change
/// of one of them, on the render loop; `reply` gets its answer once.
public protocol SharedCounterStage: AnyObject {
    func submit(_ counter: String, _ edit: CounterEdit, id: String?, reply: ((ControlResponse) -> Void)?)
}

/// The daemon's counters for a component that decides some of them itself (the fleet): read by
/// name, shown, committed through the command pipeline, and claimed from the intake. Use on the
/// render loop; every closure holds the daemon weakly.
public struct SharedCounters {
    /// Where the daemon keeps its state (read at start: a component's own records).
    public let state: StateStore
    /// The daemon's wall time now.
    public let now: () -> WallTime
    /// Every counter name the scenes hold now.
    public let names: () -> [String]
    /// A counter by name as the scenes hold it now (after a reload the new ones); nil: none has it.
    public let counter: (String) -> SharedCounter?
    /// Shows a counter's value on the scenes holding its name when it arrives (the pipeline's road
    /// to the screen), redraws and tells observers.
    public let show: (_ counter: String, _ value: Int, _ up: Bool, _ at: WallTime) -> Void
    /// Makes `writes` durable through the command pipeline — all, or (an error) none — then calls
    /// `done` on the loop.
    public let commit: (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void
    /// `stage` decides the counters `names` (of fleet group `group`) from now on: the intake hands
    /// it their changes, the pipeline no longer decides them.
    public let claim: (_ names: Set<String>, _ group: String, _ stage: any SharedCounterStage) -> Void
    /// A claimed counter changed here: redraw, tell observers.
    public let changed: () -> Void
    /// The game clocks, for the fleet (nil: not given).
    public var clocks: SharedClocks?

    public init(state: StateStore, now: @escaping () -> WallTime, names: @escaping () -> [String],
                counter: @escaping (String) -> SharedCounter?, show: @escaping (String, Int, Bool, WallTime) -> Void,
                commit: @escaping ([(key: String, value: String)], @escaping (Error?) -> Void) -> Void,
                claim: @escaping (Set<String>, String, any SharedCounterStage) -> Void, changed: @escaping () -> Void) {
        self.state = state
        self.now = now
        self.names = names
        self.counter = counter
        self.show = show
        self.commit = commit
        self.claim = claim
        self.changed = changed
    }
}
