/// Home Assistant's entities for the counter scenes' game clocks (docs/mqtt.md).
extension HADiscovery {
    /// Per scene in `clocks` (key `clock_LEVEL`): `button`s Start, Stop, Reset, Next period and
    /// Reset shot clock (each publishing `ClockIntent`'s words on `kioskd/ID/clock/LEVEL/set`),
    /// a `sensor` with the time left (`M:SS`), a `binary_sensor` "running" and a `sensor` with
    /// the period. Each with the entity id's part after `kioskd_ID_`.
    func clockComponents(uid: String) -> [String: (component: [String: Any], entity: String)] {
        var out: [String: (component: [String: Any], entity: String)] = [:]
        for scene in clocks {
            let key = "clock_" + KioskTopics.outputLevel(scene)
            let entity = "clock_" + Self.entitySlug(scene)
            let topic = KioskTopics(id: id).clock(scene)
            // One clock: "Clock start"; several: "Clock board start".
            let name = clocks.count > 1 ? "Clock \(scene)" : "Clock"
            let buttons = [("start", "start", "Start", "mdi:play"), ("stop", "stop", "Stop", "mdi:pause"),
                           ("reset", "reset", "Reset", "mdi:restore"), ("next_period", "period next", "Next period", "mdi:skip-next"),
                           ("reset_shot", "reset shot", "Reset shot clock", "mdi:timer-refresh")]
            for (suffix, payload, label, icon) in buttons {
                out["\(key)_\(suffix)"] = ([
                    "platform": "button", "unique_id": "\(uid)_\(key)_\(suffix)", "name": "\(name) \(label.lowercased())", "icon": icon,
                    "command_topic": "\(topic)/set", "payload_press": payload,
                ], "\(entity)_\(suffix)")
            }
            out["\(key)_remaining"] = ([
                "platform": "sensor", "unique_id": "\(uid)_\(key)_remaining", "name": "\(name) remaining", "icon": "mdi:timer-outline",
                "state_topic": "\(topic)/remaining",
            ], "\(entity)_remaining")
            out["\(key)_running"] = ([
                "platform": "binary_sensor", "unique_id": "\(uid)_\(key)_running", "name": "\(name) running", "icon": "mdi:timer-play",
                "device_class": "running", "state_topic": "\(topic)/running", "payload_on": "ON", "payload_off": "OFF",
            ], "\(entity)_running")
            out["\(key)_period"] = ([
                "platform": "sensor", "unique_id": "\(uid)_\(key)_period", "name": "\(name) period", "icon": "mdi:numeric",
                "state_topic": "\(topic)/period",
            ], "\(entity)_period")
        }
        return out
    }
}
