import FoundationEssentials
import KioskCore

/// The kiosk's topics under `kioskd/ID/`.
public struct KioskTopics: Sendable, Equatable {
    public let id: String
    public init(id: String) { self.id = id }

    public var base: String { "kioskd/\(id)" }
    public var availability: String { "\(base)/availability" }
    public var scene: String { "\(base)/scene" }
    public var theme: String { "\(base)/theme" }
    public var blank: String { "\(base)/blank" }
    public var status: String { "\(base)/status" }
    public var error: String { "\(base)/error" }
    public func counter(_ name: String) -> String { "\(base)/counter/\(name)" }
    /// `kioskd/ID/output/LEVEL`: one output of several, its name made one safe topic level
    /// (`outputLevel`).
    public func output(_ name: String) -> String { "\(base)/output/\(Self.outputLevel(name))" }
    /// `kioskd/ID/clock/LEVEL`: a counter scene's game clock, its scene's name made one safe
    /// topic level (`outputLevel`); `…/set` takes `ClockIntent`'s words, `…/remaining`,
    /// `…/running` and `…/period` are its retained state.
    public func clock(_ scene: String) -> String { "\(base)/clock/\(Self.outputLevel(scene))" }
    /// `kioskd/ID/clock/+/set`: game clock commands.
    public var clockFilter: String { "\(base)/clock/+/set" }
    /// `kioskd/ID/+/set`: scene, theme and blank commands.
    public var setFilter: String { "\(base)/+/set" }
    /// `kioskd/ID/counter/+/+`: counter commands (set, inc, dec, reset).
    public var counterFilter: String { "\(base)/counter/+/+" }
    /// `kioskd/ID/output/+/+/set`: an output's scene and blank commands.
    public var outputFilter: String { "\(base)/output/+/+/set" }

    /// An output's name as one topic level: `[A-Za-z0-9_-]` (`HADiscovery.slug`), so a
    /// connector such as `HDMI-A-1` stays as it is and `/`, `+`, `#` never reach a topic.
    public static func outputLevel(_ name: String) -> String { HADiscovery.slug(name) }

    /// Why a counter name cannot be one topic level (nil when it can): MQTT reserves `+` and `#`
    /// in topics (`/` is not allowed in counter names at all).
    public static func counterNameProblem(_ name: String) -> String? {
        if name.contains("+") || name.contains("#") { return "contains '+' or '#', which MQTT topics reserve" }
        if name.isEmpty { return "is empty" }
        return nil
    }
}

/// Home Assistant's device-based MQTT discovery for one kiosk: one retained message on
/// `PREFIX/device/kioskd_ID/config` naming the device, the origin, the availability topic and
/// every entity (components): a `select` for the scene and one for the theme, per counter a
/// `number` (a box from the counter's minimum to its maximum, 10^digits − 1) and three
/// `button`s (+1, −1, reset), a `switch` for the blanked panel and diagnostic `sensor`s read from
/// the status JSON; with several outputs also a scene `select` and a blanked `switch` per output
/// (the first two address the first output), and a "screen showing" `binary_sensor` per output
/// (every output, also one alone: `screens`), and per game clock buttons, sensors and a
/// "running" `binary_sensor` (`clockComponents`). Pure: the same input gives the same bytes (keys sorted).
public struct HADiscovery: Sendable, Equatable {
    public struct Counter: Sendable, Equatable {
        public var name: String
        public var label: String
        public var minimum: Int
        public var maximum: Int
        public init(name: String, label: String, minimum: Int, maximum: Int) {
            self.name = name; self.label = label; self.minimum = minimum; self.maximum = maximum
        }
    }

    /// One output of several: its name and the scenes it shows.
    public struct Output: Sendable, Equatable {
        public var name: String
        public var scenes: [String]
        public init(name: String, scenes: [String]) { self.name = name; self.scenes = scenes }
    }

    public var id: String
    public var prefix: String
    public var scenes: [String]
    public var themes: [String]
    public var counters: [Counter]
    /// Empty with one output (no per-output entities).
    public var outputs: [Output]
    /// Every output's name, for its "screen showing" sensor (`kioskd/ID/output/NAME/showing`).
    public var screens: [String]
    /// The counter scenes with a game clock (`clockComponents`).
    public var clocks: [String]
    /// The device's name as Home Assistant shows it (`[homeassistant] name`); nil: "kioskd ID".
    /// Changing it changes no unique id, object id or topic: Home Assistant renames the device
    /// and keeps its entities and their history.
    public var name: String?

    public init(id: String, prefix: String, scenes: [String], themes: [String], counters: [Counter], outputs: [Output] = [],
                screens: [String] = [], clocks: [String] = [], name: String? = nil) {
        self.id = id; self.prefix = prefix; self.scenes = scenes; self.themes = themes; self.counters = counters; self.outputs = outputs
        self.screens = screens; self.clocks = clocks; self.name = name
    }

