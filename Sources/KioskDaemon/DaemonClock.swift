import KioskComponent
import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState

/// The game clocks of the counter scenes (docs/scoreboard.md): a key, a tap on the clock or a
/// control command (`kioskctl clock …`, on the loop) becomes a `ClockIntent` taken at the
/// instant it was asked for, decided and kept by the command pipeline with the counter changes
/// (a `GameClockRecord`: "running since T with R left" or "stopped with R left"), and shown
/// and answered once on disk (acknowledged = kept).
extension Daemon {
    /// Every counter scene's instances hand their clock keys and taps here; the first instance
    /// of each scene reports its clock's events to `onClockEvent` (the horn's hook). On start
    /// and after a reload.
    func wireClocks() {
        let first = Set(allScenes.map { ObjectIdentifier($0) })
        for h in heads {
            for case let scene as CounterScene in h.manager.scenes where scene.gameClock(at: manager.time.now()) != nil {
                scene.clockIntents = { [weak self] i in
                    self?.submitClock(i.intent, scene: i.scene, at: i.at) { [weak self] answer in
                        guard answer.status >= 400 else { return }
                        self?.logger.warning("clock action refused", metadata: [
                            "scene": "\(i.scene)", "action": "\(i.intent.words.joined(separator: " "))",
                            "error": "\(answer.errorMessage ?? "HTTP \(answer.status)")"])
                    }
                }
                scene.onClockEvent = first.contains(ObjectIdentifier(scene)) ? { [weak self] e in self?.clockReachedZero(e) } : nil
            }
        }
    }

    /// A period or the shot clock reached 0.0 on the frame `e.frameNs` shows it: the horn sounds
    /// (muted, without `[audio]` or without a device: nothing is played), then `onClockEvent`.
    /// One info line names both instants on CLOCK_MONOTONIC (`zero_ns`: when the clock reached
    /// zero; `frame_ns`: the frame showing 0.0, the horn's requested instant).
    func clockReachedZero(_ e: GameClockEvent) {
        soundHorn(requestedNs: e.frameNs)
        let what: String
        switch e.event.kind {
        case .periodEnded(let period): what = "period \(period) ended"
        case .shotClockExpired: what = "shot clock expired"
        }
        logger.info("game clock reached zero", metadata: ["scene": "\(e.scene)", "event": "\(what)",
                                                          "zero_ns": "\(e.event.monotonicNs)", "frame_ns": "\(e.frameNs)"])
        changes.noteChange() // the clock stopped at zero: observers see it stopped
        onClockEvent?(e)
    }

    /// The counter scenes with a game clock (first instances), in config order.
    var clockScenes: [CounterScene] {
        let now = manager.time.now()
        return allScenes.compactMap { $0 as? CounterScene }.filter { $0.gameClock(at: now) != nil }
    }

    /// Decides and keeps `intent` on the game clock of scene `scene` (nil: the first scene with
    /// one) at instant `at`; `reply` gets, on the loop, the clock once kept, or the refusal
    /// (404 naming the scenes with a clock, 422 for a value the clock's rules refuse).
    func submitClock(_ intent: ClockIntent, scene: String?, at now: WallTime, reply: @escaping (ControlResponse) -> Void) {
        loop.assertInLoop()
        let scenes = clockScenes
        guard let target = scene.map({ n in scenes.first { $0.name == n } }) ?? scenes.first, let shown = target.gameClock(at: now) else {
            let names = scenes.map(\.name)
            let what = scene.map { "scene '\($0)' has no game clock" } ?? "no scene has a game clock"
            return reply(.error(404, what + "; " + (names.isEmpty ? "add a [scene.NAME.clock] table to a counter scene" : "scenes with a clock: \(names.joined(separator: ", "))"),
                                field: "scene"))
        }
        if let f = fleet, f.sharesClocks {
            // The group's primary decides it (here or, from a follower, over the broker).
            return f.submitClock(intent, scene: target.name, at: now, reply: reply)
        }
        let name = target.name
        keepClock(intent, scene: name, at: now) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let clock):
                let note = ControlCommandHandler.notKept("the game clock", state: self.state)
                reply(.json(200, ClockAnswer(ok: true, scene: name, clock: .init(clock, at: self.manager.time.now()), saved: note == nil ? nil : false, note: note)))
            case .failure(let e):
                reply(.from(e, field: "clock"))
            }
        }
    }

    /// Decides `intent` on scene `name`'s clock at `now` through the command pipeline, shows it
    /// once kept and gives `done` (on the loop) the clock kept, or the refusal.
    func keepClock(_ intent: ClockIntent, scene name: String, at now: WallTime, done: @escaping (Result<GameClock, KioskError>) -> Void) {
        let scenes = clockScenes
        guard let shown = scenes.first(where: { $0.name == name })?.gameClock(at: now) else {
            return done(.failure(.notFound("scene '\(name)' has no game clock")))
        }
        let change = CommandPipeline.ClockChange(key: GameClockRecord.stateKey(scene: name), scene: name, intent: intent, shown: shown,
                                                 at: now, bootID: GameClockRecord.thisBoot)
        let bound = LoopBound((self, done), loop: loop)
        pipeline.submit(change) { outcome in
            let (daemon, done) = bound.value
            switch outcome {
            case .decided(let clock, _):
                daemon.showClock(clock, scene: name, now: daemon.manager.time.now())
                done(.success(clock))
            case .refused(let e):
                done(.failure(e))
            }
        }
    }

    /// The game clocks as the fleet sees them (`SharedCounters.clocks`).
    func sharedClocks() -> SharedClocks {
        SharedClocks(
            scenes: { [weak self] in self?.clockScenes.map(\.name) ?? [] },
            clock: { [weak self] scene, at in self?.clockScenes.first { $0.name == scene }?.gameClock(at: at) },
            decide: { [weak self] intent, scene, at, done in
                guard let self else { return done(.failure(.state("kioskd is stopping"))) }
                self.keepClock(intent, scene: scene, at: at, done: done)
            },
            show: { [weak self] scene, record, warning in
                guard let self else { return false }
                let now = self.manager.time.now()
                var shown = false
                for h in self.heads {
                    for case let s as CounterScene in h.manager.scenes where s.name == scene {
                        do { shown = try s.showFleetClock(record, now: now, warning: warning) || shown } catch {
                            self.logger.error("the primary's game clock cannot be shown", metadata: ["scene": "\(scene)", "error": "\(error)"])
                        }
                    }
                }
                self.scenesDidChange()
                self.changes.noteChange()
                return shown
            },
            synchronized: { [weak self] in self?.manager.timeSynchronized ?? true },
            bootID: GameClockRecord.thisBoot)
    }

    /// Shows a kept clock on every instance of scene `scene` (every output showing it).
    func showClock(_ clock: GameClock, scene: String, now: WallTime) {
        for h in heads {
            for case let s as CounterScene in h.manager.scenes where s.name == scene { s.showCommittedClock(clock, now: now) }
        }
        scenesDidChange()
        changes.noteChange()
    }

    /// Every game clock for status.
    func clockAnswers(at now: WallTime) -> [ClockAnswer]? {
        let all = clockScenes.compactMap { s in
            s.gameClock(at: now).map { ClockAnswer(scene: s.name, clock: .init($0, at: now), warning: fleet?.clockWarning(s.name)?.status) }
        }
        return all.isEmpty ? nil : all
    }
}
