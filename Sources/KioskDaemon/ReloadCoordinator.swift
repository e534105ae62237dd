import FoundationEssentials
import Glibc
import KioskConfig
import KioskCore
import KioskScenes
import KioskState
import Logging

/// Reads the config file again and applies it to a running daemon in order: scenes made first
/// (a bad config changes nothing), then gestures, cursor, blanking, the scenes and the theme.
/// Changes that only take effect at the next start are named in the answer. Runs on the render
/// loop's thread.
struct ReloadCoordinator {
    let environment: [String: String]

    /// What a reload reads from disk — the config file (with the theme files it names) and the
    /// theme chosen at run time — read off the loop by `read`, applied by `reload(_:reading:)`.
    struct Reading: Sendable {
        var config: Handoff<Result<DaemonConfig, Error>>
        /// The theme chosen at run time (its name), read from the new config's theme directory.
        var chosen: (name: String, theme: Result<Theme, Error>)?
    }

    /// Reads what a reload of `file` needs, on any thread; with `state`, also moves the values
    /// its counters have under old keys (`StateMigration`) before the scenes are made.
    static func read(file: String, environment: [String: String], kinds: [String], chosenTheme: String,
                     settings: SettingsLayer = SettingsLayer(), state: FileStateStore?, logger: Logger) -> Reading {
        var chosen: (name: String, theme: Result<Theme, Error>)?
        let config: Result<DaemonConfig, Error>
        do {
            let c = try DaemonConfig.load(path: file, environment: environment, kinds: kinds, settings: settings)
            let directory = c.themeDirectory
            chosen = (chosenTheme, Result { try ThemeLoader.load(named: chosenTheme, directory: directory) })
            if let state, state.durability == .durable {
                _ = StateMigration.migrate(StateMigration.counters(of: c.scenes), state: state, logger: logger)
            }
            config = .success(c)
        } catch {
            config = .failure(error)
        }
        return Reading(config: Handoff(config), chosen: chosen)
    }

    /// Reloads `daemon`'s config file; a bad config is reported (file:line:key) and the running
    /// one kept. With `reading`, the files were read already (off the loop).
    func reload(_ daemon: Daemon, reading: Reading? = nil) -> Result<String, KioskError> {
        daemon.loop.assertInLoop()
        let config = daemon.config
        let logger = daemon.logger
        let state = daemon.state
        do {
            let new = try reading?.config.take()?.get() ?? DaemonConfig.load(path: config.file, environment: environment, kinds: daemon.registry.kinds,
                                                                                            settings: daemon.settings.applied)
            let outputNames = new.outputs.map(\.name)
            guard outputNames == daemon.heads.map(\.name) else {
                throw KioskError.config("\(new.file): the outputs changed (\(daemon.heads.map(\.name).joined(separator: ", ")) → \(outputNames.joined(separator: ", "))); they take effect at a restart (systemctl restart kioskd); the running config stays")
            }
            let perOutput = try Daemon.makeOutputScenes(new, registry: daemon.registry, state: state, intents: daemon.counterIntents, logger: logger)
            var notes: [String] = []
            if new.display != config.display { notes.append("[display] changes take effect at the next start") }
            if new.input != config.input { notes.append("[input] changes take effect at the next start") }
            if new.control != config.control { notes.append("[control] changes take effect at the next start") }
            if new.stateDirectory != config.stateDirectory { notes.append("state_dir changes take effect at the next start") }
            if new.stateMode != config.stateMode { notes.append("state changes take effect at the next start") }
            // The fleet keeps the group, role and counters it started with.
            var oldFleet = config.fleet, newFleet = new.fleet
            oldFleet?.countersLocation = nil
            newFleet?.countersLocation = nil
            if oldFleet != newFleet { notes.append("[fleet] changes take effect at the next start") }
            // The config's theme wins when it changed; otherwise a theme chosen at run time stays.
            // Either way it is read again, so edits to its file apply.
            let theme: Theme
            var themeName = daemon.themes.chosenName
            if new.themeName != config.themeName || themeName == new.themeName {
                theme = new.theme
                themeName = new.themeName
                let saves = [(key: Daemon.themeKey, value: new.themeName), (key: Daemon.themeConfigKey, value: new.themeName)]
                let keeps: Bool
                if case .unavailable = state.durability { keeps = false } else { keeps = true }
                if keeps {
                    // Not waited for: the reload's answer does not promise it (as before, when a
                    // failure here went unreported); a failure is logged. Volatile state keeps it
                    // in memory the same way.
                    daemon.pipeline.submitWrites(saves, delivery: .here) { outcome in
                        if case .refused(let e) = outcome { logger.error("cannot save the config's theme after the reload", metadata: ["error": "\(e)"]) }
                    }
                }
            } else if let chosen = reading?.chosen, chosen.name == themeName {
                theme = try chosen.theme.get()
            } else {
                theme = try ThemeLoader.load(named: themeName, directory: new.themeDirectory)
            }
            daemon.config = new
            if new.audio != config.audio { daemon.reloadHorn() }
            // Home Assistant's name for the kiosk: the discovery again, on the same connection.
            if new.mqtt?.deviceName != config.mqtt?.deviceName { daemon.mqtt?.rename(new.mqtt?.deviceName) }
            for (i, head) in daemon.heads.enumerated() {
                let output = new.outputs[i]
                head.settings = output
                head.manager.gestureRecognizer = GestureRecognizer(thresholds: new.gestures)
                head.manager.showsCursor = new.input.cursor && i == Daemon.keysOutputIndex(new)
                // The backlight and the brightness schedule are the first output's.
                try head.blanking.update(settings: output.blankSettings(new.display), wall: i == 0 ? new.wall : WallDisplaySettings())
                head.manager.pixelOrbit = new.wall.pixelOrbit
                let own = output.theme.map { (output.themeName ?? "", $0) }
                head.manager.replaceScenes(perOutput[i], switching: new.switching, theme: own?.1 ?? theme)
                head.themes.reloaded(chosenName: own?.0 ?? themeName, chosen: own?.1 ?? theme, schedule: own == nil ? new.themeSchedule : [])
            }
            if new.wall.backlight != config.wall.backlight || new.wall.ambient != config.wall.ambient {
                notes.append("[display] backlight and [display.ambient] changes take effect at the next start")
            }
            // The pipeline decides the new scenes' counters; the fleet shows its values on them.
            daemon.scenesReplaced()
            let scenes = daemon.allScenes
            let msg = "reloaded \(new.file): scenes \(scenes.map(\.name).joined(separator: ", ")), theme \(themeName)"
                + (notes.isEmpty ? "" : "; " + notes.joined(separator: "; "))
            logger.notice("\(msg)")
            daemon.publishStatus()
            return .success(msg)
        } catch {
            let e = (error as? KioskError) ?? KioskError.config("\(config.file): \(error)")
            logger.error("config reload failed; keeping the running config", metadata: ["error": "\(e.message)"])
            return .failure(e)
        }
    }
}
