import KioskMQTT
import XCTest

/// The reconnect delays as exact values: no broker, no clock, the random fraction given.
final class ReconnectBackoffTests: XCTestCase {
    let ms: Int64 = 1_000_000
    let s: Int64 = 1_000_000_000

    func testDoublesFromTheInitialDelayUpToTheCeilingEachUpToAFifthShorter() {
        let b = ReconnectBackoff(initial: 20 * ms, max: 160 * ms)
        let none = TakeoverDetector()
        XCTAssertEqual((1...7).map { b.delay(failures: $0, refused: false, takeover: none, fraction: 0) },
                       [20, 40, 80, 160, 160, 160, 160].map { $0 * ms })
        XCTAssertEqual(b.delay(failures: 3, refused: false, takeover: none, fraction: 0.5), 72 * ms)
        // The shortest a delay can be still exceeds the previous nominal one until the ceiling.
        XCTAssertGreaterThan(b.delay(failures: 3, refused: false, takeover: none, fraction: 0.999_999), 40 * ms)
        XCTAssertEqual(b.delay(failures: 100_000, refused: false, takeover: none, fraction: 0), 160 * ms, "no overflow")
        XCTAssertEqual(b.delay(failures: 0, refused: false, takeover: none, fraction: 0), 20 * ms)
    }

    func testARefusedLoginWaitsTheCeilingWithoutJitter() {
        let b = ReconnectBackoff(initial: s / 2, max: 30 * s)
        XCTAssertEqual(b.delay(failures: 1, refused: true, takeover: TakeoverDetector(), fraction: 0.9), 30 * s)
    }

    func testConnectionsLostRightAfterConnectFollowTheTakeoverDelayNotTheFailureCount() {
        let b = ReconnectBackoff(initial: s / 2, max: 30 * s)
        var d = TakeoverDetector()
        for i in 0..<4 { _ = d.lost(connectedNs: Int64(i) * 10 * s, lostNs: Int64(i) * 10 * s + s / 10, longestRetryNs: 30 * s) }
        XCTAssertEqual(d.shortInARow, 4)
        XCTAssertEqual(b.delay(failures: 1, refused: false, takeover: d, fraction: 0), 4 * s)
        XCTAssertEqual(b.delay(failures: 1, refused: false, takeover: d, fraction: 0.5), 4 * s - 4 * s / 10)
    }
}
