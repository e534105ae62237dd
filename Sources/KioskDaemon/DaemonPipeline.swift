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
        let p = makePipeline()
        let bound = LoopBound(self, loop: loop)
        p.setOnShow { shown in
            let daemon = bound.value
            let now = daemon.manager.time.now()
            for s in shown {
                // The first instance shows it on every output showing the scene (its siblings).
                (daemon.allScenes.first { $0.name == s.scene } as? CounterScene)?.showCommitted(s.counter, value: s.new, up: s.up, now: now)
            }
            daemon.scenesDidChange()
            daemon.changes.noteChange()
        }
        if startsThread { p.start() }
        routeCounterInput()
    }

    /// The pipeline and the intake in front of it, made (not started) if there are none yet: the
    /// control server is given them before the render loop runs, so that counter changes reach
    /// the pipeline without the loop.
    @discardableResult
    public func makePipeline() -> CommandPipeline {
        if let p = pipeline { return p }
        let loop = self.loop
        let p = CommandPipeline(store: state, logger: logger) { work in loop.post(work) }
        pipeline = p
        intake = CounterIntake(pipeline: p, daemon: self)
        return p
    }

    /// Commits `writes` through the command pipeline and calls `done` on the loop with nil (on
    /// disk) or the refusal; false (nothing done) when there is no pipeline.
    func commitThroughPipeline(_ writes: [(key: String, value: String)], done: @escaping (Error?) -> Void) -> Bool {
        guard let pipeline else { return false }
        let bound = LoopBound(done, loop: loop)
        pipeline.submitWrites(writes) { outcome in
            switch outcome {
            case .saved: bound.value(nil)
            case .refused(let e): bound.value(e)
            }
        }
        return true
    }

    /// Tells the pipeline which counters it decides, by name: the first counter scene holding
    /// each name (as `kioskctl counter` finds it), and each counter scene's own (for its touch
    /// and keys); never a counter the fleet stage claims.
    func updatePipelineDirectory() {
        guard let pipeline else { return }
        let shared: (String) -> Bool = { [config, intake] name in
            if let intake, intake.isShared(name) { return true }
            guard let f = config.fleet else { return false }
            return f.counters.map { $0.contains(name) } ?? true
        }
        var entries: [String: CommandPipeline.Entry] = [:]
        var scoped: [String: CommandPipeline.Entry] = [:]
        for owner in scenes(as: CounterControl.self) {
            guard let scene = owner as? CounterScene else { continue }
            for name in owner.counterNames where !shared(name) {
                guard let rules = try? scene.rules(of: name), let value = try? scene.value(of: name) else { continue }
                let entry = CommandPipeline.Entry(scene: scene.name, key: scene.stateKey(name), rules: rules, shown: value)
                scoped[CommandPipeline.scopedName(scene: scene.name, counter: name)] = entry
                if entries[name] == nil { entries[name] = entry }
            }
        }
        // A name another kind of counter scene holds too is not the pipeline's to change.
        for owner in scenes(as: CounterControl.self) where !(owner is CounterScene) {
            for name in owner.counterNames { entries[name] = nil }
        }
        pipeline.setDirectory(entries, scoped: scoped)
    }

    /// Sends touch and key actions of every counter scene into the intake (again after a reload
    /// made new scenes: each is given the same entrance), and shows the fleet's values on them.
    func routeCounterInput() {
        guard let intake else { return }
        updatePipelineDirectory()
        let logger = self.logger
        for case let scene as CounterScene in heads.flatMap(\.manager.scenes) {
            let name = scene.name
            scene.changeRouter = { counter, action in
                guard let edit = action.edit else { return false }
                intake.submit(counter, edit, scene: name, answerOn: .loop) { answer in
                    guard answer.status >= 400 else { return }
                    logger.warning("counter action refused", metadata: ["counter": "\(counter)", "action": "\(action.rawValue)",
                                                                      "error": "\(answer.errorMessage ?? "HTTP \(answer.status)")"])
                }
                return true
            }
        }
        fleet?.scenesReplaced()
    }

    /// A change of a counter no stage claims (a counter of another kind of scene, or an unknown
    /// name: 404 naming the counters there are), carried out on the loop.
    func changeOnLoop(_ name: String, _ edit: CounterEdit) -> ControlResponse {
        loop.assertInLoop()
        defer { changes.noteChange() }
        let owners = scenes(as: CounterControl.self)
        guard let c = owners.first(where: { $0.counterNames.contains(name) }) else {
            let all = owners.flatMap(\.counterNames)
            return .error(404, "unknown counter '\(name)'; " + (all.isEmpty ? "no scene has counters" : "counters: \(all.joined(separator: ", "))"), field: "name")
        }
        let now = manager.time.now()
        do {
            switch edit {
            case .set(let v): try c.set(name, to: v, now: now)
            case .increment: try c.increment(name, now: now)
            case .decrement: try c.decrement(name, now: now)
            case .reset: try c.reset(name, now: now)
            }
        } catch {
            return .from(error, field: edit.field)
        }
        scenesDidChange()
        return .json(200, CounterAnswer(counter: name, value: (try? c.value(of: name)) ?? 0))
    }
}
