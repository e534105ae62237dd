import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState

extension Daemon {
    /// Starts the command pipeline (on the loop, after `start()` and before `startFleet`):
    /// counter changes from every transport, touch and keys enter through `intake` and are
    /// committed on its commit loop in groups; their answers and the values shown come back to
    /// the loop as messages, resolved by scene and counter name when they arrive (a reload's new
    /// scenes show them).
    /// - Parameter commitLoop: nil: the pipeline's own epoll loop on the `kioskd-commit` thread
    ///   (kioskd); a test on virtual time gives a `ManualEventLoop` and steps it to commit.
    public func startPipeline(commitLoop: (any KioskLoop)? = nil) {
        loop.assertInLoop()
        // Weakly: the daemon holds the pipeline, which holds this (a strong one kept a daemon
        // and everything it holds open after its shutdown).
        let bound = WeakLoopBound(self, loop: loop)
        pipeline.setOnShow { shown in
            guard let daemon = bound.value else { return }
            daemon.counterUndo.record(shown)
            daemon.show(shown.map { ShownValue(scene: $0.scene, counter: $0.counter, value: $0.new, up: $0.up) }, now: daemon.manager.time.now())
            daemon.scenesDidChange()
            daemon.changes.noteChange()
        }
        if let commitLoop { pipeline.start(on: commitLoop) } else { pipeline.start() }
        updatePipelineDirectory()
        wireClocks()
        wireUndo()
    }

    /// A committed value to show: a counter of the scene named `scene`, or (nil) of every counter
    /// scene holding the counter's name (a counter the fleet shares).
    struct ShownValue {
        var scene: String?
        var counter: String
        var value: Int
        var up: Bool
    }

    /// The one way committed values reach the screen (the pipeline's and the fleet's, on the
    /// loop): each is resolved by scene and counter name when it arrives, so that a reload's
    /// new scenes show it. The first instance of a scene shows it on every output showing the
    /// scene (its siblings).
    func show(_ values: [ShownValue], now: WallTime) {
        let scenes = allScenes
        for v in values {
            for scene in scenes {
                guard let c = scene as? CounterControl, v.scene.map({ $0 == scene.name }) ?? c.counterNames.contains(v.counter) else { continue }
                c.showCommitted(v.counter, value: v.value, up: v.up, now: now)
            }
        }
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
        wireClocks()
        wireUndo()
        fleet?.scenesReplaced()
    }
}
