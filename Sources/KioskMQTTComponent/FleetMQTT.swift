import KioskCore
import KioskFleet
import KioskMQTT
import KioskPosix

/// The fleet's transport over the MQTT bridge's client (QoS 1). The fleet runs on the render
/// loop and the client on the MQTT thread: a publish or a subscription is posted to the MQTT
/// thread, received messages and connection changes (`stateChanged`, called by the bridge's
/// `onStateChange`) come back to the render loop as posts, in order.
public final class MQTTFleetTransport: FleetTransport {
    private let bridge: MQTTBridge
    private let loop: any KioskLoop
    private var handlers: [(Bool) -> Void] = []
    private var wasConnected = false

    /// `loop`: the render loop, where the fleet runs.
    public init(bridge: MQTTBridge, loop: any KioskLoop) {
        self.bridge = bridge
        self.loop = loop
        wasConnected = bridge.clientState == .connected
    }

    /// The client's state now (a copy kept under a lock by the client), not as of the last
    /// `stateChanged`: what a publish made now will meet.
    public var isConnected: Bool { bridge.clientState == .connected }

    public func onConnectionChange(_ handler: @escaping (Bool) -> Void) { handlers.append(handler) }

    public func stateChanged(_ state: MQTTClient.State) {
        let up = state == .connected
        guard up != wasConnected else { return }
        wasConnected = up
        for h in handlers { h(up) }
    }

    /// Posted to the MQTT thread. Refused here only when the client's own rule would refuse it
    /// there (stopped, or the outgoing queue full while disconnected); a refusal that happens
    /// there anyway is logged by the client, and the fleet's resend timer covers a command.
    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool) -> String? {
        let s = bridge.clientView.snapshot
        if s.state == .stopped { return "the MQTT client is stopped; \"\(topic)\" was not sent" }
        if s.state != .connected && s.queued >= bridge.config.queueLimit {
            return "the outgoing MQTT queue is full (queue_limit \(bridge.config.queueLimit) messages, broker \(s.state)); refused \"\(topic)\""
        }
        bridge.onMQTTThread { $0.fleetPublish(topic, payload, retain: retain) }
        return nil
    }

    public func subscribe(_ filter: String, _ handler: @escaping (String, [UInt8], Bool) -> Void) {
        let handler = LoopBound(handler, loop: loop)
        bridge.onMQTTThread { $0.fleetSubscribe(filter, handler) }
    }
}
