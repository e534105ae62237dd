import Foundation
import KioskMQTT
import XCTest

/// Home Assistant's device discovery message, pinned byte for byte by golden files
/// (`golden/*.json`, indented with sorted keys; KIOSK_UPDATE_GOLDEN=1 rewrites them).
final class HADiscoveryTests: XCTestCase {
    static let goldenDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("golden")

    func assertGolden(_ d: HADiscovery, _ name: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let path = Self.goldenDir.appendingPathComponent(name).path
        let pretty = String(decoding: d.json(pretty: true), as: UTF8.self) + "\n"
        if ProcessInfo.processInfo.environment["KIOSK_UPDATE_GOLDEN"] == "1" {
            try pretty.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertEqual(pretty, golden, "discovery differs from \(path)", file: file, line: line)
        // The compact payload sent is the same object.
        let compact = try JSONSerialization.jsonObject(with: Data(d.json())) as? NSDictionary
        let pinned = try JSONSerialization.jsonObject(with: Data(golden.utf8)) as? NSDictionary
        XCTAssertEqual(compact, pinned, file: file, line: line)
        XCTAssertFalse(d.json().contains(0x0A), "the payload is one line", file: file, line: line)
    }

    func testScoreboardDevice() throws {
        let d = HADiscovery(id: "hall-east", prefix: "homeassistant", scenes: ["clock", "score"],
                            themes: ["default", "night", "scoreboard"],
                            counters: [.init(name: "HOME", label: "Home", minimum: 0, maximum: 99),
                                       .init(name: "GUEST", label: "", minimum: -9, maximum: 999)])
        XCTAssertEqual(d.topic, "homeassistant/device/kioskd_hall-east/config")
        XCTAssertEqual(d.statusTopic, "homeassistant/status")
        try assertGolden(d, "scoreboard.json")
        let o = d.object
        let cmps = try XCTUnwrap(o["components"] as? [String: [String: Any]])
        XCTAssertEqual(cmps["counter_HOME"]?["max"] as? Int, 99)
        XCTAssertEqual(cmps["counter_GUEST"]?["min"] as? Int, -9)
        XCTAssertEqual(cmps["counter_GUEST"]?["mode"] as? String, "box")
        XCTAssertEqual(cmps["counter_HOME_inc"]?["command_topic"] as? String, "kioskd/hall-east/counter/HOME/inc")
        XCTAssertEqual(cmps["blank"]?["platform"] as? String, "switch")
        // Explicit entity ids: +1 and −1 are told apart by what they do, not made from their names.
        XCTAssertEqual(cmps["counter_HOME_inc"]?["default_entity_id"] as? String, "button.kioskd_hall_east_home_increment")
        XCTAssertEqual(cmps["counter_HOME_dec"]?["default_entity_id"] as? String, "button.kioskd_hall_east_home_decrement")
        XCTAssertEqual(cmps["counter_HOME_reset"]?["default_entity_id"] as? String, "button.kioskd_hall_east_home_reset")
        XCTAssertEqual(cmps["counter_HOME"]?["default_entity_id"] as? String, "number.kioskd_hall_east_home")
        XCTAssertEqual(cmps["counter_HOME"]?["object_id"] as? String, "kioskd_hall_east_home")
        XCTAssertEqual(cmps["scene"]?["default_entity_id"] as? String, "select.kioskd_hall_east_scene")
        XCTAssertEqual(cmps["blank"]?["default_entity_id"] as? String, "switch.kioskd_hall_east_panel_blanked")
        let entityIDs = cmps.values.compactMap { $0["default_entity_id"] as? String }
        XCTAssertEqual(entityIDs.count, cmps.count, "every component has an entity id")
        XCTAssertEqual(Set(entityIDs).count, entityIDs.count, "entity ids are unique")
        for e in entityIDs {
            let (platform, object) = (e.split(separator: ".")[0], e.split(separator: ".")[1])
            XCTAssertTrue(object.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }, e)
            XCTAssertTrue(cmps.values.contains { $0["default_entity_id"] as? String == e && $0["platform"] as? String == String(platform) }, e)
        }
        XCTAssertEqual(HADiscovery.entitySlug("Home-Team"), "home_team")
        XCTAssertNotEqual(HADiscovery.entitySlug("a.b"), HADiscovery.entitySlug("a:b"), "replaced characters keep names apart")
        // Every entity has a unique id, as Home Assistant requires.
        let ids = cmps.values.compactMap { $0["unique_id"] as? String }
        XCTAssertEqual(ids.count, cmps.count)
        XCTAssertEqual(Set(ids).count, ids.count)
    }

