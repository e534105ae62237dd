import KioskConfig
import KioskCore
import KioskScenes
import KioskState
import Logging

/// The state migration (`StateMigration`, in KioskState) over scenes and scene definitions.
extension StateMigration.Counter {
    /// The keys of `counter` of `scene`, today's and the earlier versions' (`CounterScene`).
    init(scene: String, counter: String) {
        self.init(scene: scene, counter: counter,
                  key: CounterScene.stateKey(scene: scene, counter: counter),
                  legacyKey: CounterScene.legacyStateKey(scene: scene, counter: counter))
    }
}

extension StateMigration {
    /// The counters of a config's counter scenes (`kind = "counter"`), read from their tables;
    /// a scene whose table does not read is left out (making it reports the error).
    static func counters(of definitions: [SceneDefinition]) -> [Counter] {
        definitions.filter { $0.kind == "counter" }.flatMap { d -> [Counter] in
            guard let settings = try? CounterSettings.read(d.table, scene: d.name) else { return [] }
            return settings.counters.map { Counter(scene: d.name, counter: $0.name) }
        }
    }
}
