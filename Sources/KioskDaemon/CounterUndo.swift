import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState

/// The counter changes a key bound to `undo` (`[scene.NAME.keys]`, docs/config-counter.md)
/// takes back, per scene, newest last: every change the command pipeline committed (whatever
/// made it: keys, touch, `kioskctl`, the web page, MQTT), as the render loop is shown it, in
/// commit order. Undos themselves are not recorded, so pressing undo again takes back the change
/// before. Held in memory (at most `depth` per scene): what an undo sets is kept like any other
/// change, the list of changes to undo starts empty at each start of kioskd. On the render loop.
final class CounterUndo {
    struct Entry: Equatable {
        var counter: String
        /// The value before the change, and the value it gave.
        var old: Int
        var new: Int
    }

    /// The changes remembered per scene.
    static let depth = 32
    private(set) var entries: [String: [Entry]] = [:]

    /// Notes the committed changes of one batch (undos left out).
    func record(_ shown: [CommandPipeline.Shown]) {
        for s in shown where !s.undo {
            var list = entries[s.scene, default: []]
            list.append(Entry(counter: s.counter, old: s.old, new: s.new))
            if list.count > Self.depth { list.removeFirst(list.count - Self.depth) }
            entries[s.scene] = list
        }
    }

    /// Takes the last change of `scene` off the list (nil: nothing to undo).
    func pop(scene: String) -> Entry? {
        guard let e = entries[scene]?.popLast() else { return nil }
        return e
    }
}

extension Daemon {
    /// Every counter scene's instances hand their `undo` keys here. On start and after a reload.
    func wireUndo() {
        for h in heads {
            for case let scene as CounterScene in h.manager.scenes {
                scene.undoRequests = { [weak self] name in self?.undoLastCounterChange(scene: name) { _ in } }
            }
        }
    }

    /// Takes back the last counter change of scene `scene`: the counter is set back to the value
    /// before it, through the command pipeline (kept like any change, answered once on disk),
    /// only if it still has the value that change gave (else refused, nothing written). `reply`
    /// gets the answer on the loop: 200 with the counter's value, 404 when there is nothing to undo.
    func undoLastCounterChange(scene: String, reply: @escaping (ControlResponse) -> Void) {
        loop.assertInLoop()
        guard let last = counterUndo.pop(scene: scene) else {
            logger.info("undo: no counter change to undo", metadata: ["scene": "\(scene)"])
            return reply(.error(404, "scene '\(scene)' has no counter change to undo since kioskd started", field: "scene"))
        }
        guard let entry = pipeline.entry(for: last.counter, scene: scene) else {
            return reply(.error(404, "counter '\(last.counter)' of scene '\(scene)' is gone (a reload); nothing was undone", field: "name"))
        }
        let change = CommandPipeline.Change(key: entry.key, rules: entry.rules, edit: .set(last.old), shown: entry.shown,
                                            scene: entry.scene, undoes: last.new)
        let bound = LoopBound((self, reply), loop: loop)
        pipeline.submit(change) { outcome in
            let (daemon, reply) = bound.value
            let answer = CounterIntake.answer(last.counter, .set(last.old), outcome)
            if answer.status >= 400 {
                daemon.logger.warning("undo refused", metadata: ["scene": "\(scene)", "counter": "\(last.counter)",
                                                                 "error": "\(answer.errorMessage ?? "HTTP \(answer.status)")"])
            } else {
                daemon.logger.info("undo", metadata: ["scene": "\(scene)", "counter": "\(last.counter)", "from": "\(last.new)", "to": "\(last.old)"])
            }
            reply(answer)
        }
    }
}
