import KioskCore
import KioskMQTT

extension DaemonConfig {
    /// Longest `[homeassistant] name`, in characters.
    public static let maxDeviceName = 64

    /// `[homeassistant]`: how Home Assistant shows this kiosk (docs/mqtt.md), set in `mqtt`.
    /// `name`: the device's name (default "kioskd ID"); settable from the phone (settings
    /// layer), applied at a reload by publishing the discovery again. Needs `[mqtt]`: Home
    /// Assistant sees the kiosk through the broker.
    static func readHomeAssistant(_ root: ConfigTable, mqtt: inout MQTTConfig?) throws {
        guard let t = try root.table("homeassistant") else { return }
        guard mqtt != nil else {
            throw KioskError.config("\(t.location): table '[homeassistant]': Home Assistant sees this kiosk through an MQTT broker; add an [mqtt] table with broker = \"mqtt://HOST:PORT\"")
        }
        let name = try t.string("name")
        if let name {
            if name.allSatisfy({ $0 == " " }) { throw t.error("name", "expected the kiosk's name as Home Assistant shows it, like \"Hall scoreboard\", got \(ConfigTable.quoted(name))") }
            if name.count > maxDeviceName { throw t.error("name", "\(name.count) characters is too long; at most \(maxDeviceName)") }
            if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw t.error("name", "\(ConfigTable.quoted(name)) contains a control character")
            }
        }
        try t.finish()
        mqtt?.deviceName = name
    }
}
