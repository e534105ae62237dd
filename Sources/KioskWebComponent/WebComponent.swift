import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskHTTP
import KioskPosix
import KioskScenes
import KioskWeb
import Logging
import NIOCore

extension Daemon {
    /// Turns on pairing for the web server of `settings` (the code on screen, paired devices
    /// read from the state directory). Call on the loop's thread (or before it runs).
    public func enableWeb(_ settings: WebSettings) {
        let book = PairingBook(settings: settings, state: state, scheduler: loop, logger: logger)
        book.onPrompt = { [weak self] p in for h in self?.heads ?? [] { h.manager.pairingPrompt = p } }
        let live = WebLive(daemon: self)
        book.onRevoke = { [weak live] name in live?.revoked(name) }
        book.commit = { [weak self] key, value, done in
            guard let self else { return false }
            self.commitThroughPipeline([(key, value)], done: done)
            return true
        }
        pairing = book
        webLive = live
        pairGesture = settings.pairGesture.map(PairGesture.init)
    }

    /// `web.pair_key` pressed: an operator code on the screen (the key goes no further).
    func pairingKey(_ e: InputEvent) -> Bool {
        guard let pairing, let key = pairing.settings.pairKey, case .key(key, let state, _) = e else { return false }
        if state == .pressed { _ = pairing.pair(role: .operator, show: true) }
        return true
    }

    /// `web.pair_gesture`: a touch that starts in the pairing corner goes no further; held there
    /// long enough it opens an operator code on the screen (at the next touch event or the timer,
    /// whichever comes first).
    func pairingGesture(_ e: InputEvent) -> Bool {
        guard pairing != nil, var g = pairGesture, case .touch(let t) = e else { return false }
        let (swallow, open) = g.feed(t)
        pairGesture = g
        if open { openPairingFromGesture() }
        armPairGestureTimer()
        return swallow
    }

    private func openPairingFromGesture() {
        logger.info("pairing gesture: an operator code is shown on the screen")
        _ = pairing?.pair(role: .operator, show: true)
    }

    /// A timer for the hold's deadline (touches carry CLOCK_MONOTONIC µs, as the time source does).
    private func armPairGestureTimer() {
        if let id = pairGestureTimer { loop.cancel(id); pairGestureTimer = nil }
        guard let deadline = pairGesture?.nextDeadline() else { return }
        let nowUsec = manager.time.now().monotonicUsec
        let delayNs = deadline > nowUsec ? Int64(deadline - nowUsec) * 1000 : 0
        pairGestureTimer = try? loop.schedule(after: delayNs) { [weak self] _ in
            guard let self else { return }
            self.pairGestureTimer = nil
            if self.pairGesture?.advance(toUsec: self.manager.time.now().monotonicUsec) == true { self.openPairingFromGesture() }
            self.armPairGestureTimer()
        }
    }

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
            return String(format: "#%02X%02X%02X", v.r, v.g, v.b)
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

/// The live streams' side in the daemon (on the loop's thread): one `ChangeFeed` observer while
/// any stream is open, the state and theme encoded once per change and handed to every stream.
final class WebLive {
    private weak var daemon: Daemon?
    private var sinks: [Int: (device: String, sink: @Sendable (WebEvent) -> Void, closed: @Sendable () -> Void)] = [:]
    private var nextID = 0
    private var observer: Int?
    private var lastTheme: String?

    init(daemon: Daemon) { self.daemon = daemon }

    func open(device: String, sink: @escaping @Sendable (WebEvent) -> Void, closed: @escaping @Sendable () -> Void) -> Int {
        guard let daemon else { closed(); return 0 }
        nextID += 1
        sinks[nextID] = (device, sink, closed)
        let state = daemon.kioskState()
        sink(WebEvent(name: "state", json: (try? ControlJSON.encode(state)) ?? []))
        sink(WebEvent(name: "theme", json: (try? ControlJSON.encode(daemon.paletteAnswer())) ?? []))
        if observer == nil {
            lastTheme = daemon.activeThemeName
            observer = daemon.changes.observe { [weak self] s in self?.changed(s) }
        }
        return nextID
    }

