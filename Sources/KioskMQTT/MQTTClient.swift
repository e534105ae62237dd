#if canImport(Glibc)
import Glibc
#endif
import CKioskLazy
import CKioskLinux
import CMosquitto
import FoundationEssentials
import KioskCore
import KioskPosix
import Logging
import Synchronization

/// An MQTT client on libmosquitto, driven by kioskd's epoll `EventLoop`: the broker socket is
/// watched by the loop, reads and writes are `mosquitto_loop_read/write`, keepalive is
/// `mosquitto_loop_misc` on a loop timer. No thread of mosquitto's own: every callback (message
/// handlers, publish completions, `onStateChange`) runs on the loop's thread, and every method
/// must be called there. (kioskd gives the client a loop and a thread of its own, `kioskd-mqtt`:
/// see `MQTTBridge`.) Other threads read the client's state, counters and queue through `view`.
///
/// MQTT 5 by default: the CONNECT tells the broker the largest packet kioskd accepts
/// (`maxMessageBytes` plus `packetHeadroom` for the topic and header), so a broker that honours
/// it never sends a larger message, and a receive maximum of `receiveMaximum` (the broker may
/// send that many QoS 1 messages before their PUBACKs, instead of its default of 20). A broker
/// that answers the MQTT 5 CONNECT with "unsupported protocol version" is spoken to in 3.1.1
/// from then on; with 3.1.1 a larger message is read by libmosquitto and dropped on arrival,
/// never copied.
///
/// The connection is kept up by itself: after `start()` the client connects, and whenever the
/// connection fails or drops it retries with exponential backoff (`backoffInitial` doubling up to
/// `backoffMax`, each delay 0–20 % shorter at random), forever. It logs once per state change,
/// not per retry. A numeric broker address never blocks the loop; a host name is resolved on a
/// short-lived thread (getaddrinfo blocks), the loop carrying on meanwhile.
///
/// The last will (`kioskd/ID/availability` = `offline`, retained, QoS 1) is registered before
/// the first connect; on every connect `online` is published retained. `stop` publishes
/// `offline` and disconnects cleanly.
///
/// The decisions (state, protocol version, backoff, takeover, queue, paused reading, stop, logs)
/// are `MQTTSession`'s; this class is its adapter to libmosquitto and the loop: it turns
/// callbacks, socket results and timers into the session's events and carries out its actions.
public final class MQTTClient {
    public typealias State = MQTTSession.State
    public typealias PublishResult = MQTTSession.PublishResult
    public typealias Counters = MQTTSession.Counters

    /// What `publish` did with the message right away.
    public enum PublishOutcome: Sendable, Equatable {
        /// Handed to libmosquitto on a live connection.
        case sent
        /// Kept in the outgoing queue until the connection is up.
        case queued
        /// Refused (the reason says why: queue full, stopped, invalid topic).
        case refused(String)
    }

    public struct Message: Sendable, Equatable {
        public var topic: String
        public var payload: [UInt8]
        public var qos: Int
        public var retained: Bool
        public var text: String { String(decoding: payload, as: UTF8.self) }
    }

    /// What other threads may read of the client (copied on every change, under a lock).
    public struct Snapshot: Sendable, Equatable {
        public var state: State = .idle
        public var counters = Counters()
        /// Messages waiting for a connection.
        public var queued = 0
        /// The MQTT version of the current (or next) connection.
        public var protocolVersion: MQTTConfig.ProtocolVersion = .v5
        /// True while reading from the broker is paused (`pauseReading`).
        public var readingPaused = false
        var duplicateWarning: String?
        var connectedNs: Int64?
        var backoffMax: Int64 = 0

        /// `MQTTClient.duplicateIDWarning`, from any thread.
        public var duplicateIDWarning: String? {
            MQTTSession.liveWarning(duplicateWarning, connectedNs: connectedNs, now: nowNanos(.monotonic), backoffMax: backoffMax)
        }
    }