    /// `kioskd_ID` with every character outside `[A-Za-z0-9_-]` replaced (Home Assistant's rule
    /// for object ids).
    public var objectID: String { "kioskd_" + Self.slug(id) }
    /// `PREFIX/device/kioskd_ID/config`.
    public var topic: String { "\(prefix)/device/\(objectID)/config" }
    /// `PREFIX/status`: Home Assistant says `online` there when it (re)starts.
    public var statusTopic: String { "\(prefix)/status" }

    /// `s` as `[A-Za-z0-9_-]`: other characters become `_`, and then a hash of `s` is appended
    /// so that two names differing only in such characters stay apart.
    public static func slug(_ s: String) -> String {
        var out = ""
        var changed = false
        for u in s.unicodeScalars {
            if (u >= "a" && u <= "z") || (u >= "A" && u <= "Z") || (u >= "0" && u <= "9") || u == "_" || u == "-" {
                out.unicodeScalars.append(u)
            } else {
                out += "_"
                changed = true
            }
        }
        guard changed else { return out }
        var h: UInt32 = 2_166_136_261 // FNV-1a
        for b in s.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return out + "_" + String(h, radix: 16)
    }

    /// `s` as an entity id's part, `[a-z0-9_]`: letters lowered, `-` and other characters `_`,
    /// and a hash of `s` appended when a character other than a letter or `-` was replaced (as
    /// Home Assistant's own ids read, with the hash keeping such names apart).
    public static func entitySlug(_ s: String) -> String {
        var out = ""
        var replaced = false
        for u in s.lowercased().unicodeScalars {
            if (u >= "a" && u <= "z") || (u >= "0" && u <= "9") || u == "_" { out.unicodeScalars.append(u) } else {
                out += "_"
                if u != "-" { replaced = true }
            }
        }
        guard replaced else { return out }
        var h: UInt32 = 2_166_136_261 // FNV-1a
        for b in s.utf8 { h = (h ^ UInt32(b)) &* 16_777_619 }
        return out + "_" + String(h, radix: 16)
    }

