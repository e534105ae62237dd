import Foundation
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskScenes
import KioskState
import KioskTesting
import Testing

/// Limits on what a client can make kioskd keep or convert: fleet command ids and records,
/// MQTT payloads of topics that ignore them.
@Suite struct BoundedInputTests {
    func publishCommand(_ broker: FakeFleetBroker, id: String) throws {
        broker.publish("kioskd/group/hall/counter/HOME/cmd", Array(try JSONEncoder().encode(FleetCommand(op: .inc, id: id))), retain: false)
        broker.deliver()
    }

    @Test func aFleetIdLongerThan64BytesIsRefusedOnTheErrorTopicAndNeverKept() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        let long = String(repeating: "x", count: 65)
        try publishCommand(broker, id: long)
        #expect(primary.value == 0)
        let error = broker.log.first { $0.topic == "kioskd/p/error" }.map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(error == "fleet command for counter 'HOME' refused: its id is 65 bytes long, more than the 64 bytes allowed")
        #expect(!(broker.retained["kioskd/group/hall/counter/HOME"].map { String(decoding: $0, as: UTF8.self).contains(long) } ?? false))
        #expect(primary.engine.applyNow(FleetCommand(op: .inc, id: long), to: "HOME")?.failure?.message.contains("64 bytes allowed") == true)
        // 64 bytes is accepted.
        try publishCommand(broker, id: String(repeating: "y", count: 64))
        #expect(primary.value == 1)
    }

    @Test func thePrimarysRecordStaysWithin64KiB() throws {
        let broker = FakeFleetBroker(), loop = ManualEventLoop()
        let store = MemoryStateStore()
        let primary = try FleetKiosk(.primary, id: "p", broker: broker, loop: loop, store: store)
        for i in 0..<1100 {
            let id = String(repeating: "z", count: 58) + String(format: "%06d", i)
            #expect(throws: Never.self) { try primary.engine.applyNow(FleetCommand(op: .inc, id: id), to: "HOME")?.get() }
        }
        // The record's head and its id chunks together.
        let kept = store.values.filter { $0.key.hasPrefix("fleet.hall.HOME") }
        let bytes = kept.values.reduce(0) { $0 + $1.utf8.count }
        #expect(kept.count == 1 + FleetEngine.IDChunks.count && bytes <= 64 * 1024, "record of \(bytes) bytes in \(kept.count) keys")
        let retained = try #require(broker.retained["kioskd/group/hall/counter/HOME"])
        #expect(retained.count <= 64 * 1024)
        // The newest ids are the ones kept.
        #expect(kept.values.contains { $0.contains(String(repeating: "z", count: 58) + "001099") })
    }

    @Test func aPayloadIsConvertedOnlyForTopicsThatReadIt() throws {
        var conversions = 0
        func payload() -> String { conversions += 1; return "5" }
        _ = MQTTBridge.command(levels: ["counter", "HOME", "inc"], payload: payload())
        _ = MQTTBridge.command(levels: ["counter", "HOME", "reset"], payload: payload())
        _ = MQTTBridge.command(levels: ["some", "other"], payload: payload())
        #expect(conversions == 0)
        #expect(try MQTTBridge.command(levels: ["counter", "HOME", "set"], payload: payload()).get() == .counter(name: "HOME", op: .set, value: 5))
        #expect(conversions == 1)
    }
}

extension Result {
    var failure: Failure? { if case .failure(let e) = self { return e }; return nil }
}
