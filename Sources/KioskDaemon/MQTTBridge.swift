import Foundation
import KioskControl
import KioskCore
import KioskMQTT
import KioskPosix
import Logging

/// The kiosk on an MQTT broker: publishes its state (scene, theme, counters, panel, status) as
/// retained topics under `kioskd/ID/`, carries out the commands sent to `…/set` (and a counter's
/// `inc`, `dec`, `reset`) through `Daemon.handle(_:reply:)` like every other transport, and
/// announces itself to Home Assistant (device-based discovery). Runs on the daemon's loop.
///
/// State is published when it differs from what was last published on this connection: after
/// every change (`Daemon.changes`), whatever made it. On every connect, and when Home Assistant
/// says `online` on `PREFIX/status`, discovery and every state are published again. A refused
/// command publishes the control API's message on `kioskd/ID/error` and changes nothing.
public final class MQTTBridge {
    public let client: MQTTClient
    public let config: MQTTConfig
    public let topics: KioskTopics
    /// Called on the loop after every connect, once this bridge has published its state.
    public var onConnected: [() -> Void] = []
    /// Called on the loop after every change of the client's state (the client's own
    /// `onStateChange` is the bridge's: add handlers here instead).
    public var onStateChange: [(MQTTClient.State) -> Void] = []
    /// Messages published by the bridge that the broker has not acknowledged yet (QoS 1).
    public private(set) var unacknowledged = 0
    /// Seconds between status publications (besides the one after a change of scene, theme or panel).
    public var statusInterval: Double = 30

    private weak var daemon: Daemon?
    private let loop: EventLoop
    private let logger: Logger
    private var started = false
    private var observer: Int?
    private var statusTimer: TimerID?
    /// Retained payloads published on this connection, by topic.
    private var published: [String: [UInt8]] = [:]
    private var themes: [String] = []
    private var skippedCounters: Set<String> = []
    private var loggedRetainedCommand = false
    private var lastStatusKey: String?

    /// Makes the client (nothing is sent before `start`).
    public init(daemon: Daemon, config: MQTTConfig, logger: Logger) throws {
        self.daemon = daemon
        self.loop = daemon.loop
        self.config = config
        self.logger = logger
        self.topics = KioskTopics(id: config.id)
        client = try MQTTClient(config: config, loop: daemon.loop, logger: logger)
    }

    /// Adds a handler called after every connect (see `onConnected`).
    public func addConnectHandler(_ handler: @escaping () -> Void) { onConnected.append(handler) }

    /// Subscribes to the command topics and Home Assistant's status, and connects. On the loop.
    public func start() {
        loop.assertInLoop()
        guard !started, let daemon else { return }
        started = true
        client.onStateChange = { [weak self] state in
            guard let self else { return }
            if state == .connected { self.connected() }
            for h in self.onStateChange { h(state) }
        }
        client.subscribe(topics.setFilter) { [weak self] m in self?.received(m) }
        client.subscribe(topics.counterFilter) { [weak self] m in self?.received(m) }
        client.subscribe("\(config.discoveryPrefix)/status") { [weak self] m in
            guard let self, m.text == "online", self.client.state == .connected else { return }
            self.logger.info("Home Assistant is online: publishing discovery and state again")
            self.publishAll()
        }
        observer = daemon.changes.observe { [weak self] state in self?.changed(state) }
        scheduleStatus()
        client.start()
    }

    /// Publishes `offline`, disconnects, then calls `completion` (on the loop): once the
    /// DISCONNECT is written, or after `timeout` seconds at the latest (a broker that does not
    /// answer never holds up a stop).
    public func stop(timeout: Double = 2, completion: @escaping () -> Void) {
        loop.assertInLoop()
        if let o = observer { daemon?.changes.remove(o); observer = nil }
        if let t = statusTimer { loop.cancel(t); statusTimer = nil }
        var done = false
        var guardTimer: TimerID?
        let loop = self.loop, logger = self.logger
        let finish = {
            guard !done else { return }
            done = true
            if let t = guardTimer { loop.cancel(t) }
            completion()
        }
        guardTimer = try? loop.schedule(after: Int64(timeout * 1e9)) { _ in
            guardTimer = nil
            if !done { logger.warning("MQTT: the broker did not take the disconnect within \(timeout) s; stopping anyway") }
            finish()
        }
        client.stop { finish() }
    }

    // MARK: - Publishing

    private func connected() {
        publishAll()
        for h in onConnected { h() }
    }

    /// Discovery, every state and the status, as if nothing had been published yet.
    private func publishAll() {
        guard let daemon else { return }
        published.removeAll()
        lastStatusKey = nil // the status goes out with the states
        themes = ThemeLoader.available(in: daemon.config.themeDirectory)
        changed(daemon.kioskState())
    }

    private func changed(_ state: KioskState) {
        guard client.state == .connected, let daemon else { return }
        var counters: [KioskState.Counter] = []
        for c in state.counters where !counters.contains(where: { $0.name == c.name }) {
            if let problem = KioskTopics.counterNameProblem(c.name) {
                if skippedCounters.insert(c.name).inserted {
                    logger.warning("MQTT: counter \"\(c.name)\" \(problem); it is not published")
                }
                continue
            }
            counters.append(c)
        }
        if !themes.contains(state.theme) { themes = (themes + [state.theme]).sorted() }
        let discovery = HADiscovery(id: config.id, prefix: config.discoveryPrefix, scenes: state.scenes, themes: themes,
                                    counters: counters.map { .init(name: $0.name, label: $0.label, minimum: $0.minimum, maximum: $0.maximum) })
        retain(discovery.topic, discovery.json())
        retain(topics.scene, Array(state.scene.utf8))
        retain(topics.theme, Array(state.theme.utf8))
        retain(topics.blank, Array((state.blanked ? "ON" : "OFF").utf8))
        for c in counters { retain(topics.counter(c.name), Array(String(c.value).utf8)) }
        // The status names the scene, theme and panel's output: published again when they change.
        let key = "\(state.scene)|\(state.theme)|\(state.blanked)|\(daemon.display.displayDescription)|\(state.timeSynced)|\(daemon.warnings())"
        if key != lastStatusKey { publishStatus() }
    }