    func testClockOnlyDeviceWithOddIdAndPrefix() throws {
        let d = HADiscovery(id: "lobby.1 ü", prefix: "ha/disc", scenes: ["clock"], themes: ["default"], counters: [])
        // '.', ' ' and 'ü' replaced, then a hash of the id (FNV-1a) keeps it apart from "lobby_1__".
        XCTAssertEqual(d.objectID, "kioskd_lobby_1___f8e386d9")
        XCTAssertTrue(d.objectID.unicodeScalars.allSatisfy { CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-").contains($0) })
        XCTAssertEqual(d.topic, "ha/disc/device/\(d.objectID)/config")
        try assertGolden(d, "clock.json")
    }

    /// "Screen showing": one binary sensor per output, on the output's `showing` topic.
    func testScreenShowingSensors() throws {
        let one = HADiscovery(id: "hall", prefix: "homeassistant", scenes: ["clock"], themes: ["default"], counters: [], screens: ["HDMI-A-1"])
        let c1 = try XCTUnwrap(one.object["components"] as? [String: Any])
        let s = try XCTUnwrap(c1["screen_showing_HDMI-A-1"] as? [String: Any])
        XCTAssertEqual(s["platform"] as? String, "binary_sensor")
        XCTAssertEqual(s["name"] as? String, "Screen showing")
        XCTAssertEqual(s["state_topic"] as? String, "kioskd/hall/output/HDMI-A-1/showing")
        XCTAssertEqual(s["payload_on"] as? String, "ON")
        XCTAssertEqual(s["payload_off"] as? String, "OFF")
        XCTAssertEqual(s["unique_id"] as? String, "kioskd_hall_screen_showing_HDMI-A-1")
        XCTAssertEqual(s["default_entity_id"] as? String, "binary_sensor.kioskd_hall_screen_showing")
        let two = HADiscovery(id: "hall", prefix: "homeassistant", scenes: ["clock"], themes: ["default"], counters: [],
                              outputs: [.init(name: "HDMI-A-1", scenes: ["clock"]), .init(name: "DSI-1", scenes: ["clock"])],
                              screens: ["HDMI-A-1", "DSI-1"])
        let c2 = try XCTUnwrap(two.object["components"] as? [String: Any])
        let dsi = try XCTUnwrap(c2["screen_showing_DSI-1"] as? [String: Any])
        XCTAssertEqual(dsi["name"] as? String, "Screen showing DSI-1")
        XCTAssertEqual(dsi["state_topic"] as? String, "kioskd/hall/output/DSI-1/showing")
        XCTAssertEqual(dsi["default_entity_id"] as? String, "binary_sensor.kioskd_hall_screen_showing_dsi_1")
        XCTAssertNotNil(c2["screen_showing_HDMI-A-1"])
        // Without screens (an older daemon's view), no sensor.
        let none = HADiscovery(id: "hall", prefix: "homeassistant", scenes: ["clock"], themes: ["default"], counters: [])
        XCTAssertFalse((none.object["components"] as? [String: Any] ?? [:]).keys.contains { $0.hasPrefix("screen_showing") })
    }

    func testSlugKeepsNamesApart() {
        XCTAssertEqual(HADiscovery.slug("HOME"), "HOME")
        XCTAssertNotEqual(HADiscovery.slug("a.b"), HADiscovery.slug("a:b"))
        XCTAssertTrue(HADiscovery.slug("a.b").hasPrefix("a_b_"))
    }
}
