import KioskCore
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
///
/// The move is made before the scenes are made (`SceneRegistry.make`; on a reload off the
/// render loop first, from `ReloadCoordinator.read`), so that the scenes are given the moved
/// values.
package enum StateMigration {
    package struct Counter: Sendable {
        package var scene: String
        package var counter: String
        package var key: String
        package var legacyKey: String

        /// `key`: the counter's state key today; `legacyKey`: the one earlier versions used.
        package init(scene: String, counter: String, key: String, legacyKey: String) {
            self.scene = scene
            self.counter = counter
            self.key = key
            self.legacyKey = legacyKey
        }
    }

    /// A value moved: the counter now holds `value` under its new key.
    package struct Moved: Sendable, Equatable {
        package var scene: String
        package var counter: String
        package var value: String
    }

    /// Moves the values of `counters` saved under old keys (see the type); returns what was moved.
    package static func migrate(_ counters: [Counter], state: StateStore, logger: Logger) -> [Moved] {
        let newKeys = Set(counters.map(\.key))
        var reported = Set<String>()
        var moved: [Moved] = []
        for c in counters where c.key != c.legacyKey && state.contains(c.legacyKey) && !state.contains(c.key) {
            let claimants = counters.filter { $0.legacyKey == c.legacyKey }
            if claimants.count > 1 || newKeys.contains(c.legacyKey) {
                guard reported.insert(c.legacyKey).inserted else { continue }
                let who = (claimants + counters.filter { $0.key == c.legacyKey && $0.legacyKey != c.legacyKey })
                    .map { "counter '\($0.counter)' of scene '\($0.scene)'" }
                let file = (state as? FileStateStore).map { " (\($0.path(for: c.legacyKey)))" } ?? ""
                logger.error("state saved under the old key '\(c.legacyKey)'\(file) could belong to \(who.joined(separator: " or ")); it is moved to none of them: check their values (kioskctl counter NAME get) and set them again where needed",
                             metadata: ["state.key": "\(c.legacyKey)"])
                continue
            }
            guard let value = state.load(c.legacyKey) else { continue }
            moved.append(Moved(scene: c.scene, counter: c.counter, value: value))
            do {
                try state.save(c.key, value)
                try state.retire(c.legacyKey)
                logger.notice("counter '\(c.counter)' of scene '\(c.scene)': moved its saved value \(value) from the old state key '\(c.legacyKey)' to '\(c.key)'",
                              metadata: ["state.key": "\(c.key)"])
            } catch {
                logger.error("counter '\(c.counter)' of scene '\(c.scene)': shows its value \(value) saved under the old state key '\(c.legacyKey)' but cannot move it to '\(c.key)': \(error)",
                             metadata: ["state.key": "\(c.legacyKey)"])
            }
        }
        return moved
    }
}
