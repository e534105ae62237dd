#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore
import KioskMQTT
import KioskPosix
import XCTest

/// A subscription handler may publish (an answer, an error, a state): the daemon's bridge and
/// the fleet do. The loop runs on its own thread here, so a freeze fails the test instead of
/// hanging it.
final class HandlerPublishTests: XCTestCase {
    final class Count: @unchecked Sendable {
        // @unchecked: `n` is read and written only with `lock` held.
        private let lock = NSLock()
        private var n = 0
        func add() { lock.lock(); n += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return n }
    }

    func testAHandlerThatPublishesKeepsTheLoopRunningAcrossABrokerRestart() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let port = broker.port
        let echoed = Count()
        let ticks = Count()
        let sent = 300
        // Everything of the clients lives on the loop's thread.
        final class Box: @unchecked Sendable {
            // @unchecked: touched only on the loop's thread.
            var clients: [MQTTClient] = []
        }
        let box = Box()
        loop.post {
            do {
                let echo = try MQTTClient(config: testConfig(port: port, id: "echo"), loop: loop)
                let sender = try MQTTClient(config: testConfig(port: port, id: "sender"), loop: loop)
                // The handler publishes from inside the delivery of a message.
                echo.subscribe("ping/#") { m in
                    echo.publish("pong/x", m.payload, qos: 1)
                    echo.publish("pong/zero", m.payload, qos: 0)
                }
                sender.subscribe("pong/x") { _ in echoed.add() }
                echo.start()
                sender.start()
                box.clients = [echo, sender]
                func tick() { _ = try? loop.schedule(after: 10_000_000) { _ in ticks.add(); tick() } }
                tick()
            } catch {
                XCTFail("\(error)")
            }
        }
        let thread = Thread { try? loop.run() }
        thread.start()
        func wait(_ seconds: Double, _ condition: () -> Bool) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end { if condition() { return true }; usleep(10_000) }
            return condition()
        }
        func burst(_ n: Int) {
            for i in 0..<n {
                loop.post { box.clients.last?.publish("ping/\(i % 7)", "p\(i)", qos: 1) }
            }
        }
        // Until both subscriptions are in place (bounded probes): a ping sent before the echo has
        // (re)subscribed reaches nobody.
        func probe() -> Bool {
            let start = echoed.value
            for _ in 0..<100 {
                burst(1)
                if wait(0.2, { echoed.value > start }) { return true }
            }
            return false
        }
        XCTAssertTrue(probe(), "the echo never answered")
        let before = echoed.value
        burst(sent / 2)
        XCTAssertTrue(wait(15) { echoed.value >= before + sent / 2 }, "echoed \(echoed.value - before) of \(sent / 2) before the restart")
        broker.kill()
        try broker.start()
        XCTAssertTrue(probe(), "the echo never answered after the broker's restart")
        let afterRestart = echoed.value
        burst(sent / 2)
        XCTAssertTrue(wait(30) { echoed.value >= afterRestart + sent / 2 }, "echoed \(echoed.value - afterRestart) of \(sent / 2) after the restart")
        let t0 = ticks.value
        XCTAssertTrue(wait(2) { ticks.value > t0 + 20 }, "the loop's timer stopped: the loop is frozen")
        loop.post {
            for c in box.clients { c.stop() }
            box.clients.removeAll()
            loop.stop()
        }
        _ = wait(5) { thread.isFinished }
    }
}
