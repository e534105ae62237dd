import KioskControl
import KioskCore
import KioskFleet
import KioskPosix
import KioskScenes
import KioskState
import Synchronization

/// The one entrance of counter changes. Touch, keys, the control socket, the web page and the
/// kiosk's MQTT topics — from any thread — enter through `submit`, as a `CounterEdit` (mapped
/// once from what the transport parsed: `ControlCommand.CounterOp.edit`, `CounterAction.edit`).
///
/// Stages, in the order built at start, claim counters **by name**: the fleet's (the counters a
/// `[fleet]` group shares: decided by the group's primary, on the render loop), then the local
/// one (every other counter of a counter scene: decided and made durable by the command
/// pipeline, from the calling thread). A counter neither claims (one of another kind of scene,
/// an unknown name) goes to the render loop's command handler, which answers it. Nothing here
/// holds a scene: a reload's new scenes are found by name when a change is decided
/// (`Daemon.updatePipelineDirectory`, `FleetEngine`) and when its value is shown (the
/// pipeline's `onShow`, the fleet's owners).
public final class CounterIntake: Sendable {
    /// Where the answer is given: `.loop` on the render loop (callers there: touch, keys, the
    /// loop's command handler); `.decided` where the change was decided (the pipeline's thread
    /// for a local counter, the loop for the others: for transports whose answers find their
    /// own way, such as the control server's jobs and the MQTT thread).
    public enum AnswerOn: Sendable, Equatable { case loop, decided }

    private let pipeline: CommandPipeline
    private let daemon: WeakLoopBound<Daemon>
    /// The fleet stage's counters (`claimForFleet`, once the fleet started).
    private let fleetNames = Mutex<Set<String>>([])

    init(pipeline: CommandPipeline, daemon: Daemon) {
        self.pipeline = pipeline
        self.daemon = WeakLoopBound(daemon, loop: daemon.loop)
    }

    /// The fleet stage takes `names` from now on (before the local stage).
    func claimForFleet(_ names: Set<String>) {
        fleetNames.withLock { $0 = names }
    }

    /// Whether the fleet stage claims `counter`.
    public func isShared(_ counter: String) -> Bool { fleetNames.withLock { $0.contains(counter) } }

    /// Takes one change of `counter`; `reply` gets its answer once (200 with the value after it,
    /// 202 for a fleet change the primary has not confirmed in time, or the refusal). `scene`:
    /// the scene a touch or key was made on (a counter of that name in another scene is not
    /// changed by it); nil: the first scene holding the name (as `kioskctl counter` finds it).
    /// `id`: the change's own id (an MQTT command's): the fleet applies a change of a shared
    /// counter with a given id once, however often it is submitted.
    public func submit(_ counter: String, _ edit: CounterEdit, scene: String? = nil, id: String? = nil, answerOn: AnswerOn,
                       reply: @escaping @Sendable (ControlResponse) -> Void) {
        if isShared(counter) {
            // On the loop, after what runs there now: a change may come from inside an MQTT
            // client's read, where the primary's publish must not happen.
            let daemon = self.daemon
            daemon.loop.post {
                guard let fleet = daemon.value?.fleet else {
                    reply(.error(503, "kioskd is stopping; counter '\(counter)' was not changed", field: "name"))
                    return
                }
                fleet.submit(counter, edit, id: id, reply: reply)
            }
            return
        }
        if let entry = pipeline.entry(for: counter, scene: scene) {
            let change = CommandPipeline.Change(key: entry.key, rules: entry.rules, edit: edit, shown: entry.shown, scene: entry.scene)
            pipeline.submit(change, delivery: answerOn == .loop ? .deliver : .here) { outcome in
                reply(Self.answer(counter, edit, outcome))
            }
            return
        }
        let daemon = self.daemon
        daemon.loop.post {
            guard let d = daemon.value else {
                reply(.error(503, "kioskd is stopping; counter '\(counter)' was not changed", field: "name"))
                return
            }
            reply(d.changeOnLoop(counter, edit))
        }
    }

    /// The control answer for a change's outcome in the pipeline.
    static func answer(_ counter: String, _ edit: CounterEdit, _ outcome: CommandPipeline.Outcome) -> ControlResponse {
        switch outcome {
        case .changed(_, let new), .unchanged(let new):
            return .json(200, CounterAnswer(counter: counter, value: new))
        case .refused(let e):
            return .from(e, field: edit.field)
        }
    }
}

extension ControlCommand.CounterOp {
    /// The edit a counter command asks for (`value` for `set`); nil for `get`. The one mapping
    /// of a transport's operation to an edit.
    public func edit(_ value: Int?) -> CounterEdit? {
        switch self {
        case .get: return nil
        case .set: return .set(value ?? 0)
        case .inc: return .increment
        case .dec: return .decrement
        case .reset: return .reset
        }
    }
}
