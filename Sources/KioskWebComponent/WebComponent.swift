import FoundationEssentials
import Glibc
import KioskComponent
import KioskConfig
import KioskControl
import KioskControlServer
import KioskCore
import KioskHTTP
import KioskPosix
import KioskState
import KioskWeb
import Logging

/// The phone page's side in the daemon, a component: the pairing book (codes, paired devices),
/// `web.pair_key` and `web.pair_gesture` on the screen, the live streams, and the web server's
/// way to the render loop (`WebComponentBackend`). Made with the daemon (the web server is made
/// before the loop runs); what comes from the server before `start` waits for it. On the render loop.
public final class WebComponent: DaemonComponent {
    public var componentName: String { "web" }
    public let settings: WebSettings
    /// Pairing codes and paired phones.
    public let pairing: PairingBook
    private let loop: any KioskLoop
    private let logger: Logger
    private let time: TimeSource
    /// The theme's colours for the page (nil: the daemon is gone).
    private let palette: () -> PaletteAnswer?
    private var context: ComponentContext?
    /// Work from the web server that came before `start`, run then.
    private var waiting: [(ComponentContext) -> Void] = []
    /// `web.pair_gesture`'s recogniser and the timer armed for its hold (nil: no gesture).
    private var gesture: PairGesture?
    private var gestureTimer: TimerID?
    private var sinks: [Int: (device: String, sink: @Sendable (WebEvent) -> Void, closed: @Sendable () -> Void)] = [:]
    private var nextSink = 0
    private var observer: Int?
    private var lastTheme: String?

    /// `prompt` shows (nil: takes off) the pairing code on every screen; `commit` keeps a
    /// paired device's record through the daemon's command pipeline (answered once on disk).
    public init(settings: WebSettings, state: StateStore, loop: any KioskLoop, time: TimeSource, logger: Logger,
                palette: @escaping () -> PaletteAnswer?, prompt: @escaping (PairingPrompt?) -> Void,
                commit: @escaping (_ writes: [(key: String, value: String)], _ done: @escaping (Error?) -> Void) -> Void) {
        self.settings = settings
        self.loop = loop
        self.time = time
        self.logger = logger
        self.palette = palette
        pairing = PairingBook(settings: settings, state: state, scheduler: loop, logger: logger, commit: commit)
        pairing.onPrompt = prompt
        gesture = settings.pairGesture.map(PairGesture.init)
        pairing.onRevoke = { [weak self] name in self?.revoked(name) }
    }

    public func start(context: ComponentContext) {
        self.context = context
        pairing.offerSetupIfNeeded()
        let w = waiting
        waiting.removeAll()
        for body in w { body(context) }
    }

    public func stop(then done: @escaping () -> Void) {
        if let id = gestureTimer { loop.cancel(id); gestureTimer = nil }
        if let o = observer { context?.changes.remove(o); observer = nil }
        done()
    }

    /// Runs `body` with the context: now when started, else at `start`.
    func withContext(_ body: @escaping (ComponentContext) -> Void) {
        if let context { body(context) } else { waiting.append(body) }
    }

    // MARK: - On the screen

    /// An input event the pairing takes (it goes no further): `web.pair_key` or `web.pair_gesture`.
    public func input(_ e: InputEvent) -> Bool { pairingKey(e) || pairingGesture(e) }

    /// `web.pair_key` pressed: an operator code on the screen (the key goes no further).
    func pairingKey(_ e: InputEvent) -> Bool {
        guard let key = settings.pairKey, case .key(key, let state, _) = e else { return false }
        if state == .pressed { _ = pairing.pair(role: .operator, show: true) }
        return true
    }

    /// `web.pair_gesture`: a touch that starts in the pairing corner goes no further; held there
    /// long enough it opens an operator code on the screen (at the next touch event or the timer,
    /// whichever comes first).
    func pairingGesture(_ e: InputEvent) -> Bool {
        guard var g = gesture, case .touch(let t) = e else { return false }
        let (swallow, open) = g.feed(t)
        gesture = g
        if open { openPairingFromGesture() }
        armGestureTimer()
        return swallow
    }

    private func openPairingFromGesture() {
        logger.info("pairing gesture: an operator code is shown on the screen")
        _ = pairing.pair(role: .operator, show: true)
    }

    /// A timer for the hold's deadline (touches carry CLOCK_MONOTONIC µs, as the time source does).
    private func armGestureTimer() {
        if let id = gestureTimer { loop.cancel(id); gestureTimer = nil }
        guard let deadline = gesture?.nextDeadline() else { return }
        let nowUsec = time.now().monotonicUsec
        let delayNs = deadline > nowUsec ? Int64(deadline - nowUsec) * 1000 : 0
        gestureTimer = try? loop.schedule(after: delayNs) { [weak self] _ in
            guard let self else { return }
            self.gestureTimer = nil
            if self.gesture?.advance(toUsec: self.time.now().monotonicUsec) == true { self.openPairingFromGesture() }
            self.armGestureTimer()
        }
    }

    // MARK: - Live streams: one change feed observer while any is open, the state and theme
    // encoded once per change and handed to every stream.

