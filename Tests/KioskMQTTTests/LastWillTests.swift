#if canImport(Glibc)
import Glibc
#endif
import Foundation
import KioskCore
import KioskMQTT
import KioskPosix
import KioskTesting
import XCTest

/// The last will: a client that dies without DISCONNECT (SIGKILL) leaves `offline` retained,
/// published by the broker from the will the client registered before connecting. The client
/// runs in a child process: this test binary itself, running `ChildClient.testRunAsChild`.
final class LastWillTests: XCTestCase {
    func testSIGKILLedClientLeavesRetainedOfflineWill() throws {
        let broker = try Broker()
        try broker.start()
        let loop = try EventLoop()
        let watcher = try MQTTClient(config: testConfig(port: broker.port, id: "watcher"), loop: loop)
        var seen: [MQTTClient.Message] = []
        watcher.subscribe("kioskd/child/availability") { seen.append($0) }
        watcher.start()
        XCTAssertTrue(try runUntil(loop) { watcher.state == .connected })

        var env = ProcessInfo.processInfo.environment
        env["KIOSK_MQTT_CHILD_PORT"] = "\(broker.port)"
        let child = try SpawnedProcess(try String(decoding: readLink("/proc/self/exe"), as: UTF8.self),
                                       ["KioskMQTTTests.ChildClient/testRunAsChild"], environment: env)
        XCTAssertTrue(try runUntil(loop, seconds: 20) { seen.last?.text == "online" }, "seen \(seen.map(\.text))")

        child.signal(SIGKILL)
        child.wait()
        XCTAssertTrue(try runUntil(loop, seconds: 10) { seen.last?.text == "offline" }, "seen \(seen.map(\.text))")
        // Retained: a later subscriber sees it too.
        let out = try runTool("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(broker.port)", "-t", "kioskd/child/availability", "-C", "1", "-W", "5", "-F", "%p %r"])
        XCTAssertEqual(out.trimmingCharacters(in: .whitespacesAndNewlines), "offline 1")
    }
}

func readLink(_ path: String) throws -> [UInt8] {
    var buf = [UInt8](repeating: 0, count: 4096)
    let n = try Posix.call("readlink", path: path) { buf.withUnsafeMutableBufferPointer { readlink(path, $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: 4096) { $0 }, 4096) } }
    return Array(buf[0..<n])
}

/// Not a test on its own: the client of `testSIGKILLedClientLeavesRetainedOfflineWill`, run in a
/// child process. Without KIOSK_MQTT_CHILD_PORT it is skipped.
final class ChildClient: XCTestCase {
    func testRunAsChild() throws {
        guard let p = ProcessInfo.processInfo.environment["KIOSK_MQTT_CHILD_PORT"], let port = Int(p) else {
            throw XCTSkip("runs only as the child process of the last-will test")
        }
        let loop = try EventLoop()
        let client = try MQTTClient(config: testConfig(port: port, id: "child"), loop: loop)
        client.start()
        // Until the parent kills it (bounded, should the parent die first).
        try runFor(loop, seconds: 30)
    }
}