    /// Publishes a retained state when it differs from what was last published.
    private func retain(_ topic: String, _ payload: [UInt8]) {
        guard published[topic] != payload else { return }
        published[topic] = payload
        send(topic, payload, retain: true)
    }

    private func send(_ topic: String, _ payload: [UInt8], retain: Bool) {
        unacknowledged += 1
        client.publish(topic, payload, qos: 1, retain: retain) { [weak self] _ in self?.unacknowledged -= 1 }
    }

    /// `kioskd/ID/status`: JSON with fps, frame time p99 (ms), frames, uptime (s), output,
    /// scene, theme and panel.
    private func publishStatus() {
        guard client.state == .connected, let daemon else { return }
        let s = daemon.status()
        lastStatusKey = "\(s.scene)|\(s.theme)|\(s.blanked)|\(s.output)|\(daemon.manager.timeSynchronized)|\(s.warnings ?? [])"
        var object: [String: Any] = [
            "fps": s.fps, "frame_ms_p99": s.frameMs.p99, "frames": s.frames, "uptime_s": s.uptimeSeconds,
            "output": s.output, "scene": s.scene, "theme": s.theme, "blanked": s.blanked,
        ]
        if let g = s.frameGapMs {
            object["frame_gap_ms"] = g.lastMinute
            object["frame_gap_ms_max"] = g.sinceStart
        }
        if let t = s.timeSync { object["time_synced"] = t.synchronized }
        if let w = s.warnings { object["warnings"] = w }
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        published[topics.status] = Array(data)
        send(topics.status, Array(data), retain: true)
    }

    private func scheduleStatus() {
        statusTimer = try? loop.schedule(after: Int64(statusInterval * 1e9)) { [weak self] _ in
            guard let self else { return }
            self.publishStatus()
            self.scheduleStatus()
        }
    }

    // MARK: - Commands

    private func received(_ m: MQTTClient.Message) {
        guard let daemon else { return }
        if m.retained {
            // A retained command would be carried out again at every reconnect.
            if !loggedRetainedCommand {
                logger.warning("MQTT: ignored a retained command on \(m.topic); publish commands without the retain flag")
                loggedRetainedCommand = true
            }
            return
        }
        let levels = m.topic.dropFirst(topics.base.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        switch MQTTBridge.command(levels: levels, payload: m.text) {
        case .failure(let e):
            publishError(e.message)
        case .success(.none):
            return // a state topic of ours, not a command
        case .success(.some(let command)):
            daemon.handle(command) { [weak self] response in
                guard response.status >= 400 else { return }
                self?.publishError(response.errorMessage ?? "refused (HTTP \(response.status))")
            }
        }
    }

    private func publishError(_ message: String) {
        logger.notice("MQTT command refused: \(message)")
        send(topics.error, Array(message.utf8), retain: false)
    }

    public struct CommandError: Error, Equatable {
        public var message: String
    }

    /// The control command for the topic levels after `kioskd/ID/` and a payload: `scene/set`,
    /// `theme/set` (a name), `blank/set` (`ON`/`OFF`), `counter/NAME/set` (an integer),
    /// `counter/NAME/inc`, `dec`, `reset` (any payload). nil: not a command topic.
    /// The payload is read (converted to text) only for the topics that use it (`…/set`).
    public static func command(levels: [String], payload: @autoclosure () -> String) -> Result<ControlCommand?, CommandError> {
        var converted: String?
        var text: String {
            if let c = converted { return c }
            let t = payload().trimmingCharacters(in: .whitespacesAndNewlines)
            converted = t
            return t
        }
        switch levels.count {
        case 2 where levels[1] == "set":
            switch levels[0] {
            case "scene": return .success(.scene(name: text))
            case "theme": return .success(.theme(name: text))
            case "blank":
                switch text.uppercased() {
                case "ON": return .success(.blank(on: true))
                case "OFF": return .success(.blank(on: false))
                default: return .failure(CommandError(message: "blank/set: expected ON or OFF, got \"\(text.prefix(64))\""))
                }
            default: return .success(nil)
            }
        case 3 where levels[0] == "counter":
            let name = levels[1]
            switch levels[2] {
            case "inc": return .success(.counter(name: name, op: .inc, value: nil))
            case "dec": return .success(.counter(name: name, op: .dec, value: nil))
            case "reset": return .success(.counter(name: name, op: .reset, value: nil))
            case "set":
                // Home Assistant's number entity may send "7" or "7.0".
                var digits = Substring(text)
                if let dot = digits.firstIndex(of: "."), digits[digits.index(after: dot)...].allSatisfy({ $0 == "0" }) {
                    digits = digits[..<dot]
                }
                guard let v = Int(digits) else {
                    return .failure(CommandError(message: "counter/\(name)/set: expected an integer, got \"\(text.prefix(64))\""))
                }
                return .success(.counter(name: name, op: .set, value: v))
            default: return .success(nil)
            }
        default:
            return .success(nil)
        }
    }
}
