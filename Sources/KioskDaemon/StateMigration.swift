import KioskCore
import KioskScenes
import Logging

/// Moves counter values saved under the keys of earlier versions to today's keys.
///
/// Earlier versions keyed a counter as "counter.SCENE.COUNTER" with the names as written, so
/// scene "a.b" with counter "c" and scene "a" with counter "b.c" shared one key. Today's keys
/// escape the names (`StateKey.join`); for names without "." or "%" nothing changes. A counter
/// whose new key has nothing stored takes the value under its old key, when exactly one
/// configured counter had that old key and no configured counter uses it as its new key; the old
/// files are then renamed `….migrated`. An old key claimed by two counters is left alone and
/// reported: which counter it belonged to cannot be known.
enum StateMigration {
    struct Counter {
        var scene: CounterScene
        var counter: String
        var key: String
        var legacyKey: String
    }

    static func migrateCounters(in scenes: [Scene], state: StateStore, logger: Logger) {
        let counters = scenes.compactMap { $0 as? CounterScene }.flatMap { s in
            s.counterNames.map { Counter(scene: s, counter: $0, key: s.stateKey($0), legacyKey: s.legacyStateKey($0)) }
        }
        let newKeys = Set(counters.map(\.key))
        var reported = Set<String>()
        for c in counters where c.key != c.legacyKey && state.contains(c.legacyKey) && !state.contains(c.key) {
            let claimants = counters.filter { $0.legacyKey == c.legacyKey }
            if claimants.count > 1 || newKeys.contains(c.legacyKey) {
                guard reported.insert(c.legacyKey).inserted else { continue }
                let who = (claimants + counters.filter { $0.key == c.legacyKey && $0.legacyKey != c.legacyKey })
                    .map { "counter '\($0.counter)' of scene '\($0.scene.name)'" }
                let file = (state as? FileStateStore).map { " (\($0.path(for: c.legacyKey)))" } ?? ""
                logger.error("state saved under the old key '\(c.legacyKey)'\(file) could belong to \(who.joined(separator: " or ")); it is moved to none of them: check their values (kioskctl counter NAME get) and set them again where needed",
                             metadata: ["state.key": "\(c.legacyKey)"])
                continue
            }
            guard let value = state.load(c.legacyKey) else { continue }
            c.scene.restoreValue(value, of: c.counter)
            do {
                try state.save(c.key, value)
                try state.retire(c.legacyKey)
                logger.notice("counter '\(c.counter)' of scene '\(c.scene.name)': moved its saved value \(value) from the old state key '\(c.legacyKey)' to '\(c.key)'",
                              metadata: ["state.key": "\(c.key)"])
            } catch {
                logger.error("counter '\(c.counter)' of scene '\(c.scene.name)': shows its value \(value) saved under the old state key '\(c.legacyKey)' but cannot move it to '\(c.key)': \(error)",
                             metadata: ["state.key": "\(c.legacyKey)"])
            }
        }
    }
}
