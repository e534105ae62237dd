import KioskComponent
import KioskCore
import KioskScenes

extension Daemon {
    /// The state remote observers see, read now.
    public func kioskState() -> KioskState {
        var counters: [KioskState.Counter] = []
        var paintings: [KioskState.Painting] = []
        var clocks: [KioskState.Clock] = []
        for scene in allScenes {
            if let c = scene as? ClockScene {
                clocks.append(.init(scene: c.name, mode: c.colorMode.rawValue, modes: ClockColorMode.allCases.map(\.rawValue)))
            }
            if let c = scene as? CounterControl {
                counters += c.counterInfo.map {
                    .init(scene: scene.name, name: $0.name, label: $0.label, value: $0.value, minimum: $0.minimum, maximum: $0.maximum)
                }
            }
            if let p = scene as? PaintControl { paintings.append(.init(scene: scene.name, strokes: p.strokeCount)) }
        }
        var state = KioskState(scene: manager.current.name, sceneKind: manager.current.kind, scenes: manager.scenes.map(\.name),
                          theme: activeThemeName, chosenTheme: themeName, blanked: display.isBlanked,
                          timeSynced: manager.timeSynchronized,
                          counters: counters, paintings: paintings, clocks: clocks,
                          fleetWarning: warnings().first { $0.hasPrefix("two primaries") },
                          outputs: heads.count > 1 ? heads.map {
                              .init(name: $0.name, scene: $0.manager.current.name, scenes: $0.manager.scenes.map(\.name), blanked: $0.display.isBlanked)
                          } : nil)
        state.screens = screenStates()
        let now = manager.time.now()
        state.gameClocks = clockScenes.compactMap { scene in
            scene.gameClock(at: now).map { c in
                let run = Self.kept(c.rules.showsGameClock ? c.game : (c.shot ?? c.game))
                var g = KioskState.GameClock(scene: scene.name, remainingMs: run.remainingMs, sinceMonotonicNs: run.sinceMonotonicNs,
                                             period: c.period, periods: c.rules.periods)
                g.shot = c.shot.map(Self.kept)
                g.face = .init(periodLengthMs: c.rules.periodLengthMs, tenthsBelowMs: c.rules.tenthsBelowMs, shotTenthsBelowMs: c.rules.shotTenthsBelowMs,
                               direction: c.rules.direction.rawValue, showsGameClock: c.rules.showsGameClock)
                return g
            }
        }
        state.horn = horn.map { .init(available: $0.player != nil, muted: $0.settings.mute) }
        return state
    }

    /// One clock's kept run for observers: its time left, and since when it runs (nil: stopped).
    static func kept(_ run: KioskCore.GameClock.Run) -> KioskState.GameClock.Run {
        switch run {
        case .stopped(let r): return .init(remainingMs: r, sinceMonotonicNs: nil)
        case .running(let since, let r): return .init(remainingMs: r, sinceMonotonicNs: since.monotonicNs)
        }
    }
}
