import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState

extension Daemon {
    /// Starts the command pipeline (on the loop, after `start()` and before `startFleet`):
    /// counter changes from every transport, touch and keys enter through `intake` and are
    /// committed on its thread in groups; their answers and the values shown come back to the
    /// loop as messages, resolved by scene and counter name when they arrive (a reload's new
    /// scenes show them).
    /// - Parameter startsThread: false for a test on virtual time that commits each batch itself
    ///   (`pipeline.runOnce()` on its own thread, then a step of its loop).
    public func startPipeline(startsThread: Bool = true) {
        loop.assertInLoop()
        let bound = LoopBound(self, loop: loop)
        pipeline.setOnShow { shown in
            let daemon = bound.value
            let now = daemon.manager.time.now()
            for s in shown {
                // The first instance shows it on every output showing the scene (its siblings).
                (daemon.allScenes.first { $0.name == s.scene } as? CounterScene)?.showCommitted(s.counter, value: s.new, up: s.up, now: now)
            }
            daemon.scenesDidChange()
            daemon.changes.noteChange()
        }
        if startsThread { pipeline.start() }
        updatePipelineDirectory()
    }

    /// Commits `writes` through the command pipeline and calls `done` on the loop with nil (on
    /// disk) or the refusal.
    func commitThroughPipeline(_ writes: [(key: String, value: String)], done: @escaping (Error?) -> Void) {
        let bound = LoopBound(done, loop: loop)
        pipeline.submitWrites(writes) { outcome in
            switch outcome {
            case .saved: bound.value(nil)
            case .refused(let e): bound.value(e)
            }
        }
    }

    /// Tells the pipeline which counters it decides, by name: the first counter scene holding
    /// each name (as `kioskctl counter` finds it), and each counter scene's own (for its touch
    /// and keys); never a counter the fleet stage claims.
    func updatePipelineDirectory() {
        var entries: [String: CommandPipeline.Entry] = [:]
        var scoped: [String: CommandPipeline.Entry] = [:]
        var names: [String] = []
        for case let scene as CounterScene in allScenes {
            names += scene.counterNames.filter { !names.contains($0) }
            for name in scene.counterNames where !intake.isShared(name) {
                guard let rules = try? scene.rules(of: name), let value = try? scene.value(of: name) else { continue }
                let entry = CommandPipeline.Entry(scene: scene.name, key: scene.stateKey(name), rules: rules, shown: value)
                scoped[CommandPipeline.scopedName(scene: scene.name, counter: name)] = entry
                if entries[name] == nil { entries[name] = entry }
            }
        }
        pipeline.setDirectory(entries, scoped: scoped)
        intake.setNames(names)
    }

    /// A reload made new scenes: the pipeline decides their counters (found by name), and the
    /// fleet shows its values on them.
    func scenesReplaced() {
        updatePipelineDirectory()
        fleet?.scenesReplaced()
    }
}