    /// The client's `Snapshot`, readable from any thread.
    public final class View: Sendable {
        private let current: Mutex<Snapshot>
        init(_ s: Snapshot) { current = Mutex(s) }
        public var snapshot: Snapshot { current.withLock { $0 } }
        func update(_ body: (inout Snapshot) -> Void) { current.withLock { body(&$0) } }
    }
    public let view: View

    /// The receive maximum sent in an MQTT 5 CONNECT: QoS 1 messages the broker may send before
    /// it has their PUBACKs (the protocol's largest; libmosquitto acknowledges on reading, so
    /// these are messages on their way through the socket, not messages kioskd holds).
    public static let receiveMaximum = 65535
    /// Bytes allowed beyond `maxMessageBytes` in the maximum packet size: the fixed header,
    /// topic, packet id and properties.
    public static let packetHeadroom = 4096

    /// The maximum packet size sent in an MQTT 5 CONNECT.
    public var maximumPacketSize: UInt32 { UInt32(min(config.maxMessageBytes + Self.packetHeadroom, 268_435_460)) }

    public let config: MQTTConfig
    /// The protocol state, queue and decisions; this class carries out its actions.
    public internal(set) var session: MQTTSession
    public var state: State { session.state }
    public var counters: Counters { session.counters }
    /// Monotonic times (ns) of the last 64 connect attempts, oldest first.
    public var attemptTimes: [Int64] { session.attemptTimes }
    /// Messages waiting for a connection.
    public var queuedCount: Int { session.queue.count }
    /// The MQTT version of the current (or next) connection: `config.protocolVersion`, or 3.1.1
    /// after the broker refused MQTT 5.
    public var protocolVersion: MQTTConfig.ProtocolVersion { session.protocolVersion }
    /// True while reading is paused (`pauseReading(true)`, or too many commands wait): the
    /// broker's socket is not read (PUBACKs, keepalive and publishing go on).
    public var readingPaused: Bool { session.readingPaused }
    /// Called on every state change (after logging it).
    public var onStateChange: ((State) -> Void)?
    /// Set while another client with this client id is suspected (`TakeoverDetector`): what the
    /// status says. Cleared by a connection that outlasts the other's longest retry delay.
    public var duplicateIDWarning: String? { session.duplicateIDWarning(now: loop.now(.monotonic)) }

    let loop: any KioskLoop
    var logger: Logger
    let handle: Handle
    var random: any RandomNumberGenerator
    /// The broker socket on the loop: read, and write while libmosquitto has output pending.
    var socketWatch: WatchID?
    /// libmosquitto's socket while connected (-1: none). libmosquitto owns and closes it; kioskd only
    /// watches it on the loop and shuts it down to abandon a connect.
    var socketFD: Int32 = -1
    var wantsWrite = false
    var retryTimer: TimerID?
    var miscTimer: TimerID?
    var connectTimer: TimerID?
    /// A connect runs on a resolver thread: the mosquitto handle is that thread's until it posts back.
    var connectInFlight = false
    var stopCompletion: (() -> Void)?

    /// Completions of published messages not yet handed to libmosquitto, by `Outgoing.id`.
    var completions: [Int: (PublishResult) -> Void] = [:]
    private var lastID = 0
    /// Completions of messages handed to libmosquitto, by message id.
    var inFlight: [Int32: (qos: Int, completion: (PublishResult) -> Void)] = [:]
    /// The subscriptions' handlers (the session keeps their filters for every reconnect).
    var handlers: [(filter: String, handler: (Message) -> Void)] = []
    var flushQueued = false
    /// Whether the watch's interest leaves out `.read` now.
    var interestPaused = false
    /// The completion of the message being handed to mosquitto_publish right now.
    var sending: (qos: Int, completion: (PublishResult) -> Void)?
    let midSlot = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    /// libmosquitto is opened when the first client is made (it is not linked: kioskd without
    /// `[mqtt]` does not load it, nor the libssl and libcrypto it needs).
    private static let libraryReady: Result<Void, KioskError> = {
        if let e = kiosk_lazy_load(Int32(KIOSK_LIB_MOSQUITTO)) { return .failure(KioskError(.system, String(cString: e))) }
        return mosquitto_lib_init() == MOSQ_ERR_SUCCESS.rawValue ? .success(()) : .failure(KioskError(.system, "mosquitto_lib_init failed"))
    }()