    /// The message as a JSON object.
    public var object: [String: Any] {
        let t = KioskTopics(id: id)
        let uid = objectID
        var components: [String: Any] = [:]
        /// Each component's entity id after `kioskd_ID_`, by component key.
        var entitySuffix: [String: String] = ["scene": "scene", "theme": "theme", "blank": "panel_blanked", "time_synced": "time_synced"]
        components["scene"] = [
            "platform": "select", "unique_id": "\(uid)_scene", "name": "Scene", "icon": "mdi:monitor",
            "state_topic": t.scene, "command_topic": "\(t.scene)/set", "options": scenes,
        ] as [String: Any]
        components["theme"] = [
            "platform": "select", "unique_id": "\(uid)_theme", "name": "Theme", "icon": "mdi:palette",
            "state_topic": t.theme, "command_topic": "\(t.theme)/set", "options": themes,
        ] as [String: Any]
        components["blank"] = [
            "platform": "switch", "unique_id": "\(uid)_blank", "name": "Panel blanked", "icon": "mdi:monitor-off",
            "state_topic": t.blank, "command_topic": "\(t.blank)/set", "payload_on": "ON", "payload_off": "OFF",
        ] as [String: Any]
        for o in outputs {
            // `select.kioskd_ID_scene_hdmi_a_1`, `switch.kioskd_ID_panel_blanked_hdmi_a_1`.
            let key = "output_" + KioskTopics.outputLevel(o.name)
            let entity = Self.entitySlug(o.name)
            let topic = t.output(o.name)
            entitySuffix["\(key)_scene"] = "scene_\(entity)"
            entitySuffix["\(key)_blank"] = "panel_blanked_\(entity)"
            components["\(key)_scene"] = [
                "platform": "select", "unique_id": "\(uid)_\(key)_scene", "name": "Scene \(o.name)", "icon": "mdi:monitor",
                "state_topic": "\(topic)/scene", "command_topic": "\(topic)/scene/set", "options": o.scenes,
            ] as [String: Any]
            components["\(key)_blank"] = [
                "platform": "switch", "unique_id": "\(uid)_\(key)_blank", "name": "Panel blanked \(o.name)", "icon": "mdi:monitor-off",
                "state_topic": "\(topic)/blank", "command_topic": "\(topic)/blank/set", "payload_on": "ON", "payload_off": "OFF",
            ] as [String: Any]
        }
        for name in screens {
            // `binary_sensor.kioskd_ID_screen_showing` alone, `…_screen_showing_hdmi_a_1` of several: off
            // while the output is blanked, disconnected, or its frames stopped reaching the panel.
            let key = "screen_showing_" + KioskTopics.outputLevel(name)
            entitySuffix[key] = screens.count > 1 ? "screen_showing_\(Self.entitySlug(name))" : "screen_showing"
            components[key] = [
                "platform": "binary_sensor", "unique_id": "\(uid)_\(key)", "name": screens.count > 1 ? "Screen showing \(name)" : "Screen showing",
                "icon": "mdi:monitor-eye", "device_class": "running",
                "state_topic": "\(t.output(name))/showing", "payload_on": "ON", "payload_off": "OFF",
            ] as [String: Any]
        }
        for c in counters {
            let key = "counter_" + Self.slug(c.name)
            let entity = Self.entitySlug(c.name)
            entitySuffix[key] = entity
            for (op, suffix) in [("inc", "increment"), ("dec", "decrement"), ("reset", "reset")] { entitySuffix["\(key)_\(op)"] = "\(entity)_\(suffix)" }
            let topic = t.counter(c.name)
            let label = c.label.isEmpty ? c.name : c.label
            components[key] = [
                "platform": "number", "unique_id": "\(uid)_\(key)", "name": label, "icon": "mdi:counter",
                "state_topic": topic, "command_topic": "\(topic)/set",
                "min": c.minimum, "max": c.maximum, "step": 1, "mode": "box",
            ] as [String: Any]
            for (op, name, icon) in [("inc", "\(label) +1", "mdi:plus"), ("dec", "\(label) −1", "mdi:minus"), ("reset", "\(label) reset", "mdi:restore")] {
                components["\(key)_\(op)"] = [
                    "platform": "button", "unique_id": "\(uid)_\(key)_\(op)", "name": name, "icon": icon,
                    "command_topic": "\(topic)/\(op)", "payload_press": "PRESS",
                ] as [String: Any]
            }
        }
        for (key, value) in clockComponents(uid: uid) {
            components[key] = value.component
            entitySuffix[key] = value.entity
        }
        let sensors: [(String, String, String, [String: Any])] = [
            ("fps", "Frames per second", "{{ value_json.fps }}", ["unit_of_measurement": "fps", "state_class": "measurement"]),
            ("frame_ms_p99", "Frame time p99", "{{ value_json.frame_ms_p99 }}", ["unit_of_measurement": "ms", "state_class": "measurement"]),
            ("frame_gap_ms", "Longest frame gap (last minute)", "{{ value_json.frame_gap_ms }}", ["unit_of_measurement": "ms", "state_class": "measurement"]),
            ("uptime", "Uptime", "{{ value_json.uptime_s }}", ["unit_of_measurement": "s", "device_class": "duration", "state_class": "total_increasing"]),
            ("output", "Output", "{{ value_json.output }}", [:]),
        ]
        for (key, name, template, extra) in sensors {
            var s: [String: Any] = [
                "platform": "sensor", "unique_id": "\(uid)_\(key)", "name": name, "entity_category": "diagnostic",
                "state_topic": t.status, "value_template": template,
            ]
            for (k, v) in extra { s[k] = v }
            components[key] = s
            entitySuffix[key] = key
        }
        components["time_synced"] = [
            "platform": "binary_sensor", "unique_id": "\(uid)_time_synced", "name": "Time synchronised", "entity_category": "diagnostic",
            "state_topic": t.status, "value_template": "{{ 'ON' if value_json.time_synced else 'OFF' }}",
        ] as [String: Any]
        // Explicit, stable entity ids, such as `button.kioskd_hall_home_increment`:
        // `default_entity_id` (Home Assistant 2025.10 and later) and `object_id` (older
        // versions). Made from the names, "HOME +1" and "HOME −1" would both be `home_1`.
        let device = "kioskd_" + Self.entitySlug(id)
        for (key, suffix) in entitySuffix {
            guard var c = components[key] as? [String: Any], let platform = c["platform"] as? String else { continue }
            c["object_id"] = "\(device)_\(suffix)"
            c["default_entity_id"] = "\(platform).\(device)_\(suffix)"
            components[key] = c
        }
        return [
            "device": [
                "identifiers": [uid], "name": name ?? "kioskd \(id)", "manufacturer": "kioskd", "model": "kiosk display",
            ] as [String: Any],
            "origin": ["name": "kioskd"],
            "availability": [["topic": t.availability, "payload_available": "online", "payload_not_available": "offline"]],
            "qos": 1,
            "components": components,
        ]
    }

    /// The payload: compact JSON, keys sorted (`pretty`: indented, for people and golden files).
    public func json(pretty: Bool = false) -> [UInt8] {
        // The object holds strings, integers, arrays and dictionaries only: it always serialises.
        (try? JSONValue(any: object)?.bytes(pretty: pretty)) ?? []
    }
}
