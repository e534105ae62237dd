import KioskCore
import KioskMQTT

/// The fleet's transport over the daemon's `MQTTClient` (QoS 1, on the loop's thread).
public final class MQTTFleetTransport: FleetTransport {
    public let client: MQTTClient
    private let scheduler: any Scheduler
    private var handlers: [(Bool) -> Void] = []
    private var wasConnected = false

    /// `scheduler`: the client's loop; received messages are handled at the end of its
    /// iteration, outside libmosquitto's read (a publish from inside it can block on
    /// libmosquitto's own lock). Call `stateChanged` with every state of the client.
    public init(client: MQTTClient, scheduler: any Scheduler) {
        self.client = client
        self.scheduler = scheduler
        wasConnected = client.state == .connected
    }

    public var isConnected: Bool { client.state == .connected }

    public func onConnectionChange(_ handler: @escaping (Bool) -> Void) { handlers.append(handler) }

    public func stateChanged(_ state: MQTTClient.State) {
        let up = state == .connected
        guard up != wasConnected else { return }
        wasConnected = up
        for h in handlers { h(up) }
    }

    public func publish(_ topic: String, _ payload: [UInt8], retain: Bool) -> String? {
        if case .refused(let reason) = client.publish(topic, payload, qos: 1, retain: retain) { return reason }
        return nil
    }

    public func subscribe(_ filter: String, _ handler: @escaping (String, [UInt8]) -> Void) {
        let scheduler = self.scheduler
        client.subscribe(filter, qos: 1) { message in
            scheduler.deferToEndOfIteration { handler(message.topic, message.payload) }
        }
    }
}
