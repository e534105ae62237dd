import KioskCore
import KioskMQTT
import XCTest

final class MQTTConfigTests: XCTestCase {
    typealias E = MQTTConfig.Entry

    private func parse(_ entries: [String: E], files: [String: String] = [:]) throws -> MQTTConfig {
        try MQTTConfig.parse(entries, hostName: "host1") { path in
            guard let s = files[path] else { throw KioskError.config("open \(path) failed: No such file or directory (errno 2)") }
            return s
        }
    }

    private func error(_ entries: [String: E], files: [String: String] = [:]) -> String {
        do { _ = try parse(entries, files: files); return "no error" } catch { return "\(error)" }
    }

    func testBrokerURLForms() throws {
        let c = try parse(["broker": E(.string("mqtt://10.0.0.5:1884"), at: "k.toml:2")])
        XCTAssertEqual(c.host, "10.0.0.5")
        XCTAssertEqual(c.port, 1884)
        XCTAssertNil(c.tls)
        XCTAssertEqual(c.id, "host1")
        XCTAssertEqual(c.availabilityTopic, "kioskd/host1/availability")
        XCTAssertEqual(try MQTTConfig.parseBrokerURL("mqtt://broker.lan").port, 1883)
        XCTAssertEqual(try MQTTConfig.parseBrokerURL("mqtts://broker.lan").port, 8883)
        let v6 = try MQTTConfig.parseBrokerURL("mqtt://[::1]:2000")
        XCTAssertEqual(v6.host, "::1")
        XCTAssertEqual(v6.port, 2000)
    }

    func testTLSAndCredentials() throws {
        let c = try parse([
            "broker": E(.string("mqtts://hub:8883"), at: "k.toml:2"),
            "id": E(.string("hall-east"), at: "k.toml:3"),
            "username": E(.string("kiosk"), at: "k.toml:4"),
            "password_file": E(.string("/etc/kioskd/mqtt.secret"), at: "k.toml:5"),
            "ca_file": E(.string("/etc/ssl/ca.pem"), at: "k.toml:6"),
            "keepalive": E(.integer(30), at: "k.toml:7"),
            "queue_limit": E(.integer(10), at: "k.toml:8"),
        ], files: ["/etc/kioskd/mqtt.secret": "s3cret\n"])
        XCTAssertEqual(c.tls, MQTTConfig.TLS(caFile: "/etc/ssl/ca.pem"))
        XCTAssertEqual(c.password, "s3cret")
        XCTAssertEqual(c.clientID, "kioskd-hall-east")
        XCTAssertEqual(c.keepalive, 30)
        XCTAssertEqual(c.queueLimit, 10)
    }

    func testErrorsNameLocationKeyAndValue() {
        XCTAssertEqual(error(["broker": E(.string("http://hub"), at: "k.toml:2")]),
                       "k.toml:2: key 'mqtt.broker': \"http://hub\" is not a broker URL: expected mqtt://HOST:PORT or mqtts://HOST:PORT")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub:99999"), at: "k.toml:2")]),
                       "k.toml:2: key 'mqtt.broker': \"mqtt://hub:99999\": port \"99999\" is not a number in 1...65535")
        XCTAssertEqual(error([:]), "key 'mqtt.broker': missing: the broker URL, for example \"mqtt://127.0.0.1:1883\"")
        XCTAssertEqual(error(["broker": E(.string("mqtts://hub"), at: "k.toml:2")]),
                       "k.toml:2: key 'mqtt.ca_file': missing: \"mqtts://hub\" uses TLS and needs the CA certificate file that signed the broker's certificate")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "id": E(.string("a/b"), at: "k.toml:3")]),
                       "k.toml:3: key 'mqtt.id': \"a/b\" contains '/', which MQTT topics reserve")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "keepalive": E(.integer(2), at: "k.toml:4")]),
                       "k.toml:4: key 'mqtt.keepalive': 2 is out of range 5...65535")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "keepalive": E(.string("60"), at: "k.toml:4")]),
                       "k.toml:4: key 'mqtt.keepalive': expected an integer, saw the string \"60\"")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "brokr": E(.string("x"), at: "k.toml:3")]),
                       "k.toml:3: key 'mqtt.brokr': unknown key (known: broker, ca_file, cert_file, discovery_prefix, id, keepalive, key_file, max_message_bytes, password_file, protocol, queue_limit, username)")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "username": E(.string("u"), at: "k.toml:3"),
                              "password_file": E(.string("/nope"), at: "k.toml:4")]),
                       "k.toml:4: key 'mqtt.password_file': open /nope failed: No such file or directory (errno 2)")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "ca_file": E(.string("/ca"), at: "k.toml:5")]),
                       "k.toml:5: key 'mqtt.ca_file': set, but the broker \"mqtt://hub\" is mqtt:// (no TLS); use mqtts://")
    }

    func testProtocolVersion() throws {
        XCTAssertEqual(try parse(["broker": E(.string("mqtt://hub"), at: "k.toml:2")]).protocolVersion, .v5)
        XCTAssertEqual(try parse(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "protocol": E(.string("3.1.1"), at: "k.toml:3")]).protocolVersion, .v311)
        XCTAssertEqual(try parse(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "protocol": E(.integer(5), at: "k.toml:3")]).protocolVersion, .v5)
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "protocol": E(.string("3.1"), at: "k.toml:3")]),
                       "k.toml:3: key 'mqtt.protocol': \"3.1\" is not an MQTT version kioskd speaks: expected \"5\" or \"3.1.1\"")
    }

    func testDiscoveryPrefix() throws {
        XCTAssertEqual(try parse(["broker": E(.string("mqtt://hub"), at: "k.toml:2")]).discoveryPrefix, "homeassistant")
        XCTAssertEqual(try parse(["broker": E(.string("mqtt://hub"), at: "k.toml:2"),
                                  "discovery_prefix": E(.string("ha/test"), at: "k.toml:3")]).discoveryPrefix, "ha/test")
        XCTAssertEqual(error(["broker": E(.string("mqtt://hub"), at: "k.toml:2"), "discovery_prefix": E(.string("ha/#"), at: "k.toml:6")]),
                       "k.toml:6: key 'mqtt.discovery_prefix': \"ha/#\" is not a topic prefix: expected levels separated by '/', none empty, no '+' or '#', at most 256 bytes, like \"homeassistant\"")
    }

    func testRealPasswordFileErrorNamesPathAndErrno() {
        XCTAssertThrowsError(try MQTTConfig.readSmallFile("/nonexistent/k-mqtt-secret")) { e in
            XCTAssertEqual("\(e)", "open /nonexistent/k-mqtt-secret failed: No such file or directory (errno 2)")
        }
    }
}
