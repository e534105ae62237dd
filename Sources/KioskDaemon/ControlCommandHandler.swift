import FoundationEssentials
import Glibc
import KioskConfig
import KioskControl
import KioskCore
import KioskPosix
import KioskScenes
import KioskState
import Logging

/// Carries out control commands on a running daemon and builds their answers (the types of
/// `KioskControl`). Runs on the render loop's thread.
struct ControlCommandHandler {
    /// Carries out one command and returns the answer.
    func handle(_ command: ControlCommand, on daemon: Daemon) -> ControlResponse {
        daemon.loop.assertInLoop()
        let now = daemon.manager.time.now()
        do {
            switch command {
            case .status:
                return .json(200, status(daemon))
            case .outputs:
                return .json(200, OutputsAnswer(outputs: daemon.withTruth(daemon.withCEC(outputs(daemon)))))
            case .scene, .theme, .clockMode, .brightness(_?), .clock:
                // Kept through the command pipeline, answered once on disk: one road.
                return Self.notHere(command)
            case .counter(let name, let op, let value):
                if op.edit(value) != nil {
                    // One road per counter: the intake (`Daemon.handle(_:reply:)`), never here.
                    return Self.notHere(command, field: "name")
                }
                let owners = daemon.scenes(as: CounterControl.self)
                guard let c = owners.first(where: { $0.counterNames.contains(name) }) else {
                    let all = owners.flatMap(\.counterNames)
                    return .error(404, "unknown counter '\(name)'; " + (all.isEmpty ? "no scene has counters" : "counters: \(all.joined(separator: ", "))"), field: "name")
                }
                return .json(200, CounterAnswer(ok: nil, counter: name, value: try c.value(of: name)))
            case .paint(let op, let name):
                guard let p = daemon.scenes(as: PaintControl.self).first else {
                    return .error(404, "no paint scene is configured (scenes: \(daemon.allScenes.map(\.name).joined(separator: ", ")))")
                }
                var answer = PaintAnswer(strokes: 0)
                switch op {
                case .clear: p.clear()
                case .undo: answer.changed = p.undo()
                case .redo: answer.changed = p.redo()
                case .save:
                    do { answer.path = try p.save(name: name) } catch {
                        return Self.paintSaveRefusal(error, logger: daemon.logger)
                    }
                }
                answer.strokes = p.strokeCount
                daemon.scenesDidChange()
                return .json(200, answer)
            case .screenshot(let output):
                let head: OutputHead
                do { head = try daemon.head(named: output) } catch { return .from(error, field: "output") }
                head.manager.renderIfPossible()
                return ControlResponse(status: 200, contentType: "image/png", body: try head.manager.screenshotPNG())
            case .blank(let on, let output):
                let head: OutputHead
                do { head = try daemon.head(named: output) } catch { return .from(error, field: "output") }
                head.blanking.setManual(on)
                return .json(200, BlankAnswer(blanked: head.display.isBlanked))
            case .brightness(nil):
                return daemon.brightnessAnswer()
            case .reload:
                switch daemon.reload() {
                case .success(let m): return .json(200, ReloadAnswer(message: m))
                case .failure(let e): return .error(422, e.message)
                }
            case .pair, .devices, .revokeDevice, .recentErrors, .themes, .palette, .paintings, .painting:
                return daemon.handleWebCommand(command)
            case .horn:
                return daemon.hornAnswer()
            case .settings:
                return .json(200, daemon.settingsAnswer())
            case .changeSettings:
                // Kept through the command pipeline, answered once on disk (DaemonSettings.swift).
                return Self.notHere(command)
            }
        } catch {
            daemon.logger.error("control command failed", metadata: ["command": "\(command)", "error": "\(error)"])
            return .from(error)
        }
    }

