#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore
import KioskMQTT
import KioskPosix
import KioskTesting
import XCTest

final class DuplicateIDTests: XCTestCase {
    // MARK: the detector, plain values

    func testThreeShortConnectionsInARowAreATakeoverReportedOnce() {
        var d = TakeoverDetector()
        let s: Int64 = 1_000_000_000
        XCTAssertFalse(d.lost(connectedNs: 0, lostNs: s / 10, longestRetryNs: 30 * s))
        XCTAssertFalse(d.lost(connectedNs: s, lostNs: s + s / 10, longestRetryNs: 30 * s))
        XCTAssertFalse(d.suspected)
        XCTAssertTrue(d.lost(connectedNs: 2 * s, lostNs: 2 * s + 4 * s, longestRetryNs: 30 * s)) // 4 s: still short
        XCTAssertTrue(d.suspected)
        XCTAssertFalse(d.lost(connectedNs: 10 * s, lostNs: 11 * s, longestRetryNs: 30 * s), "reported once per spell")
        XCTAssertEqual(d.shortInARow, 4)
        // Doubling from the initial backoff, bounded.
        XCTAssertEqual(d.delay(initial: s / 2, max: 30 * s), 4 * s)
        for i in 0..<20 { _ = d.lost(connectedNs: Int64(i) * 100 * s, lostNs: Int64(i) * 100 * s + s, longestRetryNs: 30 * s) }
        XCTAssertEqual(d.delay(initial: s / 2, max: 30 * s), 30 * s)
        // Once suspected, a connection of 20 s is still short (the other retries within 30 s) …
        XCTAssertFalse(d.lost(connectedNs: 0, lostNs: 20 * s, longestRetryNs: 30 * s))
        XCTAssertTrue(d.suspected)
        // … one of 36 s ends the spell.
        XCTAssertFalse(d.lost(connectedNs: 0, lostNs: 36 * s, longestRetryNs: 30 * s))
        XCTAssertFalse(d.suspected)
        XCTAssertEqual(d.shortInARow, 0)
        XCTAssertEqual(d.delay(initial: s / 2, max: 30 * s), s / 2)
        // Before the suspicion a connection of 5 s or more ends the count.
        _ = d.lost(connectedNs: 0, lostNs: 1, longestRetryNs: 30 * s)
        _ = d.lost(connectedNs: 0, lostNs: 5 * s, longestRetryNs: 30 * s)
        XCTAssertEqual(d.shortInARow, 0)
    }

    // MARK: two clients with one id on a real mosquitto

    func testTwoClientsWithOneIDLogOneErrorAndBackOff() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        var config = testConfig(port: broker.port, id: "twin")
        config.backoffInitial = 20_000_000
        config.backoffMax = 1_000_000_000
        let logsA = CapturedLog(), logsB = CapturedLog()
        let a = try MQTTClient(config: config, loop: loop, logger: logsA.logger)
        let b = try MQTTClient(config: config, loop: loop, logger: logsB.logger)
        a.start()
        b.start()
        try runFor(loop, seconds: 8)
        let connects = a.counters.connects + b.counters.connects
        let errors = [logsA, logsB].map { $0.all.filter { $0.contains("another MQTT client probably uses the client id \"kioskd-twin\"") }.count }
        print("two clients with one id, 8 s: connects \(a.counters.connects) + \(b.counters.connects), errors \(errors), last attempt gaps (ms) "
            + [a, b].map { c in zip(c.attemptTimes.suffix(4).dropFirst(), c.attemptTimes.suffix(4)).map { String(($0 - $1) / 1_000_000) }.joined(separator: ",") }.joined(separator: " / "))
        // Without the back-off the two take the session from each other every 20 ms (hundreds of
        // connects); with it the delays grow 20, 40, … ms to 1 s: at most ~15 each in 8 s.
        XCTAssertLessThanOrEqual(connects, 34, "connects \(a.counters.connects) + \(b.counters.connects)")
        XCTAssertGreaterThanOrEqual(connects, 4)
        XCTAssertTrue(errors.allSatisfy { $0 <= 1 }, "one error per client: \(errors)\n\(logsA.all)\n\(logsB.all)")
        XCTAssertGreaterThanOrEqual(errors.reduce(0, +), 1, "\(logsA.all)\n\(logsB.all)")
        XCTAssertTrue(a.duplicateIDWarning != nil || b.duplicateIDWarning != nil)
        // The last attempts are at least the ceiling apart (less the 20 % jitter and loop latency).
        for c in [a, b] where c.duplicateIDWarning != nil {
            let t = c.attemptTimes.suffix(3)
            let gaps = zip(t.dropFirst(), t).map { Double($0 - $1) / 1e6 }
            XCTAssertTrue(gaps.allSatisfy { $0 >= 700 }, "gaps \(gaps) ms")
        }
        a.stop()
        b.stop()
        try runFor(loop, seconds: 0.3)
    }
}