    func close(_ id: Int) {
        sinks[id] = nil
        if sinks.isEmpty, let o = observer {
            daemon?.changes.remove(o)
            observer = nil
        }
    }

    private func changed(_ state: KioskState) {
        guard let daemon else { return }
        let json = (try? ControlJSON.encode(state)) ?? []
        var events = [WebEvent(name: "state", json: json)]
        if state.theme != lastTheme {
            lastTheme = state.theme
            events.append(WebEvent(name: "theme", json: (try? ControlJSON.encode(daemon.paletteAnswer())) ?? []))
        }
        for id in sinks.keys.sorted() { for e in events { sinks[id]?.sink(e) } }
    }

    func revoked(_ device: String) {
        for (id, s) in sinks where s.device == device {
            s.closed()
            close(id)
        }
    }

    var count: Int { sinks.count }
}

/// The web server's way into the daemon: every call is carried out on the render loop, a
/// command by the control socket's deadline rule (`ControlJob`: not started within
/// `requestTimeout`, 503 and never carried out; started but not finished, 504).
struct DaemonWebBackend: WebBackend {
    let daemon: LoopBound<Daemon>
    let limits: ControlLimits
    let directory: DeviceDirectory

    private func onLoop<T: Sendable>(_ body: @escaping @Sendable (Daemon) -> T) async -> T {
        await withCheckedContinuation { c in daemon.post { d in c.resume(returning: body(d)) } }
    }

    func run(_ command: ControlCommand) async -> ControlResponse {
        let limits = self.limits, daemon = self.daemon
        return await withCheckedContinuation { c in
            let job = ControlJob(command: command, limits: limits, clock: .shared) { response, _ in c.resume(returning: response) }
            daemon.post { d in job.run { cmd, reply in d.handle(cmd, reply: reply) } }
        }
    }

    /// Checked without the render loop (a busy loop must not hold the request past its
    /// deadline); the last use is noted on the loop afterwards.
    func device(token: String) async -> WebDevice? {
        let hash = SHA256.hex(Array(token.utf8))
        guard let device = directory.device(hash: hash) else { return nil }
        daemon.post { d in d.pairing?.noteUse(hash: hash) }
        return device
    }

    func redeem(code: String, name: String, client: String) async -> WebRedeemResult {
        await withCheckedContinuation { c in
            daemon.post { d in
                guard let pairing = d.pairing else { c.resume(returning: .refused(.error(404, "pairing is off"))); return }
                pairing.redeem(code: code, name: name, client: client) { c.resume(returning: $0) }
            }
        }
    }

    func openStream(device: WebDevice, sink: @escaping @Sendable (WebEvent) -> Void, closed: @escaping @Sendable () -> Void) async -> Int {
        await onLoop { d in d.webLive?.open(device: device.name, sink: sink, closed: closed) ?? 0 }
    }

    func closeStream(_ id: Int) {
        daemon.post { d in d.webLive?.close(id) }
    }
}

/// Serves the phone page until shutdown. Listed after the control server, so it stops first
/// (its live streams end, the listener closes), before the render loop stops.
public enum WebService {
    /// The web server for `daemon` (pairing turned on).
    public static func make(settings: WebSettings, limits: WebLimits = WebLimits(), daemon: Daemon, logger: Logger) throws -> WebServer {
        try SHA256.requireLibrary()
        daemon.enableWeb(settings)
        let bound = LoopBound(daemon, loop: daemon.loop)
        let backend = DaemonWebBackend(daemon: bound, limits: limits.control, directory: daemon.pairing!.directory)
        return WebServer(settings: settings, limits: limits, backend: backend, logger: logger,
                         onListening: { port in bound.post { $0.pairing?.boundPort = port } })
    }
}