    /// A choice a control command makes (the scene, the theme, a clock's colour mode, the
    /// brightness): values to save, all of them before the choice is applied, so that an
    /// acknowledged choice is the one shown after a restart.
    struct Choice {
        /// The values to save.
        var saves: [(key: String, value: String)]
        /// "the choice of scene 'clock'" (logs, and the note when state is not kept).
        var subject: String
        /// The refusal's text when the values cannot be saved, from the error.
        var refusal: (Error) -> String
        /// Applies the choice on the loop and gives the answer, with `saved` and `note` as `keep` found.
        var apply: (_ saved: Bool?, _ note: String?) -> ControlResponse
    }

    /// What a choice command asks.
    enum Asked {
        /// Answered at once, nothing to save (an unknown scene, theme or mode).
        case answer(ControlResponse)
        case choice(Choice)
    }

    /// The choice `command` asks for, checked against what the daemon has; nil when `command`
    /// is no choice.
    /// `theme`: the theme of a `.theme` command, already read (off the loop); nil: read here.
    func choice(_ command: ControlCommand, on daemon: Daemon, theme: Result<Theme, Error>? = nil) -> Asked? {
        switch command {
        case .scene(let name, let output):
            let manager: SceneManager, key: String
            do {
                let head = try daemon.head(named: output)
                manager = head.manager
                key = head.sceneKey
            } catch {
                return .answer(.from(error, field: "output"))
            }
            guard manager.scenes.contains(where: { $0.name == name }) else {
                do { try manager.show(sceneNamed: name) } catch { return .answer(.from(error, field: "name")) }
                return .answer(.json(200, ChoiceAnswer(scene: manager.current.name)))
            }
            let what = "scene '\(name)'"
            let stays = "the scene stays '\(manager.current.name)'"
            return .choice(Choice(saves: [(key, name)], subject: "the choice of \(what)",
                                  refusal: { "cannot save the choice of \(what): \($0); \(stays)" }) { saved, note in
                do { try manager.show(sceneNamed: name) } catch { return .from(error, field: "name") }
                return .json(200, ChoiceAnswer(scene: manager.current.name, saved: saved, note: note))
            })
        case .theme(let name):
            let config = daemon.config
            let t: Theme
            do { t = try theme?.get() ?? ThemeLoader.load(named: name, directory: config.themeDirectory) } catch { return .answer(.from(error, field: "name")) }
            // The chosen theme applies at the next start only while the config's theme is the one
            // it was chosen under: the choice first, then the config's theme (saving a value the
            // state already holds writes nothing).
            let what = "theme '\(name)'"
            let stays = "the theme stays '\(daemon.themes.activeName)'"
            return .choice(Choice(saves: [(Daemon.themeKey, name), (Daemon.themeConfigKey, config.themeName)], subject: "the choice of \(what)",
                                  refusal: { "cannot save the choice of \(what): \($0); \(stays)" }) { saved, note in
                // Outputs with a theme of their own keep it.
                for h in daemon.heads where h.settings.theme == nil { h.themes.choose(name, t) }
                return .json(200, ChoiceAnswer(theme: name, saved: saved, note: note))
            })
        case .clockMode(let modeName, let sceneName):
            let clocks = daemon.scenes(as: ClockScene.self)
            guard !clocks.isEmpty else {
                return .answer(.error(404, "no clock scene is configured (scenes: \(daemon.allScenes.map(\.name).joined(separator: ", ")))", field: "scene"))
            }
            var targets = clocks
            if let sceneName {
                guard let c = clocks.first(where: { $0.name == sceneName }) else {
                    return .answer(.error(404, "unknown clock scene '\(sceneName)'; clock scenes: \(clocks.map(\.name).joined(separator: ", "))", field: "scene"))
                }
                targets = [c]
            }
            guard let mode = ClockColorMode(rawValue: modeName) else {
                return .answer(.error(422, "unknown clock mode '\(modeName)'; modes: \(ClockColorMode.allCases.map(\.rawValue).joined(separator: ", "))", field: "mode"))
            }
            // The mode chosen applies at the next start while the config's color_mode is the one it was chosen under.
            let saves = targets.flatMap { [(Daemon.clockModeKey($0.name), mode.rawValue), (Daemon.clockModeConfigKey($0.name), $0.configuredColorMode.rawValue)] }
            let was = targets.map { "'\($0.colorMode.rawValue)'" }.joined(separator: ", ")
            let what = "the choice of clock mode '\(modeName)'"
            let names = targets.map(\.name)
            return .choice(Choice(saves: saves, subject: what, refusal: { "cannot save \(what): \($0); the clock mode stays \(was)" }) { saved, note in
                // The clocks by name: a reload while the choice was being saved made new scenes.
                for h in daemon.heads {
                    for case let c as ClockScene in h.manager.scenes where names.contains(c.name) { c.setColorMode(mode) }
                }
                daemon.scenesDidChange()
                return .json(200, ClockModeAnswer(mode: mode.rawValue, scenes: names, saved: saved, note: note))
            })
        case .brightness(let percent?):
            return daemon.brightnessChoice(percent)
        default:
            return nil
        }
    }

