import KioskConfig
import KioskCore
import KioskScenes
import KioskState
import Logging

/// Scene kinds by name (`kind = "clock"` in a `[scene.NAME]` table) and their factories.
public struct SceneRegistry {
    public private(set) var factories: [String: SceneFactory]

    public init(factories: [String: SceneFactory] = [:]) { self.factories = factories }

    public var kinds: [String] { factories.keys.sorted() }

    public mutating func register(_ kind: String, _ factory: @escaping SceneFactory) { factories[kind] = factory }

    /// Makes every configured scene. A factory's config error (with file:line and key) is passed on;
    /// other errors get the scene's table location.
    /// Counter values saved under earlier versions' keys are moved to today's first
    /// (`StateMigration`); each scene is given the values kept in `state` and `intents`, where
    /// its counters' changes go (it holds no `StateStore`).
    public func make(_ definitions: [SceneDefinition], state: StateStore, intents: @escaping (CounterIntent) -> Void,
                     logger: Logger, dataDirectory: String) throws -> [Scene] {
        _ = StateMigration.migrate(StateMigration.counters(of: definitions), state: state, logger: logger)
        let scenes = try makeEach(definitions, state: state, intents: intents, logger: logger, dataDirectory: dataDirectory)
        try Self.checkCounterNames(definitions, scenes)
        return scenes
    }

    /// Counters are addressed by name alone (`kioskctl counter NAME`): a name may be used once
    /// in the whole config. The error names both places (where each scene's settings say the
    /// name was written; a scene without counter tables has the default counter).
    static func checkCounterNames(_ definitions: [SceneDefinition], _ scenes: [Scene]) throws {
        var seen: [String: (SourceLocation, String)] = [:]
        for (d, scene) in zip(definitions, scenes) {
            guard let counter = scene as? CounterScene else { continue }
            for (i, name) in counter.counterNames.enumerated() {
                let written = counter.settings.namePlaces[i]
                let place = written.map { ($0.location, $0.key) } ?? (d.table.location, d.table.fullKey("counter"))
                var what = "counter \"\(name)\""
                if written?.isDefault ?? true { what += " (the default counter)" }
                if let first = seen[name] {
                    throw KioskError.config("\(place.0): key '\(place.1)': \(what) is also defined at \(first.0) (key '\(first.1)'); counters are addressed by name alone, so each name may be used once")
                }
                seen[name] = place
            }
        }
    }

    private func makeEach(_ definitions: [SceneDefinition], state: StateStore, intents: @escaping (CounterIntent) -> Void,
                          logger: Logger, dataDirectory: String) throws -> [Scene] {
        try definitions.map { d in
            guard let f = factories[d.kind] else {
                throw d.table.error("kind", "unknown scene kind \"\(d.kind)\"; kinds: \(kinds.joined(separator: ", "))")
            }
            var l = logger
            l[metadataKey: "scene"] = "\(d.name)"
            let ctx = SceneContext(name: d.name, stored: { state.load($0) }, counterIntents: intents, logger: l, dataDirectory: dataDirectory)
            do {
                let scene = try f(d.table, ctx)
                try d.table.finish()
                return scene
            } catch let e as KioskError where e.kind == .config {
                throw e
            } catch {
                throw KioskError.config("\(d.table.location): scene '\(d.name)' (kind \"\(d.kind)\"): \(error)")
            }
        }
    }
}
