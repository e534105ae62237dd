import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskMQTTComponent
import KioskDaemonTesting
import KioskState
import KioskTesting
import KioskTestTraits
import Testing

/// The kiosk's name as Home Assistant shows it (`[homeassistant] name`), set from the settings
/// layer: the retained discovery carries the new device name after the change is kept, on the
/// same connection, with every unique id and entity id as before.
@Suite(.ownThreads, .serialized, .enabled(if: MQTTTestBroker.available, "mosquitto is not installed (scripts/apt-mqtt.txt)"))
struct MQTTSettingsTests {
    static let topic = "homeassistant/device/kioskd_k1/config"

    /// The retained discovery: the device's name, and each component's unique id, object id and
    /// default entity id.
    struct Seen: Equatable {
        var name: String?
        var ids: [String: [String]]
    }

    static func seen(_ r: MQTTBridgeTests.Rig) throws -> Seen? {
        guard let text = try r.broker.retained(topic),
              let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
              let components = object["components"] as? [String: [String: Any]] else { return nil }
        var ids: [String: [String]] = [:]
        for (key, c) in components {
            ids[key] = ["unique_id", "object_id", "default_entity_id"].map { c[$0] as? String ?? "-" }
        }
        return Seen(name: (object["device"] as? [String: Any])?["name"] as? String, ids: ids)
    }

    /// Runs the loop until the retained discovery names the device `name` (bounded).
    static func waitForName(_ r: MQTTBridgeTests.Rig, _ name: String) throws -> Seen? {
        var last: Seen?
        for _ in 0..<50 {
            try r.settle()
            last = try seen(r)
            if last?.name == name { return last }
            try pump(r.loop, seconds: 0.05) { false }
        }
        return last
    }

    @Test func aNameSetFromThePhoneRenamesTheDeviceKeepingItsIdsAndConnection() throws {
        let r = try MQTTBridgeTests().rig()
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        let before = try #require(try Self.seen(r))
        #expect(before.name == "kioskd k1")
        #expect(before.ids["counter_HOME"] == ["kioskd_k1_counter_HOME", "kioskd_k1_home", "number.kioskd_k1_home"])
        let connects = r.bridge.clientView.snapshot.counters.connects

        let answer = try r.daemon.answer(.changeSettings(SettingsChange(set: [("homeassistant.name", .string("Hall scoreboard"))],
                                                                        source: .phone("Anna's phone", at: 1_790_000_000))))
        #expect(answer.status == 200, "\(answer.errorMessage ?? "")")
        #expect(r.daemon.state.load(SettingsLayer.stateKey)?.contains("Hall scoreboard") == true, "kept before it was answered")
        let value = try answer.decode(SettingsAnswer.self).values.first { $0.key == "homeassistant.name" }
        #expect(value?.value == .string("Hall scoreboard"))
        #expect(value?.source.hasPrefix("set from the phone by Anna's phone at ") == true)

        let after = try Self.waitForName(r, "Hall scoreboard")
        #expect(after?.name == "Hall scoreboard", "the retained discovery names the device as set")
        #expect(after?.ids == before.ids, "no unique id, object id or entity id changed")
        #expect(r.bridge.clientView.snapshot.counters.connects == connects, "the broker connection was not dropped")
        #expect(r.bridge.clientState == .connected)

        // A refused name changes nothing; a reset goes back to "kioskd ID".
        let empty = try r.daemon.answer(.changeSettings(SettingsChange(set: [("homeassistant.name", .string(""))], source: .kioskctl(at: 0))))
        #expect(empty.status == 422)
        #expect(empty.errorMessage?.contains("key 'homeassistant.name': expected the kiosk's name as Home Assistant shows it") == true, "\(empty.errorMessage ?? "")")
        try r.settle()
        #expect(try Self.seen(r)?.name == "Hall scoreboard")
        let reset = try r.daemon.answer(.changeSettings(SettingsChange(set: [], reset: ["homeassistant.name"], source: .kioskctl(at: 0))))
        #expect(reset.status == 200, "\(reset.errorMessage ?? "")")
        #expect(try Self.waitForName(r, "kioskd k1")?.ids == before.ids)
        #expect(r.bridge.clientView.snapshot.counters.connects == connects)
    }

    /// A change that cannot be kept (state not being saved) is refused and the discovery keeps
    /// its name: nothing is published for a change that was not kept.
    @Test func aNameThatCannotBeKeptIsNotPublished() throws {
        let r = try MQTTBridgeTests().rig(state: MemoryStateStore(durability: .unavailable("the state directory is read-only")))
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        let answer = try r.daemon.answer(.changeSettings(SettingsChange(set: [("homeassistant.name", .string("Hall scoreboard"))], source: .kioskctl(at: 0))))
        #expect(answer.status == 503)
        #expect(answer.errorMessage?.contains("settings cannot be kept") == true, "\(answer.errorMessage ?? "")")
        try pump(r.loop, seconds: 0.3) { false }
        try r.settle()
        #expect(try Self.seen(r)?.name == "kioskd k1")
        #expect(r.bridge.deviceName == nil)
    }

    /// The file's `[homeassistant] name` names the device from the start; the table needs `[mqtt]`.
    @Test func theFilesNameAndItsChecks() throws {
        let r = try MQTTBridgeTests().rig(extra: "[homeassistant]\nname = \"Gym east\"")
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        #expect(try Self.seen(r)?.name == "Gym east")

        let d = tempDir()
        let base = "state_dir = \"\(d)/s\"\n[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n"
        let noMQTT = configError { _ = try loadConfig(base + "[homeassistant]\nname = \"Gym\"\n", dir: d) }
        #expect(noMQTT?.contains("table '[homeassistant]': Home Assistant sees this kiosk through an MQTT broker; add an [mqtt] table") == true, "\(noMQTT ?? "")")
        let mqtt = "[mqtt]\nbroker = \"mqtt://127.0.0.1:1\"\nid = \"k\"\n"
        let long = configError { _ = try loadConfig(base + mqtt + "[homeassistant]\nname = \"\(String(repeating: "x", count: 65))\"\n", dir: d) }
        #expect(long?.contains("key 'homeassistant.name': 65 characters is too long; at most 64") == true, "\(long ?? "")")
        let unknown = configError { _ = try loadConfig(base + mqtt + "[homeassistant]\narea = \"Gym\"\n", dir: d) }
        #expect(unknown?.contains("homeassistant.area") == true, "\(unknown ?? "")")
        #expect(SettingsKeys.refusal("homeassistant.name") == nil)
        #expect(SettingsKeys.refusal("mqtt.id")?.contains("set only in the config file") == true)
    }
}
