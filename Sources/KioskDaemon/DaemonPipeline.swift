import KioskControl
import KioskCore
import KioskPosix
import KioskScenes

extension Daemon {
    /// Starts the command pipeline (on the loop, after `start()` and before `startFleet`):
    /// counter changes from every transport, touch and keys are committed on its thread in
    /// groups; their answers and the values shown come back to the loop as messages.
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

    /// The pipeline, made (not started) if there is none yet: the control server is given it
    /// before the render loop runs, so that counter changes reach it without the loop.
    @discardableResult
    public func makePipeline() -> CommandPipeline {
        if let p = pipeline { return p }
        let loop = self.loop
        let p = CommandPipeline(store: state, logger: logger) { work in loop.post(work) }
        pipeline = p
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

    /// Tells the pipeline which counters it may change without the render loop: the first
    /// counter scene holding each name (as `kioskctl counter` finds it), except counters shared
    /// by a fleet (they go to the fleet, on the loop).
    func updatePipelineDirectory() {
        guard let pipeline else { return }
        let shared: (String) -> Bool = { [config, fleet] name in
            if let fleet { return fleet.isShared(name) }
            guard let f = config.fleet else { return false }
            return f.counters.map { $0.contains(name) } ?? true
        }
        var entries: [String: CommandPipeline.Entry] = [:]
        for owner in scenes(as: CounterControl.self) {
            for name in owner.counterNames where entries[name] == nil {
                guard let scene = owner as? CounterScene, !shared(name), let rules = try? scene.rules(of: name),
                      let value = try? scene.value(of: name) else { continue }
                entries[name] = .init(scene: scene.name, key: scene.stateKey(name), rules: rules, shown: value)
            }
        }
        // A name held first by another kind of counter scene is not the pipeline's to change.
        for owner in scenes(as: CounterControl.self) where !(owner is CounterScene) {
            for name in owner.counterNames { entries[name] = nil }
        }
        pipeline.setDirectory(entries)
    }

    /// The change a control command asks of a counter of the directory.
    static func change(_ entry: CommandPipeline.Entry, _ op: ControlCommand.CounterOp, _ value: Int?) -> CommandPipeline.Change {
        let edit: CounterEdit
        switch op {
        case .set: edit = .set(value ?? 0)
        case .inc: edit = .increment
        case .dec: edit = .decrement
        case .reset, .get: edit = .reset
        }
        return .init(key: entry.key, rules: entry.rules, edit: edit, shown: entry.shown, scene: entry.scene)
    }

    /// The control answer for a counter change's outcome.
    static func answer(_ counter: String, _ op: ControlCommand.CounterOp, _ outcome: CommandPipeline.Outcome) -> ControlResponse {
        switch outcome {
        case .changed(_, let new), .unchanged(let new):
            return .json(200, CounterAnswer(counter: counter, value: new))
        case .refused(let e):
            return .from(e, field: op == .set ? "value" : "name")
        }
    }

    /// Sends touch and key actions of every counter scene through the pipeline (again after a
    /// reload made new scenes). A fleet installed later takes its shared counters first.
    func routeCounterInput() {
        guard pipeline != nil else { return }
        updatePipelineDirectory()
        for case let scene as CounterScene in heads.flatMap(\.manager.scenes) where scene.changeRouter == nil {
            scene.changeRouter = { [weak self, weak scene] counter, action in
                guard let self, let scene, let edit = action.edit else { return false }
                return self.submitCounter(scene, counter, edit) { outcome in
                    if case .refused(let e) = outcome {
                        self.logger.warning("counter action refused", metadata: ["counter": "\(counter)", "action": "\(action.rawValue)", "error": "\(e.message)"])
                    }
                }
            }
        }
    }

    /// Takes a counter change of a control command into the pipeline (true), answering it once
    /// it is on disk; false for anything else (carried out on the loop as before).
    func routeToPipeline(_ command: ControlCommand, reply: @escaping (ControlResponse) -> Void) -> Bool {
        guard case .counter(let name, let op, let value) = command, op != .get else { return false }
        guard let scene = scenes(as: CounterControl.self).first(where: { $0.counterNames.contains(name) }) as? CounterScene else { return false }
        let edit: CounterEdit
        switch op {
        case .set: edit = .set(value ?? 0)
        case .inc: edit = .increment
        case .dec: edit = .decrement
        case .reset, .get: edit = .reset
        }
        return submitCounter(scene, name, edit) { outcome in
            switch outcome {
            case .changed(_, let new), .unchanged(let new):
                reply(.json(200, CounterAnswer(counter: name, value: new)))
            case .refused(let e):
                reply(.from(e, field: op == .set ? "value" : "name"))
            }
        }
    }

    /// Submits one change of `counter` and, on the loop once its batch is decided, shows the
    /// committed value, tells observers and calls `done`.
    private func submitCounter(_ scene: CounterScene, _ counter: String, _ edit: CounterEdit,
                               done: @escaping (CommandPipeline.Outcome) -> Void) -> Bool {
        guard let pipeline, let rules = try? scene.rules(of: counter), let shown = try? scene.value(of: counter) else { return false }
        let bound = LoopBound((self, scene, done), loop: loop)
        pipeline.submit(.init(key: scene.stateKey(counter), rules: rules, edit: edit, shown: shown)) { outcome in
            let (daemon, scene, done) = bound.value
            if case .changed(let old, let new) = outcome {
                let up: Bool
                switch edit {
                case .increment: up = true
                case .set: up = new >= old
                case .decrement, .reset: up = false
                }
                scene.showCommitted(counter, value: new, up: up, now: daemon.manager.time.now())
                daemon.scenesDidChange()
                daemon.changes.noteChange()
            }
            done(outcome)
        }
        return true
    }
}
