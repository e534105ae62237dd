import FoundationEssentials
import KioskConfig
import KioskControl
import KioskCore
import KioskScenes
import KioskWeb
import KioskWebComponent
import Logging

extension Daemon {
    /// Turns on pairing for the web server of `settings` (the code on screen, paired devices
    /// read from the state directory): the web component, started with the others (at once when
    /// they run). Call on the loop's thread (or before it runs).
    public func enableWeb(_ settings: WebSettings) {
        let web = WebComponent(settings: settings, state: state, loop: loop, time: manager.time, logger: logger,
                               palette: { [weak self] in self?.paletteAnswer() },
                               prompt: { [weak self] p in for h in self?.heads ?? [] { h.manager.pairingPrompt = p } },
                               commit: { [weak self] writes, done in
                                   guard let self else { return done(KioskError.state("kioskd is stopping")) }
                                   self.commitThroughPipeline(writes, done: done)
                               })
        add(web)
    }

    /// The phone page's component (nil: no web server).
    public var web: WebComponent? { components.lazy.compactMap { $0 as? WebComponent }.first }

    /// Pairing codes and paired phones (nil: no web server).
    public var pairing: PairingBook? { web?.pairing }

    /// The answer to the phone page's commands (pairing, devices, themes, paintings).
    func handleWebCommand(_ command: ControlCommand) -> ControlResponse {
        let noWeb = ControlResponse.error(404, "the web server is off: add [web] with listen = \"0.0.0.0:8080\" to the config (\(config.file))")
        switch command {
        case .pair(let role, let show):
            guard let pairing else { return noWeb }
            return .json(200, pairing.pair(role: WebRole(rawValue: role) ?? .operator, show: show))
        case .devices:
            guard let pairing else { return noWeb }
            return .json(200, pairing.devicesAnswer)
        case .revokeDevice(let name):
            guard let pairing else { return noWeb }
            var answer = ControlResponse.error(500, "the revocation of '\(name)' was not answered")
            pairing.revoke(name) { answer = $0 }  // answered at once without a pipeline (Daemon.handle routes it otherwise)
            return answer
        case .recentErrors:
            return .json(200, RecentLog.shared.answer)
        case .themes:
            return .json(200, ThemesAnswer(themes: ThemeLoader.available(in: config.themeDirectory), theme: activeThemeName, chosenTheme: themeName))
        case .palette:
            return .json(200, paletteAnswer())
        case .paintings:
            return paintingsAnswer()
        case .painting(let name):
            guard let dir = paintingsDirectory() else { return .error(404, "no paint scene is configured") }
            return Daemon.paintingAnswer(directory: dir, name: name)
        default:
            return .error(500, "not a web command: \(command)")
        }
    }

    func paletteAnswer() -> PaletteAnswer {
        let p = manager.theme.palette
        func hex(_ c: Color) -> String {
            let v = c.rgb8
            return "#" + TextFormat.hex(v.r, width: 2) + TextFormat.hex(v.g, width: 2) + TextFormat.hex(v.b, width: 2)
        }
        return PaletteAnswer(theme: activeThemeName, primary: hex(p.primary), secondary: hex(p.secondary), highlight: hex(p.highlight),
                             neutral: hex(p.neutral), background: hex(p.background), text: hex(p.text))
    }

    /// The paint scene's save directory (its `save_directory`, or `<state_dir>/paintings`).
    func paintingsDirectory() -> String? {
        guard let def = config.scenes.first(where: { $0.kind == "paint" }) else { return nil }
        if case .string(let d)? = def.table.entries["save_directory"]?.value { return d }
        return Daemon.dataDirectory(config)
    }

    private func paintingsAnswer() -> ControlResponse {
        guard let dir = paintingsDirectory() else { return .error(404, "no paint scene is configured") }
        return Daemon.paintingsAnswer(directory: dir)
    }
}

/// Serves the phone page until shutdown. Listed after the control server, so it stops first
/// (its live streams end, the listener closes), before the render loop stops.
public enum WebService {
    /// The web server for `daemon` (pairing turned on).
    public static func make(settings: WebSettings, limits: WebLimits = WebLimits(), daemon: Daemon, logger: Logger) throws -> WebServer {
        try SHA256.requireLibrary()
        daemon.enableWeb(settings)
        return try daemon.web!.makeServer(limits: limits, logger: logger)
    }
}
