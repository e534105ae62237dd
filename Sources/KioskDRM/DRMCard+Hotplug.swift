#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import Logging

/// How a card follows its device's connectors and the device itself: udev events on its node
/// (add, change, remove) and, while a head waits for a connector, a poll of the connectors.
extension DRMCard {
    // MARK: Hotplug

    /// While a running head waits for its connector (none connected, or the one it names is
    /// missing), reads the connectors every `connectorPollNs` without probing them
    /// (`KMSDevice.currentConnectors`) and configures again when one changed since the last
    /// configuration: a display that appears without a udev event is shown all the same. Stops
    /// once every head is active, and while the card is not DRM master.
    func followConnectors() {
        let waiting = device != nil && hasMaster && !isShutDown && heads.contains { !$0.isShutDown && !$0.active }
        guard waiting else { return stopFollowingConnectors() }
        guard connectorPoll == nil else { return }
        do {
            connectorPoll = try scheduler.schedule(after: Self.connectorPollNs) { [weak self] _ in
                guard let self else { return }
                self.connectorPoll = nil
                self.pollConnectors()
            }
        } catch {
            logger.warning("cannot arm the timer that looks for a display: \(error); waiting for a udev event instead",
                           metadata: device.map { ["drm.device": "\($0.path)"] } ?? [:])
        }
    }

    func stopFollowingConnectors() {
        if let t = connectorPoll { scheduler.cancel(t) }
        connectorPoll = nil
    }

    /// Reads the connectors; configures again when their status or modes changed.
    func pollConnectors() {
        defer { followConnectors() }
        guard let device, hasMaster else { return }
        let current: [DRMConnector]
        do { current = try device.currentConnectors() } catch {
            logger.debug("reading the connectors failed: \(error)", metadata: ["drm.device": "\(device.path)"])
            return
        }
        guard current.map(ConnectorState.init) != configuredConnectors else { return }
        let changed = current.filter { !configuredConnectors.contains(ConnectorState($0)) }
            .map { "\($0.name) (\($0.status.rawValue), \($0.modes.count) modes)" }.joined(separator: ", ")
        logger.info("connectors changed without a udev event; configuring the outputs again",
                    metadata: ["drm.device": "\(device.path)", "drm.connectors": "\(changed)"])
        do { try configure(announce: true) } catch {
            logger.error("reconfiguring after a connector change failed: \(error)", metadata: ["drm.device": "\(device.path)"])
            for h in heads { h.deactivate(announce: true) }
        }
    }

    /// Follows a udev event on a DRM primary node.
    func hotplug(action: String, node: String) {
        logger.info("udev drm event", metadata: ["udev.action": "\(action)", "drm.node": "\(node)"])
        switch action {
        case "remove":
            guard let device, device.path == node else { return }
            logger.warning("DRM device removed; waiting for it to come back", metadata: ["drm.device": "\(device.path)"])
            let was = heads.filter(\.active)
            teardown()
            saved = []
            for h in was { h.onEvent?(.inactive) }
        case "add", "change":
            if let device {
                guard device.path == node, hasMaster else { return }
                do { try configure(announce: true) } catch {
                    logger.error("reconfiguring after hotplug failed: \(error)", metadata: ["drm.device": "\(device.path)"])
                    for h in heads { h.deactivate(announce: true) }
                }
            } else if devicePath == nil || devicePath == node || takes?(node) == true {
                do {
                    try open(path: node)
                    try configure(announce: true)
                } catch {
                    logger.error("using \(node) after hotplug failed: \(error)", metadata: ["drm.node": "\(node)"])
                    teardown()
                }
            }
        default:
            break
        }
    }
}