    func open(device: String, sink: @escaping @Sendable (WebEvent) -> Void, closed: @escaping @Sendable () -> Void) -> Int {
        guard let context, let state = context.kioskState() else { closed(); return 0 }
        nextSink += 1
        sinks[nextSink] = (device, sink, closed)
        sink(stateEvent(state))
        sink(WebEvent(name: "theme", json: palette().flatMap { try? ControlJSON.encode($0) } ?? []))
        if observer == nil {
            lastTheme = state.theme
            observer = context.changes.observe { [weak self] s in self?.changed(s) }
        }
        return nextSink
    }

    func close(_ id: Int) {
        sinks[id] = nil
        if sinks.isEmpty, let o = observer {
            context?.changes.remove(o)
            observer = nil
        }
    }

    private func changed(_ state: KioskState) {
        var events = [stateEvent(state)]
        if state.theme != lastTheme {
            lastTheme = state.theme
            events.append(WebEvent(name: "theme", json: palette().flatMap { try? ControlJSON.encode($0) } ?? []))
        }
        for id in sinks.keys.sorted() { for e in events { sinks[id]?.sink(e) } }
    }

    /// The `state` event: the state, and `now_monotonic_ns`, the instant it is sent on the clock
    /// the game clocks' `since_monotonic_ns` are on, from which the page computes the time left
    /// at its own instant (it shows the running clock's tenths without asking again).
    func stateEvent(_ state: KioskState) -> WebEvent {
        WebEvent(name: "state", json: Self.stamped((try? ControlJSON.encode(state)) ?? [], monotonicNs: time.now().monotonicNs))
    }

    /// A JSON object with `"now_monotonic_ns": ns` as its first member (an empty or other value: as it is).
    static func stamped(_ json: [UInt8], monotonicNs ns: Int64) -> [UInt8] {
        guard json.first == UInt8(ascii: "{"), json.count > 2 else { return json }
        return [UInt8(ascii: "{")] + Array("\"now_monotonic_ns\":\(ns),".utf8) + json.dropFirst()
    }

    private func revoked(_ device: String) {
        for (id, s) in sinks where s.device == device {
            s.closed()
            close(id)
        }
    }

    /// Live streams open.
    public var streamCount: Int { sinks.count }

    // MARK: - The web server

    /// The web server of this component (its backend reaches the render loop only through it).
    public func makeServer(limits: WebLimits = WebLimits(), logger: Logger) throws -> WebServer {
        try SHA256.requireLibrary()
        let bound = LoopBound(self, loop: loop)
        let backend = WebComponentBackend(web: bound, limits: limits.control, directory: pairing.directory)
        return WebServer(settings: settings, limits: limits, backend: backend, logger: logger,
                         onListening: { port in bound.post { $0.pairing.boundPort = port } })
    }
}

/// The web server's way into the daemon: every call is carried out on the render loop, a
/// command by the control socket's deadline rule (`ControlJob`: not started within
/// `requestTimeout`, 503 and never carried out; started but not finished, 504).
struct WebComponentBackend: WebBackend {
    let web: LoopBound<WebComponent>
    let limits: ControlLimits
    let directory: DeviceDirectory

    func run(_ command: ControlCommand) async -> ControlResponse {
        let limits = self.limits, web = self.web
        return await withCheckedContinuation { c in
            let job = ControlJob(command: command, limits: limits, clock: .shared) { response, _ in
                c.resume(returning: command == .status ? WebComponentBackend.withoutSetupCode(response) : response)
            }
            web.post { w in w.withContext { context in job.run { cmd, reply in context.handle(cmd, reply) } } }
        }
    }

    /// The status as the page may read it: without the setup code and its URL (which pair an
    /// owner), which only the control socket gives.
    static func withoutSetupCode(_ response: ControlResponse) -> ControlResponse {
        guard response.status == 200, var s = try? ControlJSON.decode(StatusAnswer.self, from: response.body), s.setup?.code != nil else { return response }
        s.setup?.code = nil
        s.setup?.url = nil
        return .json(200, s)
    }

    /// Checked without the render loop (a busy loop must not hold the request past its
    /// deadline); the last use is noted on the loop afterwards.
    func device(token: String) async -> WebDevice? {
        let hash = SHA256.hex(Array(token.utf8))
        guard let device = directory.device(hash: hash) else { return nil }
        web.post { w in w.pairing.noteUse(hash: hash) }
        return device
    }

    func redeem(code: String, name: String, client: String) async -> WebRedeemResult {
        await withCheckedContinuation { c in
            web.post { w in w.pairing.redeem(code: code, name: name, client: client) { c.resume(returning: $0) } }
        }
    }

    func openStream(device: WebDevice, sink: @escaping @Sendable (WebEvent) -> Void, closed: @escaping @Sendable () -> Void) async -> Int {
        await withCheckedContinuation { c in
            web.post { w in w.withContext { _ in c.resume(returning: w.open(device: device.name, sink: sink, closed: closed)) } }
        }
    }

    func closeStream(_ id: Int) {
        web.post { w in w.close(id) }
    }
}
