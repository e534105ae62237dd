import Foundation
import KioskControl
import KioskCore
import KioskTestTraits
import KioskTesting
import Testing

/// A fleet as a venue runs it, across config reloads: a primary and a follower (real kioskd
/// processes) on a real mosquitto, a phone paired to each kiosk's web page, `kioskctl` on both
/// and a home automation publishing on the kiosks' own MQTT topics; `kioskctl reload` of the
/// follower, then of the primary, between the changes. KIOSK_SLOW_TESTS=1.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct FleetReloadProcessTests {
    let faults = FleetFaultTests()

    /// One kiosk of the test: its process, its web port and a paired phone's cookie.
    struct Kiosk {
        let k: FleetFaultTests.Kiosk
        let id: String
        let webPort: Int
        var cookie = ""
    }

    func start(_ root: String, id: String, role: String, brokerPort: Int) throws -> Kiosk {
        let k = FleetFaultTests.Kiosk(id, "\(root)/\(id)")
        try FileManager.default.createDirectory(atPath: k.dir, withIntermediateDirectories: true)
        let port = try Loopback.freePort()
        let text = faults.config(k.dir, id: id, role: role, port: brokerPort) + "\n[web]\nlisten = \"127.0.0.1:\(port)\"\n"
        _ = write(text, k.dir)
        try k.start()
        var kiosk = Kiosk(k: k, id: id, webPort: port)
        kiosk.cookie = try pair(kiosk)
        return kiosk
    }

    /// Pairs a phone (operator) with the kiosk's page: a code from the control socket, redeemed
    /// on `POST /api/pair`; the cookie the page then sends.
    func pair(_ kiosk: Kiosk) throws -> String {
        let r = try ControlClient(socketPath: kiosk.k.socket, timeout: 10).send(.pair(role: "operator", show: false))
        let code = try #require(r.jsonObject?["code"] as? String, "no pairing code: HTTP \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        let answer = try LoopbackHTTP.request(kiosk.webPort, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "phone"}"#)
        try #require(answer.status == 200, "pairing with \(kiosk.id)'s page: HTTP \(answer.status) \(answer.text)")
        return String(try #require(answer.headers["set-cookie"]).split(separator: ";")[0])
    }

    enum Road: String { case web, socket, mqtt }

    /// One increment of HOME through `road` on `kiosk`. Web and socket: acknowledged when
    /// answered 200, and the answer must name the value the count of acknowledged changes gives.
    /// MQTT: acknowledged once the broker took it (QoS 1); the kiosk answers nothing.
    func increment(_ kiosk: Kiosk, _ road: Road, broker: Int, acked: inout Int, log: inout [String]) throws {
        switch road {
        case .web:
            let r = try LoopbackHTTP.request(kiosk.webPort, "POST", "/api/counter/HOME/inc", cookie: kiosk.cookie)
            let value = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
            #expect(r.status == 200, "web inc on \(kiosk.id): HTTP \(r.status) \(r.text)")
            if r.status == 200 { acked += 1 }
            #expect(value?["value"] as? Int == acked, "web inc on \(kiosk.id) answered \(r.text); \(acked) changes acknowledged")
            log.append("web@\(kiosk.id)→\(value?["value"] as? Int ?? -1)")
        case .socket:
            let r = try ControlClient(socketPath: kiosk.k.socket, timeout: 10).send(method: .POST, path: "/counter/HOME/inc")
            #expect(r.status == 200, "socket inc on \(kiosk.id): HTTP \(r.status) \(String(decoding: r.body, as: UTF8.self))")
            if r.status == 200 { acked += 1 }
            #expect(r.jsonObject?["value"] as? Int == acked, "socket inc on \(kiosk.id) answered \(String(decoding: r.body, as: UTF8.self)); \(acked) changes acknowledged")
            log.append("socket@\(kiosk.id)→\(r.jsonObject?["value"] as? Int ?? -1)")
        case .mqtt:
            let status = fleetRun("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(broker)", "-q", "1", "-t", "kioskd/\(kiosk.id)/counter/HOME/inc", "-m", "1"])
            #expect(status == 0, "mosquitto_pub to \(kiosk.id) exited with \(status)")
            if status == 0 { acked += 1 }
            log.append("mqtt@\(kiosk.id)")
        }
    }

    /// What each kiosk shows: the control socket's counter, and the web page's status.
    func shown(_ kiosk: Kiosk) -> [Int?] {
        let web = (try? LoopbackHTTP.request(kiosk.webPort, "GET", "/api/counter/HOME", cookie: kiosk.cookie))
            .flatMap { (try? JSONSerialization.jsonObject(with: Data($0.body))) as? [String: Any] }?["value"] as? Int
        return [kiosk.k.value(), web]
    }

    /// Whether both kiosks show `value` on every road within 5 s (an MQTT change, and the state
    /// reaching a follower, take their own time); the values last seen.
    func bothShow(_ ks: [Kiosk], _ value: Int) -> (Bool, [[Int?]]) {
        var seen: [[Int?]] = []
        for _ in 0..<100 {
            seen = ks.map(shown)
            if seen.allSatisfy({ $0.allSatisfy { $0 == value } }) { return (true, seen) }
            usleep(50_000) // bounded polling of the kiosks' values
        }
        return (false, seen)
    }

    func reload(_ kiosk: Kiosk) throws {
        let r = try ControlClient(socketPath: kiosk.k.socket, timeout: 10).send(.reload)
        #expect(r.status == 200, "reload of \(kiosk.id): HTTP \(r.status) \(String(decoding: r.body, as: UTF8.self))")
    }

    @Test func bothKiosksShowEveryAcknowledgedChangeAcrossReloadsOfFollowerAndPrimary() throws {
        #expect(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        let root = tempDir()
        let broker = try FleetBroker(dir: root)
        try broker.start()
        var p = try start(root, id: "p", role: "primary", brokerPort: broker.port)
        let f = try start(root, id: "f", role: "follower", brokerPort: broker.port)
        defer { p.k.stop(); f.k.stop(); broker.stop() }
        var acked = 0
        var log: [String] = []
        var steps: [String] = []
        func check(_ step: String) {
            let (ok, seen) = bothShow([p, f], acked)
            steps.append("\(step): acknowledged \(acked), primary \(seen[0]), follower \(seen[1])")
            #expect(ok, "\(step): \(acked) changes acknowledged; the primary shows \(seen[0]) and the follower \(seen[1]) (socket, web)\n\(steps.joined(separator: "\n"))")
        }
        // Both connected: the follower's first change comes back from the primary.
        #expect(bothShow([p, f], 0).0)
        for (k, road) in [(f, Road.web), (p, .socket), (f, .socket), (p, .web), (f, .mqtt)] {
            try increment(k, road, broker: broker.port, acked: &acked, log: &log)
            // An MQTT change is answered by nobody: the next answer counts it once it is shown.
            if road == .mqtt { check("an MQTT change on \(k.id)") }
        }
        check("before any reload")

        // An MQTT change in flight while the follower reloads, then changes from every road.
        try increment(p, .mqtt, broker: broker.port, acked: &acked, log: &log)
        try reload(f)
        check("after the follower's reload")
        for (k, road) in [(f, Road.web), (f, .socket), (p, .socket), (f, .mqtt), (p, .web)] {
            try increment(k, road, broker: broker.port, acked: &acked, log: &log)
            // An MQTT change is answered by nobody: the next answer counts it once it is shown.
            if road == .mqtt { check("an MQTT change on \(k.id)") }
        }
        check("changes after the follower's reload")

        try increment(f, .mqtt, broker: broker.port, acked: &acked, log: &log)
        try reload(p)
        check("after the primary's reload")
        for (k, road) in [(f, Road.web), (f, .web), (p, .socket), (p, .socket), (p, .mqtt), (f, .socket)] {
            try increment(k, road, broker: broker.port, acked: &acked, log: &log)
            // An MQTT change is answered by nobody: the next answer counts it once it is shown.
            if road == .mqtt { check("an MQTT change on \(k.id)") }
        }
        check("changes after the primary's reload")

        // Both reloaded once more, back to back: nothing is detached twice either.
        try reload(f)
        try reload(p)
        for (k, road) in [(p, Road.web), (f, .socket), (f, .mqtt)] {
            try increment(k, road, broker: broker.port, acked: &acked, log: &log)
            // An MQTT change is answered by nobody: the next answer counts it once it is shown.
            if road == .mqtt { check("an MQTT change on \(k.id)") }
        }
        check("changes after reloading both")

        // The primary's state folder wiped while it is stopped: it takes the group's retained
        // state over at its start, and the group goes on from there.
        p.k.stop()
        try FileManager.default.removeItem(atPath: "\(p.k.dir)/state")
        try p.k.start()
        p.cookie = try pair(p) // the paired phones were kept in the state folder
        check("the primary restarted with its state folder wiped")
        #expect(p.k.child?.log.contains("taking over its value and seq") == true, "\(p.k.child?.log.suffix(2000) ?? "")")
        #expect(p.k.child?.log.contains("forged") == false, "\(p.k.child?.log.suffix(2000) ?? "")")
        for (k, road) in [(f, Road.socket), (p, .web), (f, .web), (p, .socket)] {
            try increment(k, road, broker: broker.port, acked: &acked, log: &log)
        }
        check("changes after the primary's wipe")
        print("fleet across reloads:\n\(steps.joined(separator: "\n"))\nchanges: \(log.joined(separator: " "))")
    }
}
