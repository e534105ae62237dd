import KioskControl
import KioskCore
import KioskPosix
import KioskScenes

extension Daemon {
    /// Starts the command pipeline (on the loop, after `start()` and before `startFleet`):
    /// counter changes from every transport, touch and keys are committed on its thread in
    /// groups; their answers and the values shown come back to the loop as messages.
    public func startPipeline() {
        loop.assertInLoop()
        guard pipeline == nil else { return }
        let loop = self.loop
        let p = CommandPipeline(store: state, logger: logger) { work in loop.post(work) }
        pipeline = p
        p.start()
        routeCounterInput()
    }

    /// Sends touch and key actions of every counter scene through the pipeline (again after a
    /// reload made new scenes). A fleet installed later takes its shared counters first.
    func routeCounterInput() {
        guard pipeline != nil else { return }
        for case let scene as CounterScene in manager.scenes where scene.changeRouter == nil {
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
        guard let scene = manager.scene(as: CounterControl.self).first(where: { $0.counterNames.contains(name) }) as? CounterScene else { return false }
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
                daemon.manager.sceneDidChange()
                daemon.changes.noteChange()
            }
            done(outcome)
        }
        return true
    }
}
