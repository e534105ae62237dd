import KioskComponent
import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState
import Synchronization

/// The one entrance of counter changes. Touch, keys, the control socket, the web page and the
/// kiosk's MQTT topics — from any thread — enter through `submit`, as a `CounterEdit` (mapped
/// once from what the transport parsed: `ControlCommand.CounterOp.edit`, `CounterAction.edit`).
///
/// Stages, in the order built at start, claim counters **by name**: the fleet's (the counters a
/// `[fleet]` group shares, claimed when the daemon is made: decided by the group's primary, on
/// the render loop, once the fleet was joined), then the local one (every other counter of a
/// counter scene: decided and made durable by the command pipeline, from the calling thread).
/// A name neither claims is unknown (404 naming the counters there are). Nothing here holds a
/// scene: a reload's new scenes are found by name when a change is decided
/// (`Daemon.updatePipelineDirectory`, `Daemon.sharedCounter`) and when its value is shown
/// (`Daemon.show`, the one way to the screen of the pipeline's and the fleet's values).
public final class CounterIntake: Sendable {
    /// Where the answer is given: `.loop` on the render loop (callers there: touch, keys, the
    /// loop's command handler); `.decided` where the change was decided (the pipeline's thread
    /// for a local counter, the loop for the others: for transports whose answers find their
    /// own way, such as the control server's jobs and the MQTT thread).
    public enum AnswerOn: Sendable, Equatable { case loop, decided }

    private let pipeline: CommandPipeline
    private let loop: any KioskLoop
    /// The fleet stage: the names it claims, its group, and its engine once joined (`joinFleet`;
    /// a `SharedCounterStage`, held as an object: a protocol's existential is no class type).
    private let fleet = Mutex<(names: Set<String>, group: String, engine: WeakLoopBound<AnyObject>?)>(([], "", nil))
    /// Every counter's name, in the scenes' order (`setNames`): what an unknown name is told.
    private let names = Mutex<[String]>([])

    init(pipeline: CommandPipeline, loop: any KioskLoop) {
        self.pipeline = pipeline
        self.loop = loop
    }

    /// The fleet stage claims `names` of fleet group `group` from now on (before the local
    /// stage); their changes wait for `joinFleet` (503 until then).
    func claimForFleet(_ names: Set<String>, group: String) {
        fleet.withLock { $0.names = names; $0.group = group }
    }

    /// The fleet's engine decides the claimed counters from now on (on the loop).
    func joinFleet(_ engine: any SharedCounterStage) {
        let bound = WeakLoopBound<AnyObject>(engine, loop: loop)
        fleet.withLock { $0.engine = bound }
    }

    /// The names of every counter of the scenes now, in their order (after a reload: the new ones).
    func setNames(_ all: [String]) { names.withLock { $0 = all } }

    /// Whether the fleet stage claims `counter`.
    public func isShared(_ counter: String) -> Bool { fleet.withLock { $0.names.contains(counter) } }

    /// Takes one change of `counter`; `reply` gets its answer once (200 with the value after it,
    /// 202 for a fleet change the primary has not confirmed in time, or the refusal). `scene`:
    /// the scene a touch or key was made on (a counter of that name in another scene is not
    /// changed by it); nil: the first scene holding the name (as `kioskctl counter` finds it).
    /// `id`: the change's own id (an MQTT command's): the fleet applies a change of a shared
    /// counter with a given id once, however often it is submitted.
    public func submit(_ counter: String, _ edit: CounterEdit, scene: String? = nil, id: String? = nil, answerOn: AnswerOn,
                       reply: @escaping @Sendable (ControlResponse) -> Void) {
        let stage = fleet.withLock { $0 }
        if stage.names.contains(counter) {
            // On the loop, after what runs there now: a change may come from inside an MQTT
            // client's read, where the primary's publish must not happen.
            loop.post {
                guard let engine = stage.engine?.value as? any SharedCounterStage else {
                    let why = stage.engine == nil ? "kioskd has not joined fleet group '\(stage.group)' (yet)" : "kioskd is stopping"
                    reply(.error(503, "counter '\(counter)' is shared by fleet group '\(stage.group)' and \(why); it was not changed", field: "name"))
                    return
                }
                engine.submit(counter, edit, id: id, reply: reply)
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
        let all = names.withLock { $0 }
        let where_ = scene.map { " in scene '\($0)'" } ?? ""
        let answer = ControlResponse.error(404, "unknown counter '\(counter)'\(where_); "
            + (all.isEmpty ? "no scene has counters" : "counters: \(all.joined(separator: ", "))"), field: "name")
        switch answerOn {
        case .loop: loop.post { reply(answer) }
        case .decided: reply(answer)
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
