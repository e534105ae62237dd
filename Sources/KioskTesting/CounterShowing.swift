import KioskCore
import KioskScenes

extension CounterControl {
    /// Shows `edit` applied to the value `counter` shows, as the daemon shows a change its
    /// command pipeline committed (`showCommitted`): for drawing tests and benchmarks, which
    /// measure the wheels, not the keeping. A refusal by the counter's rules is thrown.
    public func showEdit(_ edit: CounterEdit, _ counter: String, now: WallTime) throws {
        let old = try value(of: counter)
        let new = try rules(of: counter).apply(edit, to: old)
        showCommitted(counter, value: new, up: edit.rollsUp(from: old, to: new), now: now)
    }
}

/// Stands in for the daemon's one entrance in scene tests: records every intent a scene hands
/// it and, once `showsOn` is set, shows each on that scene as the daemon shows a change its
/// pipeline kept (the counter's rules applied, `showEdit`; a refusal is recorded, nothing shown),
/// then calls `onShown`.
public final class IntentRecorder {
    public private(set) var intents: [CounterIntent] = []
    /// The refusals of the counters' rules, in order.
    public private(set) var refusals: [String] = []
    /// The scene the intents are shown on (nil: only recorded).
    public weak var showsOn: CounterScene?
    /// When a value is shown (`SceneManager.sceneDidChange`, as the daemon does).
    public var onShown: (() -> Void)?
    private let now: () -> WallTime

    /// `now`: the time a value is shown at.
    public init(now: @escaping () -> WallTime) { self.now = now }

    /// What a scene is given as its `intents`.
    public var sink: (CounterIntent) -> Void {
        { [weak self] intent in self?.take(intent) }
    }

    private func take(_ intent: CounterIntent) {
        intents.append(intent)
        guard let scene = showsOn, scene.name == intent.scene else { return }
        do { try scene.showEdit(intent.edit, intent.counter, now: now()) } catch {
            refusals.append("\(error)")
            return
        }
        onShown?()
    }
}
