#if canImport(Glibc)
import Glibc
#endif
import CKioskLazy
import CKioskLinux
import CMosquitto
import Foundation
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
    public private(set) var session: MQTTSession
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

    private let loop: any KioskLoop
    private var logger: Logger
    private let handle: Handle
    private var random: any RandomNumberGenerator
    /// The broker socket on the loop: read, and write while libmosquitto has output pending.
    private var socketWatch: WatchID?
    /// libmosquitto's socket while connected (-1: none). libmosquitto owns and closes it; kioskd only
    /// watches it on the loop and shuts it down to abandon a connect.
    private var socketFD: Int32 = -1
    private var wantsWrite = false
    private var retryTimer: TimerID?
    private var miscTimer: TimerID?
    private var connectTimer: TimerID?
    /// A connect runs on a resolver thread: the mosquitto handle is that thread's until it posts back.
    private var connectInFlight = false
    private var stopCompletion: (() -> Void)?

    /// Completions of published messages not yet handed to libmosquitto, by `Outgoing.id`.
    private var completions: [Int: (PublishResult) -> Void] = [:]
    private var lastID = 0
    /// Completions of messages handed to libmosquitto, by message id.
    private var inFlight: [Int32: (qos: Int, completion: (PublishResult) -> Void)] = [:]
    /// The subscriptions' handlers (the session keeps their filters for every reconnect).
    private var handlers: [(filter: String, handler: (Message) -> Void)] = []

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
        handle.target.client = self
        mosquitto_user_data_set(mosq, Unmanaged.passUnretained(handle.target).toOpaque())
        mosquitto_connect_callback_set(mosq) { _, obj, rc in MQTTClient.from(obj)?.inCallback { $0.didConnect(rc) } }
        mosquitto_disconnect_callback_set(mosq) { _, obj, rc in MQTTClient.from(obj)?.inCallback { $0.didDisconnect(rc) } }
        mosquitto_publish_callback_set(mosq) { _, obj, mid in MQTTClient.from(obj)?.inCallback { $0.didPublish(mid) } }
        mosquitto_log_callback_set(mosq) { _, obj, level, text in
            guard level & MOSQ_LOG_ERR != 0, let text, let obj else { return }
            Unmanaged<CallbackTarget>.fromOpaque(obj).takeUnretainedValue().setLastError(String(cString: text))
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
    private var callbackDepth = 0

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
        obj.map { Unmanaged<CallbackTarget>.fromOpaque($0).takeUnretainedValue().client } ?? nil
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

    // MARK: - The session's events and actions

    /// Hands `event` to the session and publishes its new figures to `view`; returns its actions.
    private func events(_ event: MQTTSession.Event) -> [MQTTSession.Action] {
        let actions = session.handle(event)
        let s = session
        view.update {
            $0.state = s.state
            $0.counters = s.counters
            $0.queued = s.queue.count
            $0.protocolVersion = s.protocolVersion
            $0.readingPaused = s.readingPaused
            $0.duplicateWarning = s.duplicateWarning
            $0.connectedNs = s.connectedNs
        }
        return actions
    }

    private func fire(_ event: MQTTSession.Event) {
        for action in events(event) { perform(action) }
    }

    /// A random fraction (0 ..< 1) for the retry delay's jitter.
    private func jitter() -> Double { Double(random.next() >> 11) / Double(UInt64(1) << 53) }

    private func perform(_ action: MQTTSession.Action) {
        switch action {
        case .setProtocol(let v):
            _ = mosquitto_int_option(handle.mosq, MOSQ_OPT_PROTOCOL_VERSION, Int32(v == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311))
        case .connect(let v, let full):
            connect(v5: v == .v5, full: full)
        case .scheduleRetry(let delay):
            retryTimer = try? loop.schedule(after: delay) { [unowned self] _ in
                self.retryTimer = nil
                self.fire(.retryTimerFired(now: self.loop.now(.monotonic)))
            }
        case .cancelRetry:
            if let t = retryTimer { loop.cancel(t); retryTimer = nil }
        case .armConnectTimeout(let delay):
            if let t = connectTimer { loop.cancel(t) }
            connectTimer = try? loop.schedule(after: delay) { [unowned self] _ in
                self.connectTimer = nil
                guard self.socketFD >= 0 else { return }
                self.fire(.connectTimeoutFired)
            }
        case .abortConnection:
            // Make the socket fail: the next read reports the error and libmosquitto closes it.
            if socketFD >= 0 { shutdown(socketFD, Int32(SHUT_RDWR)) }
        case .send(let p):
            _ = send(p)
        case .subscribe(let filter, let qos):
            _ = mosquitto_subscribe(handle.mosq, nil, filter, Int32(qos))
        case .disconnect:
            _ = mosquitto_disconnect(handle.mosq)
            updateInterest()
        case .closeSocket:
            if !connectInFlight { closeSocket() }
        case .complete(let id, let result):
            completions.removeValue(forKey: id)?(result)
        case .deliver:
            break
        case .readingPaused:
            updateInterest()
        case .stateChanged(let s):
            onStateChange?(s)
        case .log(let level, let message, let metadata):
            logger.log(level: level, "\(message)", metadata: metadata.isEmpty ? nil : metadata)
        case .failInFlight(let reason):
            for (_, c) in inFlight { c.completion(.dropped(reason)) }
            inFlight.removeAll()
        case .stopFinished:
            let c = stopCompletion
            stopCompletion = nil
            c?()
        }
    }

    // MARK: - Connecting

    private func connect(v5: Bool, full: Bool) {
        if full {
            // mosquitto_connect_bind_v5 stores the CONNECT's properties (MQTT 5: the maximum
            // packet size) for every later connect, or drops them (3.1.1); its TCP connect
            // blocks, so it runs on a thread, the handle left to it.
            connectInFlight = true
            let handle = self.handle, cfg = config, loop = self.loop
            let maxPacket = maximumPacketSize
            let me = WeakLoopBound(self, loop: loop)
            Thread.detachNewThread {
                var props: OpaquePointer?
                if v5 { _ = mosquitto_property_add_int32(&props, Int32(MQTT_PROP_MAXIMUM_PACKET_SIZE.rawValue), maxPacket) }
                let rc = mosquitto_connect_bind_v5(handle.mosq, cfg.host, Int32(cfg.port), Int32(cfg.keepalive), nil, props)
                let e = errno
                mosquitto_property_free_all(&props)
                loop.post {
                    guard let client = me.value else { return }
                    client.connectInFlight = false
                    // Stored unless the arguments themselves were refused (then try again in full).
                    let stored = rc != MOSQ_ERR_INVAL.rawValue && rc != MOSQ_ERR_NOMEM.rawValue && rc != MOSQ_ERR_NOT_SUPPORTED.rawValue
                    client.connectReturned(rc, errno: e, storedProperties: stored)
                }
            }
        } else if Self.isNumericAddress(config.host) {
            let rc = mosquitto_connect_async(handle.mosq, config.host, Int32(config.port), Int32(config.keepalive))
            connectReturned(rc, errno: errno)
        } else {
            // getaddrinfo may block for seconds: connect on a thread, the handle left to it.
            connectInFlight = true
            let handle = self.handle, cfg = config, loop = self.loop
            let me = WeakLoopBound(self, loop: loop)
            Thread.detachNewThread {
                let rc = mosquitto_connect_async(handle.mosq, cfg.host, Int32(cfg.port), Int32(cfg.keepalive))
                let e = errno
                loop.post {
                    guard let client = me.value else { return }
                    client.connectInFlight = false
                    client.connectReturned(rc, errno: e)
                }
            }
        }
    }

    private func connectReturned(_ rc: Int32, errno e: Int32, storedProperties: Bool = false) {
        let failure = rc == MOSQ_ERR_SUCCESS.rawValue ? nil : describe(rc, errno: e)
        fire(.connectReturned(failure: failure, storedProperties: storedProperties, now: loop.now(.monotonic), jitter: jitter()))
        guard failure == nil, !session.stopping else { return }
        socketFD = mosquitto_socket(handle.mosq)
        guard socketFD >= 0 else { lost("libmosquitto returned no socket"); return }
        do {
            if let w = socketWatch { loop.unwatch(w); socketWatch = nil }
            wantsWrite = false
            interestPaused = readingPaused
            socketWatch = try loop.watch(fd: socketFD, events: readingPaused ? [] : .read) { [unowned self] ready in self.socketReady(ready) }
            updateInterest()
            guard socketFD >= 0 else { return } // the first write failed: already reported
            fire(.socketOpened)
            scheduleMisc()
        } catch {
            lost("\(error)")
        }
    }

    /// The socket is gone (`error`: why; nil when libmosquitto closed it after a clean exchange).
    private func lost(_ error: String?) {
        fire(.closed(error: error, now: loop.now(.monotonic), jitter: jitter()))
    }

    /// The broker socket is readable or writable (or failed).
    private func socketReady(_ ready: WatchEvents) {
        guard socketFD >= 0 else { return }
        // While reading is paused the socket is not watched for input: `.read` then comes only
        // with an error or hang-up, which the read reports.
        if ready.contains(.read) {
            // Every packet already in the socket's buffer (at most 256 per wake-up, so timers
            // and posted work stay on time): reading one per wake-up let a burst of QoS 1
            // commands pile up in the broker's queue for this client until it dropped them.
            var packets = 0
            repeat {
                let rc = mosquitto_loop_read(handle.mosq, 1)
                if !ioResult(rc, errno: errno) { return }
                packets += 1
            } while packets < Self.packetsPerWakeup && socketFD >= 0 && !readingPaused && Self.bytesWaiting(socketFD) > 0
        }
        if socketFD >= 0, ready.contains(.write) || mosquitto_want_write(handle.mosq) {
            let rc = mosquitto_loop_write(handle.mosq, 1)
            if !ioResult(rc, errno: errno) { return }
        }
        updateInterest()
    }

    /// The most packets read from the broker's socket in one wake-up of the loop.
    static let packetsPerWakeup = 256

    /// Bytes readable on `fd` now (`ioctl(FIONREAD)`); 0 when unknown.
    static func bytesWaiting(_ fd: Int32) -> Int32 {
        var n: Int32 = 0
        return ioctl(fd, UInt(FIONREAD), &n) == 0 ? n : 0
    }

    /// Handles a libmosquitto I/O result; false when the connection is gone.
    private func ioResult(_ rc: Int32, errno e: Int32) -> Bool {
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            // libmosquitto closed the socket itself: our DISCONNECT was written (a stop), or an
            // MQTT 5 broker sent DISCONNECT (the disconnect callback named its reason).
            if socketFD >= 0 && mosquitto_socket(handle.mosq) < 0 {
                if let w = socketWatch { loop.unwatch(w); socketWatch = nil }
                socketFD = -1
                wantsWrite = false
                lost(nil)
                return false
            }
            return true
        }
        // libmosquitto closed the socket (and called the disconnect callback) or will on the
        // next call: make sure it is closed, then report.
        lost(describe(rc, errno: e))
        return false
    }

    private var flushQueued = false

    /// Registers write interest while libmosquitto has output pending.
    private func updateInterest() {
        guard socketFD >= 0 else { return }
        // Flush what can go now (most writes complete at once on a local socket), unless inside a
        // libmosquitto callback: then at the end of this iteration.
        if callbackDepth > 0 {
            if !flushQueued {
                flushQueued = true
                loop.deferToEndOfIteration { [weak self] in
                    guard let self else { return }
                    self.flushQueued = false
                    self.updateInterest()
                }
            }
        } else if mosquitto_want_write(handle.mosq) {
            let rc = mosquitto_loop_write(handle.mosq, 1)
            if !ioResult(rc, errno: errno) { return }
            guard socketFD >= 0 else { return }
        }
        let want = mosquitto_want_write(handle.mosq)
        guard want != wantsWrite || readingPaused != interestPaused, let w = socketWatch else { return }
        var events: WatchEvents = readingPaused ? [] : .read
        if want { events.insert(.write) }
        if (try? loop.setInterest(w, events)) != nil {
            wantsWrite = want
            interestPaused = readingPaused
        }
    }
    /// Whether the watch's interest leaves out `.read` now.
    private var interestPaused = false

    private func scheduleMisc() {
        if let t = miscTimer { loop.cancel(t) }
        // libmosquitto sends PINGREQ once `keepalive` seconds pass idle and drops the connection
        // when the PINGRESP does not come; a quarter of keepalive keeps both on time.
        let period = Int64(config.keepalive) * 250_000_000
        miscTimer = try? loop.schedule(after: period) { [unowned self] _ in
            self.miscTimer = nil
            guard self.socketFD >= 0 else { return }
            let rc = mosquitto_loop_misc(self.handle.mosq)
            if rc != MOSQ_ERR_SUCCESS.rawValue && rc != MOSQ_ERR_NO_CONN.rawValue {
                _ = self.ioResult(rc, errno: errno)
                return
            }
            self.updateInterest()
            if self.socketFD >= 0 { self.scheduleMisc() }
        }
    }

    private func closeSocket() {
        if let t = connectTimer { loop.cancel(t); connectTimer = nil }
        if let t = miscTimer { loop.cancel(t); miscTimer = nil }
        if let w = socketWatch { loop.unwatch(w); socketWatch = nil }
        socketFD = -1
        wantsWrite = false
        interestPaused = false
        // Closes the socket if libmosquitto has not yet (no-op otherwise). The disconnect
        // callback this may run acts only on a clean stop, which finishes once.
        if mosquitto_socket(handle.mosq) >= 0 {
            _ = mosquitto_disconnect(handle.mosq)
            let s = mosquitto_socket(handle.mosq)
            if s >= 0 { shutdown(s, Int32(SHUT_RDWR)); _ = mosquitto_loop_read(handle.mosq, 1) }
        }
    }

    // MARK: - libmosquitto callbacks (on the loop's thread, inside loop_read/write/misc)

    private func didConnect(_ rc: Int32) {
        if let t = connectTimer { loop.cancel(t); connectTimer = nil }
        // MQTT 5 reason codes are 128 and above; 3.1.1's CONNACK codes 1 to 5.
        let text = rc == 0 ? "" : rc >= 128 ? String(cString: mosquitto_reason_string(rc)) : String(cString: mosquitto_connack_string(rc))
        fire(.connack(code: rc, text: text, now: loop.now(.monotonic)))
    }

    private func didDisconnect(_ rc: Int32) {
        // Reported through ioResult, which knows why; an MQTT 5 broker's DISCONNECT gives its
        // reason code here (142: another client took the session over), kept for the report.
        if rc != 0 { fire(.brokerDisconnect(code: rc, text: String(cString: mosquitto_reason_string(rc)))) }
        if session.stopping && rc == 0 {
            // Clean DISCONNECT written: libmosquitto has closed the socket.
            loop.deferToEndOfIteration { [weak self] in self?.fire(.disconnectWritten) }
        }
    }

    private func didPublish(_ mid: Int32) {
        if let s = sending, mid == midSlot.pointee {
            sending = nil
            s.completion(s.qos == 0 ? .sent : .acknowledged)
            return
        }
        guard let c = inFlight.removeValue(forKey: mid) else { return }
        c.completion(c.qos == 0 ? .sent : .acknowledged)
    }

    private func didReceive(_ m: mosquitto_message) {
        let topic = String(cString: m.topic)
        // The session drops a message larger than the limit before its payload is copied.
        let actions = events(.received(topic: topic, bytes: Int(m.payloadlen), now: loop.now(.monotonic)))
        actions.forEach(perform)
        guard actions.contains(.deliver) else { return }
        let payload = m.payloadlen > 0 && m.payload != nil
            ? Array(UnsafeRawBufferPointer(start: m.payload, count: Int(m.payloadlen))) : []
        let msg = Message(topic: topic, payload: payload, qos: Int(m.qos), retained: m.retain)
        for s in handlers {
            var match = false
            if mosquitto_topic_matches_sub(s.filter, topic, &match) == MOSQ_ERR_SUCCESS.rawValue, match {
                s.handler(msg)
            }
        }
    }

    // MARK: - Helpers

    private func send(_ p: MQTTSession.Outgoing) -> Bool {
        // libmosquitto may write a QoS 0 message, and report it, before mosquitto_publish returns:
        // the completion waits in `sending`, the message id in `midSlot` (set before the write).
        sending = completions[p.id].map { (p.qos, $0) }
        defer { sending = nil }
        midSlot.pointee = 0
        let rc = p.payload.withUnsafeBytes { buf in
            mosquitto_publish(handle.mosq, midSlot, p.topic, Int32(buf.count), buf.baseAddress, Int32(p.qos), p.retain)
        }
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            fire(.sendReturned(id: p.id, failure: "mosquitto_publish \(p.topic) failed: \(Self.describe(rc, errno: errno))"))
            return false
        }
        completions[p.id] = nil
        if let s = sending { inFlight[midSlot.pointee] = (s.qos, s.completion) }
        fire(.sendReturned(id: p.id, failure: nil))
        updateInterest()
        return true
    }
    /// The completion of the message being handed to mosquitto_publish right now.
    private var sending: (qos: Int, completion: (PublishResult) -> Void)?
    private let midSlot = UnsafeMutablePointer<Int32>.allocate(capacity: 1)

    static func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// `describe`, with OpenSSL's reason (logged by libmosquitto) for a TLS failure.
    private func describe(_ rc: Int32, errno e: Int32) -> String {
        let logged = handle.target.takeLastError()
        var text = Self.describe(rc, errno: e)
        if rc == MOSQ_ERR_TLS.rawValue, let tls = config.tls {
            text += ": \(logged ?? "TLS handshake failed") (ca_file \(tls.caFile))"
        }
        return text
    }

    static func describe(_ rc: Int32, errno e: Int32) -> String {
        if rc == MOSQ_ERR_ERRNO.rawValue {
            return "\(String(cString: strerror(e))) (errno \(e))"
        }
        return "\(String(cString: mosquitto_strerror(rc))) (mosquitto error \(rc))"
    }

}

/// The libmosquitto handle, destroyed when the last owner lets go (the client, or a resolver
/// thread still connecting).
final class Handle: @unchecked Sendable {
    // @unchecked: the handle is used by one thread at a time: the loop's, or the resolver thread
    // during a connect while the client leaves it alone (`connectInFlight`).
    let mosq: OpaquePointer
    /// libmosquitto's user data: lives as long as the handle.
    let target = CallbackTarget()
    init(_ mosq: OpaquePointer) { self.mosq = mosq }
    deinit { mosquitto_destroy(mosq) }
}

/// What libmosquitto's callbacks reach through their user data.
final class CallbackTarget: @unchecked Sendable {
    // @unchecked: `client` is read only by callbacks run inside mosquitto_loop_* on the loop's
    // thread; `lastError` is written by the log callback, which may run on a resolver thread,
    // and is guarded by `lock`.
    weak var client: MQTTClient?
    private let lock = PosixMutex()
    private var lastError: String?
    func setLastError(_ s: String) { lock.locked { lastError = s } }
    func takeLastError() -> String? { lock.locked { defer { lastError = nil }; return lastError } }
}
