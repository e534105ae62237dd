import KioskCore

/// `[fleet]`: kiosks with the same `group` share their counters through the MQTT broker; the one
/// with `role = "primary"` owns the durable values.
public struct FleetSettings: Sendable, Equatable {
    public enum Role: String, Sendable, Equatable, CaseIterable { case primary, follower }

    /// The group's name in topics (`kioskd/group/GROUP/…`).
    public var group: String
    public var role: Role
    /// The shared counters by name; nil: every counter of every counter scene.
    public var counters: [String]?
    /// Where `counters` was written (for errors about a counter no scene has).
    public var countersLocation: String?
    /// Changes waiting for the primary's confirmation (sent or not yet sent); more are refused.
    public var queueLimit = 100
    /// How long a caller waits for the primary's confirmation before the answer says "pending".
    public var ackTimeoutMs = 5000
    /// Command ids the primary remembers per counter (a redelivered id among them changes nothing).
    public var appliedIdLimit = 1024
    /// The kiosk id (`mqtt.id`) of the group's primary: followers show only states that name it.
    /// Nil: states from any primary are shown (the sequence rules still apply).
    public var primary: String?

    public init(group: String, role: Role) {
        self.group = group
        self.role = role
    }

    /// Reads `[fleet]`; `mqtt` is whether an `[mqtt]` table exists (a fleet needs the broker).
    /// Errors name file:line and the key.
    package static func read(_ t: ConfigTable, hasMQTT: Bool) throws -> FleetSettings {
        guard let group = try t.string("group") else { throw t.error("group", "missing: the group's name, for example group = \"hall\"") }
        if let problem = topicLevelProblem(group) { throw t.error("group", "\(ConfigTable.quoted(group)) \(problem)") }
        guard t.has("role") else { throw t.error("role", "missing: role = \"primary\" (exactly one kiosk of the group) or \"follower\"") }
        var s = FleetSettings(group: group, role: try t.choice("role", default: Role.follower))
        if let names = try t.stringArray("counters") {
            let nodes = try t.array("counters") ?? []
            for (i, n) in names.enumerated() {
                if let problem = topicLevelProblem(n) {
                    throw KioskError.config("\(nodes[i].location): key 'fleet.counters[\(i)]': \(ConfigTable.quoted(n)) \(problem)")
                }
                if names[..<i].contains(n) {
                    throw KioskError.config("\(nodes[i].location): key 'fleet.counters[\(i)]': counter \(ConfigTable.quoted(n)) is listed twice")
                }
            }
            s.counters = names
            s.countersLocation = "\(t.entries["counters"]?.location ?? t.location)"
        }
        s.queueLimit = try t.int("queue_limit", default: 100, range: 1...100_000)
        s.ackTimeoutMs = try t.int("ack_timeout_ms", default: 5000, range: 100...20_000)
        if let p = try t.string("primary") {
            if p.isEmpty { throw t.error("primary", "is empty: the primary's kiosk id (its mqtt.id), for example primary = \"hall-1\"") }
            s.primary = p
        }
        try t.finish()
        guard hasMQTT else {
            throw KioskError.config("\(t.location): table '[fleet]': a fleet shares its counters through an MQTT broker; add an [mqtt] table with broker = \"mqtt://HOST:PORT\"")
        }
        return s
    }

    /// Why `s` cannot be one level of an MQTT topic; nil when it can.
    package static func topicLevelProblem(_ s: String) -> String? {
        if s.isEmpty { return "is empty" }
        if s.contains(where: { $0 == "/" || $0 == "+" || $0 == "#" }) { return "cannot be part of an MQTT topic (no /, + or #)" }
        if s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) { return "holds a control character" }
        return nil
    }
}
