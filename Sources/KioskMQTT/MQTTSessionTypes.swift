import Logging

/// The vocabulary of `MQTTSession`: its states, the events it is given and the actions it asks for.
extension MQTTSession {
    public enum State: Sendable, Equatable, CustomStringConvertible {
        /// Not started.
        case idle
        /// A connect attempt is under way (TCP/TLS, then CONNACK).
        case connecting
        case connected
        /// The last attempt or the connection failed; a retry is scheduled.
        case disconnected(reason: String)
        /// The broker refused the login (bad user name or password, not authorised). Retries
        /// continue at the slowest pace (`backoffMax`), so that a fixed broker is picked up.
        case refused(reason: String)
        /// `stop` was called: no more retries.
        case stopped

        public var description: String {
            switch self {
            case .idle: return "idle"
            case .connecting: return "connecting"
            case .connected: return "connected"
            case .disconnected(let r): return "disconnected: \(r)"
            case .refused(let r): return "refused by the broker: \(r)"
            case .stopped: return "stopped"
            }
        }
    }

    /// What became of a published message.
    public enum PublishResult: Sendable, Equatable {
        /// QoS 1: the broker acknowledged it (PUBACK).
        case acknowledged
        /// QoS 0: written to the socket (MQTT gives no acknowledgement for QoS 0).
        case sent
        /// Not sent: the reason (queue full, superseded, client stopped, libmosquitto error).
        case dropped(String)
    }

    /// Counters for status and tests.
    public struct Counters: Sendable, Equatable {
        /// Connect attempts started (first one included).
        public var attempts = 0
        /// Successful connects (CONNACK accepted).
        public var connects = 0
        public var messagesIn = 0
        public var messagesOut = 0
        /// Messages refused or dropped by the outgoing queue.
        public var dropped = 0
        /// Incoming messages larger than `MQTTConfig.maxMessageBytes`, dropped on arrival.
        public var oversized = 0
    }

    /// A message to publish. `id` names its completion to the adapter (0: none).
    public struct Outgoing: Sendable, Equatable {
        public var id: Int
        public var topic: String
        public var payload: [UInt8]
        public var qos: Int
        public var retain: Bool
        public init(id: Int = 0, topic: String, payload: [UInt8], qos: Int, retain: Bool) {
            (self.id, self.topic, self.payload, self.qos, self.retain) = (id, topic, payload, qos, retain)
        }
    }

    public enum Event: Sendable, Equatable {
        /// `MQTTClient.start`.
        case start(now: Int64)
        /// The retry timer of a `scheduleRetry` fired.
        case retryTimerFired(now: Int64)
        /// The connect call of a `connect` returned: `failure` says why it failed (nil: the
        /// socket is open, CONNACK awaited). `storedProperties`: a full connect kept the CONNECT's
        /// properties, so the next attempts need not be full.
        case connectReturned(failure: String?, storedProperties: Bool, now: Int64, jitter: Double)
        /// The adapter watches the new socket: the CONNACK timeout starts.
        case socketOpened
        /// The timer of `armConnectTimeout` fired while the socket is open.
        case connectTimeoutFired
        /// The broker's CONNACK: `code` 0 accepts; `text` is libmosquitto's description of it.
        case connack(code: Int32, text: String, now: Int64)
        /// An MQTT 5 broker's DISCONNECT reason code (nonzero) and its description.
        case brokerDisconnect(code: Int32, text: String)
        /// The socket is gone: `error` is libmosquitto's failure, nil when it closed the socket
        /// after a clean exchange (our DISCONNECT written, or the broker's DISCONNECT read).
        /// `jitter` (0 ..< 1, random) shortens the retry delay.
        case closed(error: String?, now: Int64, jitter: Double)
        /// Our clean DISCONNECT of a stop is written.
        case disconnectWritten
        /// `MQTTClient.publish`.
        case publish(Outgoing)
        /// libmosquitto took (`failure` nil) or refused the message of a `send`.
        case sendReturned(id: Int, failure: String?)
        /// `MQTTClient.subscribe`.
        case subscribe(filter: String, qos: Int)
        /// A message of `bytes` bytes arrived on `topic`.
        case received(topic: String, bytes: Int, now: Int64)
        /// `MQTTClient.pauseReading`.
        case pauseReading(Bool)
        /// `count` received commands wait for the disk.
        case commandsWaiting(Int, now: Int64)
        /// `MQTTClient.stop`.
        case stop
    }

    public enum Action: Sendable, Equatable {
        /// Speak this version from now on (libmosquitto's protocol option).
        case setProtocol(MQTTConfig.ProtocolVersion)
        /// Start a connect: `full` is a connect that (re)stores the CONNECT's properties.
        case connect(MQTTConfig.ProtocolVersion, full: Bool)
        /// Call back with `retryTimerFired` after `after` ns.
        case scheduleRetry(after: Int64)
        case cancelRetry
        /// Call back with `connectTimeoutFired` after `after` ns unless the CONNACK comes.
        case armConnectTimeout(after: Int64)
        /// Make the open socket fail (no CONNACK in time): its close reports `pendingReason`.
        case abortConnection
        /// Hand the message to libmosquitto; answer with `sendReturned`.
        case send(Outgoing)
        case subscribe(filter: String, qos: Int)
        /// Send a clean DISCONNECT; answer with `disconnectWritten` once written.
        case disconnect
        /// Close the socket (unless a connect call still owns the handle).
        case closeSocket
        /// The completion of message `id` gets `result`.
        case complete(id: Int, PublishResult)
        /// Hand the received message to the subscriptions' handlers.
        case deliver
        /// Watch (false) or leave (true) the socket's input.
        case readingPaused(Bool)
        case stateChanged(State)
        case log(Logger.Level, String, Logger.Metadata = [:])
        /// The stop is ending: the messages libmosquitto holds will never be acknowledged.
        case failInFlight(String)
        /// The stop is complete: run its completion.
        case stopFinished
    }
}