    /// The answer to a command that the loop's synchronous handler does not carry out: it keeps
    /// a value or waits for other work, and goes through `Daemon.handle(_:reply:)`.
    static func notHere(_ command: ControlCommand, field: String? = nil) -> ControlResponse {
        .error(500, "\(command) is carried out through Daemon.handle(_:reply:) (the command pipeline or the worker), not the loop's synchronous handler",
               field: field)
    }

    /// The values of a choice command are committed on the pipeline's thread, and the choice is
    /// applied and answered on the loop once they are on disk (refused as `refused` says when
    /// the commit fails); the loop does not wait meanwhile. Without durable state nothing is
    /// written: it is applied at once with a note saying it lasts until kioskd stops.
    /// False: `command` is no choice.
    func submitChoice(_ command: ControlCommand, on daemon: Daemon, theme: Result<Theme, Error>? = nil,
                      reply: @escaping (ControlResponse) -> Void) -> Bool {
        if case .clock(let intent, let scene) = command {
            // Kept through the command pipeline and answered once on disk (DaemonClock.swift).
            daemon.submitClock(intent, scene: scene, at: daemon.manager.time.now(), reply: reply)
            return true
        }
        if case .changeSettings(let change) = command {
            daemon.changeSettings(change, reply: reply) // checked, kept, reloaded (DaemonSettings.swift)
            return true
        }
        guard let asked = choice(command, on: daemon, theme: theme) else { return false }
        switch asked {
        case .answer(let r):
            reply(r)
        case .choice(let c):
            if let note = Self.notKept(c.subject, state: daemon.state) {
                reply(c.apply(false, note))
                return true
            }
            let bound = LoopBound((daemon, c, reply), loop: daemon.loop)
            daemon.pipeline.submitWrites(c.saves) { outcome in
                let (daemon, c, reply) = bound.value
                switch outcome {
                case .saved: reply(c.apply(nil, nil))
                case .refused(let e): reply(ControlCommandHandler.refused(e, c.subject, logger: daemon.logger, refusal: c.refusal))
                }
                daemon.changes.noteChange()
            }
        }
        return true
    }

    /// Without durable state: the note saying that `subject` is not kept (the change goes ahead
    /// with `saved: false`); nil when state is durable (the change is kept before it applies).
    static func notKept(_ subject: String, state: StateStore) -> String? {
        switch state.durability {
        case .durable: return nil
        case .volatile: return "state = \"volatile\": \(subject) lasts until kioskd stops"
        case .unavailable(let why): return "state is not being saved (\(why)): \(subject) lasts until kioskd stops"
        }
    }

    /// The refusal of a change whose values could not be saved: 507 when the disk is full (or
    /// the quota used up), otherwise 500, with `refusal`'s text.
    static func refused(_ error: Error, _ subject: String, logger: Logger, refusal: (Error) -> String) -> ControlResponse {
        let errnum = (error as? KioskError)?.errno ?? 0
        logger.error("cannot save \(subject); refused", metadata: ["error": "\(error)"])
        return .error(errnum == ENOSPC || errnum == EDQUOT ? 507 : 500, refusal(error))
    }

