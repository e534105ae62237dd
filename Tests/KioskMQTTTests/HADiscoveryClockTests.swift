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
        XCTAssertEqual(c["clock_board_start"]?["default_entity_id"] as? String, "button.kioskd_hall_clock_board_start")
        XCTAssertEqual(c["clock_board_remaining"]?["platform"] as? String, "sensor")
        XCTAssertEqual(c["clock_board_remaining"]?["state_topic"] as? String, "kioskd/hall/clock/board/remaining")
        XCTAssertEqual(c["clock_board_running"]?["platform"] as? String, "binary_sensor")
        XCTAssertEqual(c["clock_board_running"]?["state_topic"] as? String, "kioskd/hall/clock/board/running")
        XCTAssertEqual(c["clock_board_running"]?["payload_on"] as? String, "ON")
        XCTAssertEqual(c["clock_board_period"]?["state_topic"] as? String, "kioskd/hall/clock/board/period")
        XCTAssertEqual(c["clock_board_period"]?["name"] as? String, "Clock period")
        // Two clock scenes: names tell them apart, unique ids stay unique.
        let two = try components(["board", "court 2"])
        XCTAssertEqual(two["clock_board_period"]?["name"] as? String, "Clock board period")
        let courtKey = "clock_" + KioskTopics.outputLevel("court 2") + "_start"
        XCTAssertEqual(two[courtKey]?["command_topic"] as? String, "kioskd/hall/clock/\(KioskTopics.outputLevel("court 2"))/set")
        let ids = two.values.compactMap { $0["unique_id"] as? String }
        XCTAssertEqual(Set(ids).count, two.count)
    }
}
