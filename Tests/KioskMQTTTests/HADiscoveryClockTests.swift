import Foundation
import KioskMQTT
import XCTest

/// Home Assistant's entities for the game clocks: only for scenes with a clock, each button
/// sending words `ClockIntent.parse` reads on the scene's clock command topic.
final class HADiscoveryClockTests: XCTestCase {
    func components(_ clocks: [String]) throws -> [String: [String: Any]] {
        let d = HADiscovery(id: "hall", prefix: "homeassistant", scenes: ["board", "clock"], themes: ["default"],
                            counters: [.init(name: "HOME", label: "Home", minimum: 0, maximum: 99)], clocks: clocks)
        return try XCTUnwrap(d.object["components"] as? [String: [String: Any]])
    }

    func testNoClockNoClockEntities() throws {
        XCTAssertTrue(try components([]).keys.filter { $0.hasPrefix("clock") }.isEmpty)
    }

    func testEachClockSceneHasButtonsAndSensors() throws {
        let c = try components(["board"])
        XCTAssertEqual(Set(c.keys.filter { $0.hasPrefix("clock_") }), [
            "clock_board_start", "clock_board_stop", "clock_board_reset", "clock_board_next_period", "clock_board_reset_shot",
            "clock_board_remaining", "clock_board_running", "clock_board_period",
        ])
        for (key, payload) in [("start", "start"), ("stop", "stop"), ("reset", "reset"), ("next_period", "period next"), ("reset_shot", "reset shot")] {
            let b = try XCTUnwrap(c["clock_board_\(key)"])
            XCTAssertEqual(b["platform"] as? String, "button")
            XCTAssertEqual(b["command_topic"] as? String, "kioskd/hall/clock/board/set")
            XCTAssertEqual(b["payload_press"] as? String, payload)
        }
        let fields: [(String, String, String)] = [
            ("start", "default_entity_id", "button.kioskd_hall_clock_board_start"),
            ("remaining", "platform", "sensor"), ("remaining", "state_topic", "kioskd/hall/clock/board/remaining"),
            ("running", "platform", "binary_sensor"), ("running", "state_topic", "kioskd/hall/clock/board/running"),
            ("running", "payload_on", "ON"), ("period", "state_topic", "kioskd/hall/clock/board/period"), ("period", "name", "Clock period"),
        ]
        for (key, field, value) in fields {
            XCTAssertEqual(c["clock_board_\(key)"]?[field] as? String, value, "clock_board_\(key).\(field)")
        }
        // Two clock scenes: names tell them apart, unique ids stay unique.
        let two = try components(["board", "court 2"])
        XCTAssertEqual(two["clock_board_period"]?["name"] as? String, "Clock board period")
        let courtKey = "clock_" + KioskTopics.outputLevel("court 2") + "_start"
        XCTAssertEqual(two[courtKey]?["command_topic"] as? String, "kioskd/hall/clock/\(KioskTopics.outputLevel("court 2"))/set")
        let ids = two.values.compactMap { $0["unique_id"] as? String }
        XCTAssertEqual(Set(ids).count, two.count)
    }
}
