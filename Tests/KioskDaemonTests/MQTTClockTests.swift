import Foundation
import KioskComponent
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskMQTTComponent
import KioskMQTT
import KioskPosix
import Testing

/// The game clock on MQTT: `kioskd/ID/clock/SCENE/set` takes `kioskctl clock`'s words, and the
/// retained `remaining`, `running` and `period` follow the kept clock.
extension MQTTBridgeTests {
    static let clockTable = """
    [scene.score.clock]
    period_length = "10:00"
    shot_clock = 24
    """

    @Test func clockTopicsBecomeClockCommands() throws {
        func cmd(_ t: String, _ p: String) -> Result<ControlCommand?, MQTTBridge.CommandError> {
            MQTTBridge.command(levels: t.split(separator: "/").map(String.init), payload: p, clocks: ["score", "court 2"])
        }
        #expect(try cmd("clock/score/set", "start\n").get() == .clock(intent: .start, scene: "score"))
        #expect(try cmd("clock/score/set", "set 5:00").get() == .clock(intent: .set(ms: 300_000), scene: "score"))
        #expect(try cmd("clock/score/set", "adjust -10").get() == .clock(intent: .adjust(ms: -10_000), scene: "score"))
        #expect(try cmd("clock/score/set", "period 2").get() == .clock(intent: .period(2), scene: "score"))
        #expect(try cmd("clock/score/set", "period next").get() == .clock(intent: .nextPeriod, scene: "score"))
        #expect(try cmd("clock/score/set", "reset").get() == .clock(intent: .reset, scene: "score"))
        #expect(try cmd("clock/score/set", "reset shot").get() == .clock(intent: .shotReset(ms: nil), scene: "score"))
        #expect(try cmd("clock/score/set", "reset shot 14").get() == .clock(intent: .shotReset(ms: 14_000), scene: "score"))
        #expect(try cmd("clock/\(KioskTopics.outputLevel("court 2"))/set", "stop").get() == .clock(intent: .stop, scene: "court 2"))
        #expect(cmd("clock/score/set", "set 5:99")
            == .failure(.init(message: "clock/score/set: payload \"set 5:99\": set: '5:99' is not MM:SS[.t] (seconds 0–59)")))
        #expect(cmd("clock/score/set", "")
            == .failure(.init(message: "clock/score/set: payload \"\": clock: expected \(ClockIntent.usage)")))
        #expect(cmd("clock/nope/set", "start")
            == .failure(.init(message: "clock/nope/set: no game clock on a scene 'nope'; scenes with a clock: score, \(KioskTopics.outputLevel("court 2"))")))
        #expect(MQTTBridge.command(levels: ["clock", "score", "set"], payload: "start")
            == .failure(.init(message: "clock/score/set: no game clock on a scene 'score'; no scene has a game clock")))
        #expect(try cmd("clock/score/remaining", "x").get() == nil, "a state topic of ours is not a command")
    }

    /// The published time left is derived from "running since T with R left" at the MQTT
    /// thread's instant, and changes on whole seconds only.
    @Test func publishedClockIsComputedFromTheKeptRecord() {
        let since: Int64 = 7_000_000_000
        let c = KioskState.GameClock(scene: "score", remainingMs: 65_000, sinceMonotonicNs: since, period: 2, periods: 4)
        #expect(c.remainingText(atMonotonicNs: since) == "1:05")
        #expect(c.remainingText(atMonotonicNs: since + 1) == "1:05", "rounded up: 1:05 until a whole second went by")
        #expect(c.remainingText(atMonotonicNs: since + 1_000_000_000) == "1:04")
        #expect(c.remainingText(atMonotonicNs: since + 60_500_000_000) == "0:05")
        #expect(c.nextChangeNs(after: since + 1) == since + 1_000_000_000)
        #expect(c.nextChangeNs(after: since + 1_000_000_000) == since + 2_000_000_000)
        #expect(c.nextChangeNs(after: since + 64_200_000_000) == since + 65_000_000_000, "the last second ends at zero")
        #expect(c.running(atMonotonicNs: since + 64_999_999_999))
        #expect(!c.running(atMonotonicNs: since + 65_000_000_000), "out of time: not running")
        #expect(c.remainingText(atMonotonicNs: since + 99_000_000_000) == "0:00")
        #expect(c.nextChangeNs(after: since + 65_000_000_000) == nil)
        let stopped = KioskState.GameClock(scene: "score", remainingMs: 600_000, sinceMonotonicNs: nil, period: 1, periods: 4)
        #expect(stopped.remainingText(atMonotonicNs: 1) == "10:00" && stopped.nextChangeNs(after: 1) == nil && !stopped.running(atMonotonicNs: 1))
        let topics = stopped.publications(KioskTopics(id: "k1"), atMonotonicNs: 0).map { "\($0.topic)=\(String(decoding: $0.payload, as: UTF8.self))" }
        #expect(topics == ["kioskd/k1/clock/score/remaining=10:00", "kioskd/k1/clock/score/running=OFF", "kioskd/k1/clock/score/period=1"])
    }

    /// Home Assistant's buttons drive the clock on the kiosk; the retained state follows once
    /// kept; a running clock's time left is published once a second, not every frame; a bad
    /// payload is refused on kioskd/k1/error naming it.
    @Test func homeAssistantDrivesTheGameClock() throws {
        let r = try rig(extra: Self.clockTable)
        #expect(try pump(r.loop) { r.bridge.clientState == .connected })
        try r.settle()
        let discovery = try #require(try r.broker.retained("homeassistant/device/kioskd_k1/config"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(discovery.utf8)) as? [String: Any])
        let cmps = try #require(object["components"] as? [String: [String: Any]])
        #expect(cmps["clock_score_start"]?["command_topic"] as? String == "kioskd/k1/clock/score/set")
        #expect(cmps["clock_score_remaining"]?["state_topic"] as? String == "kioskd/k1/clock/score/remaining")
        #expect(try r.broker.retained("kioskd/k1/clock/score/remaining") == "10:00")
        #expect(try r.broker.retained("kioskd/k1/clock/score/running") == "OFF")
        #expect(try r.broker.retained("kioskd/k1/clock/score/period") == "1")
        #expect(r.daemon.kioskState().gameClocks.map(\.scene) == ["score"])

        // Every publication of the time left from now on.
        let watch = try MQTTClient(config: MQTTConfig(host: "127.0.0.1", port: r.broker.port, id: "ha-clock"), loop: r.loop)
        var remaining: [(ns: Int64, text: String)] = []
        watch.subscribe("kioskd/k1/clock/score/remaining") { remaining.append((nowNanos(), $0.text)) }
        watch.start()
        #expect(try pump(r.loop) { watch.state == .connected && !remaining.isEmpty })

        remaining.removeAll()
        try r.broker.publish(cmps["clock_score_start"]?["command_topic"] as? String ?? "", cmps["clock_score_start"]?["payload_press"] as? String ?? "")
        #expect(try pump(r.loop) { r.daemon.status().clocks?.first?.clock.running == true })
        #expect(try pump(r.loop) { (try? r.broker.retained("kioskd/k1/clock/score/running")) == "ON" })
        // About 2.5 s of running at 60 fps: three or four publications (9:59, 9:58, …), each a new text.
        _ = try pump(r.loop, seconds: 2.5) { false }
        #expect((2...4).contains(remaining.count), "\(remaining.map(\.text))")
        #expect(Set(remaining.map(\.text)).count == remaining.count, "a text published twice: \(remaining.map(\.text))")
        #expect(remaining.first?.text == "9:59" || remaining.first?.text == "10:00", "\(remaining.map(\.text))")
        for (a, b) in zip(remaining, remaining.dropFirst()) {
            #expect(b.ns - a.ns > 800_000_000, "two publications \((b.ns - a.ns) / 1_000_000) ms apart")
        }

        try r.broker.publish("kioskd/k1/clock/score/set", "stop")
        #expect(try pump(r.loop) { r.daemon.status().clocks?.first?.clock.running == false })
        try r.broker.publish("kioskd/k1/clock/score/set", "set 5:00")
        #expect(try pump(r.loop) { r.daemon.status().clocks?.first?.clock.remainingMs == 300_000 })
        try r.broker.publish("kioskd/k1/clock/score/set", "period 2")
        #expect(try pump(r.loop) { r.daemon.status().clocks?.first?.clock.period == 2 })
        try r.settle()
        #expect(try r.broker.retained("kioskd/k1/clock/score/running") == "OFF")
        #expect(try r.broker.retained("kioskd/k1/clock/score/period") == "2")
        #expect(try r.broker.retained("kioskd/k1/clock/score/remaining") == "10:00", "a new period starts full")

        // Refusals: the payload named, nothing changes.
        let errors = try ErrorWatch(r)
        #expect(try errors.after(r, "kioskd/k1/clock/score/set", "set 5:99")
            == ["clock/score/set: payload \"set 5:99\": set: '5:99' is not MM:SS[.t] (seconds 0–59)"])
        let tooFar = try errors.after(r, "kioskd/k1/clock/score/set", "period 9")
        #expect(tooFar == [try r.daemon.answer(.clock(intent: .period(9), scene: "score")).errorMessage ?? ""], "\(tooFar)")
        #expect(r.daemon.status().clocks?.first?.clock.period == 2)
        watch.stop()
        errors.client.stop()
    }
}