    public init(config: MQTTConfig, loop: any KioskLoop, logger: Logger = Logger(label: "kioskd.mqtt"),
                random: any RandomNumberGenerator = SystemRandomNumberGenerator()) throws {
        try Self.libraryReady.get()
        self.config = config
        self.loop = loop
        self.logger = logger
        self.logger[metadataKey: "broker"] = "\(config.tls == nil ? "mqtt" : "mqtts")://\(config.host):\(config.port)"
        self.random = random
        session = MQTTSession(config: config)
        view = View(Snapshot(protocolVersion: config.protocolVersion, backoffMax: config.backoffMax))
        guard let mosq = mosquitto_new(config.clientID, true, nil) else {
            throw Posix.error("mosquitto_new", errno: errno)
        }
        handle = Handle(mosq)
        func check(_ rc: Int32, _ what: String) throws {
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                throw KioskError(.config, "\(what) failed: \(Self.describe(rc, errno: errno))")
            }
        }
        if config.protocolVersion == .v5 {
            try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V5)), "mosquitto_int_option(protocol 5)")
            try check(mosquitto_int_option(mosq, MOSQ_OPT_RECEIVE_MAXIMUM, Int32(Self.receiveMaximum)), "mosquitto_int_option(receive maximum)")
        } else {
            try check(mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, Int32(MQTT_PROTOCOL_V311)), "mosquitto_int_option(protocol 3.1.1)")
        }
        // Small packets (a command's PUBACK, a state) go out at once, not after Nagle's delay.
        try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "mosquitto_int_option(TCP_NODELAY)")
        let offline = Array("offline".utf8)
        try check(mosquitto_will_set(mosq, config.availabilityTopic, Int32(offline.count), offline, 1, true),
                  "mosquitto_will_set(\(config.availabilityTopic))")
        if let user = config.username {
            try check(mosquitto_username_pw_set(mosq, user, config.password), "mosquitto_username_pw_set")
        }
        if let tls = config.tls {
            try check(mosquitto_tls_set(mosq, tls.caFile, nil, tls.certFile, tls.keyFile, nil),
                      "mosquitto_tls_set(ca_file \(tls.caFile))")
        }
        handle.client = self
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(handle).toOpaque())
        mosquitto_connect_callback_set(mosq) { _, obj, rc in MQTTClient.from(obj)?.inCallback { $0.didConnect(rc) } }
        mosquitto_disconnect_callback_set(mosq) { _, obj, rc in MQTTClient.from(obj)?.inCallback { $0.didDisconnect(rc) } }
        mosquitto_publish_callback_set(mosq) { _, obj, mid in MQTTClient.from(obj)?.inCallback { $0.didPublish(mid) } }
        mosquitto_log_callback_set(mosq) { _, obj, level, text in
            guard level & MOSQ_LOG_ERR != 0, let text, let obj else { return }
            Unmanaged<Handle>.fromOpaque(obj).takeUnretainedValue().setLastError(String(cString: text))
        }
        mosquitto_message_callback_set(mosq) { _, obj, msg in
            guard let msg else { return }
            MQTTClient.from(obj)?.inCallback { $0.didReceive(msg.pointee) }
        }
    }

    /// How deep the loop's thread is in libmosquitto's callbacks. libmosquitto holds its callback
    /// lock while a callback runs, and writing to the socket from there (`mosquitto_loop_write`)
    /// can call a callback again and wait for that lock for ever: a message handler that publishes
    /// froze the loop. Inside a callback, output only registers write interest; it is written
    /// when the callback has returned (after `mosquitto_loop_read`, or at the end of the iteration).
    var callbackDepth = 0

    private func inCallback(_ body: (MQTTClient) -> Void) {
        callbackDepth += 1
        defer { callbackDepth -= 1 }
        body(self)
    }

    deinit {
        if let t = retryTimer { loop.cancel(t) }
        if let t = miscTimer { loop.cancel(t) }
        if let t = connectTimer { loop.cancel(t) }
        if let w = socketWatch { loop.unwatch(w) }
        midSlot.deallocate()
        // A resolver thread still connecting keeps the handle alive (and destroys it when done);
        // its callbacks find no client (a weak reference) and only the log callback can run there.
    }

    /// The client of a callback's user data; callbacks other than the log run inside
    /// mosquitto_loop_* on the loop's thread.
    private static func from(_ obj: UnsafeMutableRawPointer?) -> MQTTClient? {
        obj.map { Unmanaged<Handle>.fromOpaque($0).takeUnretainedValue().client } ?? nil
    }

    // MARK: - Public API

    /// Starts connecting (and keeps the connection up until `stop`).
    public func start() {
        loop.assertInLoop()
        fire(.start(now: loop.now(.monotonic)))
    }

    /// Publishes `payload` on `topic`. On a live connection it goes to the broker now; otherwise
    /// it waits in the outgoing queue (at most `queueLimit` messages; a retained message replaces
    /// a queued retained message on the same topic, since only the newest state matters). When
    /// the queue is full the new message is refused, not an older one dropped: the caller learns
    /// it at once. `completion` gets the end result: `.acknowledged` (QoS 1 PUBACK), `.sent`
    /// (QoS 0 written) or `.dropped(reason)`.
    @discardableResult
    public func publish(_ topic: String, _ payload: [UInt8], qos: Int = 1, retain: Bool = false,
                        completion: ((PublishResult) -> Void)? = nil) -> PublishOutcome {
        loop.assertInLoop()
        lastID += 1
        let id = lastID
        if let completion { completions[id] = completion }
        var outcome = PublishOutcome.queued
        for action in events(.publish(.init(id: id, topic: topic, payload: payload, qos: qos, retain: retain))) {
            switch action {
            case .send(let p) where p.id == id:
                outcome = send(p) ? .sent : .refused("libmosquitto refused \"\(topic)\"")
            case .complete(id, .dropped(let reason)):
                outcome = .refused(reason)
                perform(action)
            default:
                perform(action)
            }
        }
        return outcome
    }

    @discardableResult
    public func publish(_ topic: String, _ text: String, qos: Int = 1, retain: Bool = false,
                        completion: ((PublishResult) -> Void)? = nil) -> PublishOutcome {
        publish(topic, Array(text.utf8), qos: qos, retain: retain, completion: completion)
    }

    /// Calls `handler` for every message whose topic matches `filter` (MQTT wildcards `+`, `#`).
    /// The subscription is renewed on every reconnect.
    public func subscribe(_ filter: String, qos: Int = 1, _ handler: @escaping (Message) -> Void) {
        loop.assertInLoop()
        handlers.append((filter, handler))
        fire(.subscribe(filter: filter, qos: qos))
    }

    /// Publishes `offline` (retained), disconnects cleanly (the broker then discards the last
    /// will) and stops retrying. `completion` runs once the DISCONNECT is written, or at once when
    /// not connected. Queued messages are dropped (their completions say so).
    public func stop(completion: (() -> Void)? = nil) {
        loop.assertInLoop()
        guard !session.stopping, state != .stopped else { completion?(); return }
        stopCompletion = completion
        fire(.stop)
    }

    /// Stops (true) or resumes (false) reading the broker's socket: what the broker sends waits
    /// in the socket and then at the broker, within the broker's limits (for an MQTT 5
    /// connection `receiveMaximum` messages in flight, then its `max_queued_messages`, beyond
    /// which the broker drops them). PUBACKs, keepalive pings and publishing go on; a pause
    /// longer than the keepalive makes libmosquitto drop the connection (then it reconnects).
    public func pauseReading(_ paused: Bool) {
        loop.assertInLoop()
        fire(.pauseReading(paused))
    }

    /// `count` received commands wait for the disk: reading pauses at
    /// `MQTTSession.maxWaitingCommands` and resumes at `MQTTSession.resumeWaitingCommands`.
    public func commandsWaiting(_ count: Int) {
        loop.assertInLoop()
        fire(.commandsWaiting(count, now: loop.now(.monotonic)))
    }
}
