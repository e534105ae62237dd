import Foundation
import KioskControl
import KioskCore
import KioskTestTraits
import KioskTesting
import Testing

/// Settings for the whole fleet on two real kioskd processes and a real mosquitto: one owner
/// change on the primary (`kioskctl config set --fleet`'s request) is on the follower's screen
/// and in its `kioskctl config show`; a follower killed and restarted keeps it; `kioskctl config
/// reset --fleet` drops it everywhere; a follower refuses a fleet-wide change. Prints the time from the primary's answer to the follower showing it.
/// KIOSK_SLOW_TESTS=1.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct FleetSettingsProcessTests {
    typealias Kiosk = FleetFaultTests.Kiosk
    let label = "scene.score.counter[0].label"

    func make(_ root: String, _ id: String, role: String, port: Int) throws -> Kiosk {
        let k = Kiosk(id, "\(root)/\(id)")
        try FileManager.default.createDirectory(atPath: k.dir, withIntermediateDirectories: true)
        _ = write(FleetFaultTests().config(k.dir, id: id, role: role, port: port), k.dir)
        try k.start()
        return k
    }

    func set(_ k: Kiosk, _ value: String, fleet: Bool) throws -> ControlResponse {
        try ControlClient(socketPath: k.socket, timeout: 10).send(.changeSettings(
            SettingsChange(set: [(label, .string(value))], source: .kioskctl(at: Int64(time(nil))), fleet: fleet)))
    }

    func shown(_ k: Kiosk) -> SettingsAnswer.Value? {
        guard let r = try? ControlClient(socketPath: k.socket, timeout: 5).send(.settings), r.status == 200 else { return nil }
        return (try? r.decode(SettingsAnswer.self))?.values.first { $0.key == label }
    }

    /// Polls (bounded, every 5 ms) until `k` shows `value`; the milliseconds it took, nil after 10 s.
    func waitFor(_ k: Kiosk, _ value: String) -> Double? {
        let start = nowNanos(.monotonic)
        while nowNanos(.monotonic) - start < 10_000_000_000 {
            if shown(k)?.value == .string(value) { return Double(nowNanos(.monotonic) - start) / 1e6 }
            usleep(5_000)
        }
        return nil
    }

    @Test func aFleetOfTwoGetsALabelFromOneOwnerChange() throws {
        let root = tempDir()
        let broker = try FleetBroker.started(dir: root)
        let p = try make(root, "p", role: "primary", port: broker.port)
        let f = try make(root, "f", role: "follower", port: broker.port)
        defer { for k in [p, f] { k.stop() }; broker.stop() }
        let before = try f.screenshot()

        let started = nowNanos(.monotonic)
        let r = try set(p, "LIONS", fleet: true)
        let answered = Double(nowNanos(.monotonic) - started) / 1e6
        #expect(r.status == 200, "\(String(decoding: r.body, as: UTF8.self))")
        let later = waitFor(f, "LIONS")
        #expect(later != nil, "the follower did not take the fleet's label in 10 s")
        print("fleet settings: the primary answered after \(String(format: "%.1f", answered)) ms (checked, kept, reloaded); "
            + "the follower showed it \(String(format: "%.1f", later ?? -1)) ms later (bounded by 5 ms polling)")
        #expect(shown(f)?.source.hasPrefix("set from the fleet by kioskctl on p at ") == true, "\(String(describing: shown(f)))")
        #expect(try f.screenshot() != before, "the follower's screen did not change")
        #expect(try f.screenshot() == p.screenshot(), "the two screens differ")

        // A follower refuses a fleet-wide change; killed and restarted, it keeps the fleet's value.
        let refused = try set(f, "TIGERS", fleet: true)
        #expect(refused.status == 409 && refused.errorMessage?.contains("is a follower of fleet group") == true)
        f.kill9()
        try f.start()
        #expect(shown(f)?.value == .string("LIONS"))
        let show = try kioskctl(["config", "show", label, "--socket", f.socket])
        #expect(show.0 == 0 && show.1.contains("\(label) = \"LIONS\"  # set from the fleet by kioskctl on p at "), "\(show.1)\(show.2)")

        // kioskctl config reset --fleet on the primary: back to the file's value everywhere.
        let reset = try kioskctl(["config", "reset", "--fleet", label, "--socket", p.socket])
        #expect(reset.0 == 0, "\(reset.2)")
        #expect(waitFor(f, "HOME") != nil, "the fleet-wide reset did not reach the follower")
        #expect(shown(f)?.layer == false && shown(p)?.layer == false)
        let onFollower = try kioskctl(["config", "set", "--fleet", label, "X", "--socket", f.socket])
        #expect(onFollower.0 == 1 && onFollower.2.contains("is a follower of fleet group 'hall'") && onFollower.2.contains("(HTTP 409)"), "\(onFollower.2)")
    }
}