    /// The `state` part of the status: "durable", "volatile" or "not saved" with the reason.
    func stateStatus(_ daemon: Daemon) -> StatusAnswer.State {
        let directory = daemon.config.stateDirectory
        switch daemon.state.durability {
        case .durable:
            // Saved (in the journal), but its values cannot reach their state files: say why.
            return .init(directory: directory, mode: "durable", durable: true, reason: (daemon.state as? FileStateStore)?.checkpointProblem)
        case .volatile:
            return .init(directory: directory, mode: "volatile", durable: false,
                         reason: "state = \"volatile\" in the config: values are kept in memory until kioskd stops")
        case .unavailable(let why):
            return .init(directory: directory, mode: "not saved", durable: false, reason: why)
        }
    }

    /// What `GET /status` answers.
    func status(_ daemon: Daemon) -> StatusAnswer {
        let manager = daemon.manager
        let display = daemon.display
        let s = manager.stats
        let uptime = Double(nowNanos(.monotonic) - daemon.startedNs) / 1e9
        func round3(_ v: Double) -> Double { (v * 1000).rounded() / 1000 }
        var answer = StatusAnswer(
            scene: manager.current.name,
            sceneKind: manager.current.kind,
            sceneSummary: manager.current.statusSummary,
            scenes: manager.scenes.map(\.name),
            theme: daemon.themes.activeName,
            chosenTheme: daemon.themes.chosenName,
            output: display.displayDescription,
            mode: display.logicalSize.map { "\($0.width)x\($0.height)" } ?? "none",
            rotation: display.rotation.rawValue,
            blanked: display.isBlanked,
            fps: (s.fps * 10).rounded() / 10,
            frames: s.frames,
            frameMs: .init(p50: round3(s.p50Ms), p90: round3(s.p90Ms), p99: round3(s.p99Ms), max: round3(s.maxMs)),
            uptimeSeconds: (uptime * 10).rounded() / 10,
            inputDevices: (daemon.input?.devices ?? []).map { .init(name: $0.name, sysname: $0.sysname, capabilities: $0.capabilities.names) },
            config: daemon.config.file,
            state: stateStatus(daemon))
        answer.version = KioskVersion.current
        answer.frameGapMs = .init(lastMinute: (s.maxGapLastMinuteMs * 10).rounded() / 10, sinceStart: (s.maxGapMs * 10).rounded() / 10)
        do {
            let p = daemon.pipeline.stats
            answer.commits = .init(changes: p.changed, refused: p.refused, batches: p.commits, largestBatch: p.largestBatch)
        }
        daemon.wallStatus(into: &answer)
        let warnings = daemon.warnings()
        answer.warnings = warnings.isEmpty ? nil : warnings
        answer.outputs = daemon.withTruth(daemon.withCEC(outputs(daemon)))
        answer.pairing = daemon.pairing?.report
        answer.setup = daemon.pairing?.setupStatus
        answer.audio = daemon.horn?.status
        answer.clocks = daemon.clockAnswers(at: daemon.manager.time.now())
        return answer
    }

    /// Every output: its name, display, size, rotation, blanking, scene, theme and frames.
    func outputs(_ daemon: Daemon) -> [OutputsAnswer.Output] {
        daemon.heads.map { h in
            let d = h.display, m = h.manager, shown = d.shownFrames
            return .init(description: d.displayDescription, logicalSize: d.logicalSize.map { "\($0.width)x\($0.height)" },
                         rotation: d.rotation.rawValue, blanked: d.isBlanked, name: h.name, scene: m.current.name,
                         scenes: m.scenes.map(\.name), theme: h.themes.activeName, frames: m.frameCount,
                         fps: (m.stats.fps * 10).rounded() / 10, lastFrameShown: shown?.lastRealtimeNs.map(ShownFrames.utc),
                         framesShownLastMinute: shown?.lastMinute, error: shown?.error)
        }
    }
}
