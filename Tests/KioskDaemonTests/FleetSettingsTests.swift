import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskFleet
import KioskState
import KioskTesting
import KioskTestTraits
import Testing

/// Settings for every kiosk of a fleet (docs/mqtt.md, "Settings for the whole fleet"): the
/// primary keeps a fleet-wide change in its layer and publishes the group's settings retained
/// with a seq; followers keep them in their layer, checked as their own file is. Virtual time,
/// a broker in memory (`FleetRig`).
@Suite(.ownThreads) struct FleetSettingsTests {
    let topic = "kioskd/group/hall/settings"
    let label = "scene.score.counter[0].label"
    static let at: Int64 = 1_790_000_000

    func change(_ d: Daemon, _ set: [(String, SettingValue)], reset: [String] = [], fleet: Bool = true, _ answers: Answers) {
        let c = SettingsChange(set: set.map { (key: $0.0, value: $0.1) }, reset: reset, source: .phone("Anna's phone", at: Self.at), fleet: fleet)
        d.handle(.changeSettings(c), reply: answers.reply)
    }
    func value(_ d: Daemon, _ key: String) -> SettingsAnswer.Value? { d.settingsAnswer().values.first { $0.key == key } }
    func screen(_ rig: FleetRig, _ d: Daemon) throws -> [UInt8] {
        d.manager.tick()
        rig.loop.runPending()
        return try d.manager.screenshotPNG()
    }
    func retained(_ rig: FleetRig) throws -> FleetSettingsState {
        try JSONDecoder().decode(FleetSettingsState.self, from: Data(try #require(rig.broker.retained[topic], "no retained settings")))
    }
    func publish(_ rig: FleetRig, _ s: FleetSettingsState) throws {
        rig.broker.publish(topic, Array(try JSONEncoder().encode(s)), retain: false)
        rig.settle()
    }

    @Test func aFleetOfTwoGetsALabelFromOneOwnerChange() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        let before = try screen(rig, f)
        #expect(try screen(rig, p) == before)

        let answers = Answers()
        change(p, [(label, .string("LIONS"))], answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200], "\(answers.list.first?.errorMessage ?? "")")
        #expect(try answers.list.first?.decode(SettingsAnswer.self).message?.contains("Kept for fleet group 'hall' (seq 1)") == true)
        let s = try retained(rig)
        #expect(s.primary == "p" && s.seq == 1 && s.settings.map(\.key) == [label] && s.settings.first?.value == .string("LIONS"))

        // Both show it, from the fleet; the follower kept it in its own layer.
        for d in [p, f] {
            #expect(value(d, label)?.value == .string("LIONS") && value(d, label)?.layer == true)
            #expect(value(d, label)?.source == "set from the fleet by Anna's phone on p at 2026-09-21T14:13:20Z")
        }
        #expect(f.state.load(SettingsLayer.stateKey)?.contains("LIONS") == true)
        let lions = try screen(rig, f)
        #expect(lions != before, "the follower's screen does not show the new label")
        #expect(try screen(rig, p) == lions, "the two kiosks show different pictures")

        // A follower's own value of another key stays; the fleet's key is changed only fleet-wide.
        change(f, [("scene.score.counter[1].label", .string("BEARS"))], fleet: false, answers)
        change(f, [(label, .string("TIGERS"))], fleet: false, answers)
        change(f, [(label, .string("TIGERS"))], answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200, 200, 409, 409])
        #expect(answers.list[2].errorMessage?.contains("key '\(label)' is set for the whole fleet (set from the fleet by Anna's phone on p") == true)
        #expect(answers.list[3].errorMessage?.contains("this kiosk ('f') is a follower of fleet group 'hall'") == true, "\(answers.list[3].errorMessage ?? "")")
        #expect(value(f, "scene.score.counter[1].label")?.value == .string("BEARS") && value(f, label)?.value == .string("LIONS"))
    }

    @Test func aFollowerThatWasOfflineGetsTheSettingsOnReturnAndAfterARestart() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let store = MemoryStateStore()
        let f = try rig.daemon(role: .follower, id: "f", store: store)
        rig.settle()
        let ft = try #require(rig.transports["f"])
        ft.setConnected(false)
        let answers = Answers()
        change(p, [(label, .string("LIONS"))], answers)
        change(p, [("scene.score.digits", .int(3))], answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200, 200])
        #expect(value(f, label)?.value == .string("HOME"), "taken while offline")
        // Back: the one retained message holds both changes.
        ft.setConnected(true)
        rig.settle()
        #expect(value(f, label)?.value == .string("LIONS") && value(f, "scene.score.digits")?.value == .int(3))
        #expect(f.fleet?.settingsSeq == 2)

        // Restarted on its state, the broker out of reach: the fleet's values are kept.
        ft.setConnected(false)
        let again = try rig.daemon(role: .follower, id: "f", connected: false, store: store)
        rig.settle()
        #expect(value(again, label)?.value == .string("LIONS") && value(again, label)?.source.hasPrefix("set from the fleet") == true)
        #expect(again.fleet?.settingsSeq == 2)
        // A restarted primary goes on from its kept seq.
        let p2 = try rig.daemon(role: .primary, id: "p", store: p.state as! MemoryStateStore)
        rig.settle()
        #expect(value(p2, label)?.value == .string("LIONS") && p2.fleet?.settingsSeq == 2)
    }

    @Test func olderForgedAndOversizedStatesAreIgnored() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        change(p, [(label, .string("LIONS"))], Answers())
        rig.settle()
        let good = try retained(rig)
        var older = good
        older.seq = 0
        older.settings[0].value = .string("OLD")
        try publish(rig, older)
        #expect(value(f, label)?.value == .string("LIONS") && f.fleet?.refusedStates == 0)

        var jump = good
        jump.seq = good.seq + 20_000
        jump.settings[0].value = .string("JUMP")
        try publish(rig, jump)
        var network = good
        network.seq = good.seq + 1
        network.settings.append(FleetSetting(key: "mqtt.broker", value: .string("mqtt://evil:1883"), source: .kioskctl(at: Self.at)))
        try publish(rig, network)
        rig.broker.publish(topic, Array(repeating: UInt8(ascii: " "), count: FleetEngine.maxSettingsBytes + 1), retain: false)
        rig.broker.publish(topic, Array("{\"seq\": \"x\"}".utf8), retain: false)
        rig.settle()
        #expect(value(f, label)?.value == .string("LIONS") && f.settings.layer.entry("mqtt.broker") == nil)
        #expect(f.fleet?.refusedStates == 4)
    }

    @Test func aValueTheFollowersFileRejectsIsReportedNotApplied() throws {
        let rig = FleetRig()
        let board = "[scene.board]\nkind = \"counter\"\n[[scene.board.counter]]\nname = \"GUESTS\""
        let p = try rig.daemon(role: .primary, id: "p", extra: board)
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        let answers = Answers()
        change(p, [("scene.board.counter[0].label", .string("VISITORS")), (label, .string("LIONS"))], answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200])
        #expect(value(p, "scene.board.counter[0].label")?.value == .string("VISITORS"))
        // The follower applies what its file accepts and reports the rest.
        #expect(value(f, label)?.value == .string("LIONS"))
        #expect(value(f, "scene.board.counter[0].label") == nil)
        let warning = f.warnings().first { $0.contains("scene.board.counter[0].label") }
        #expect(warning?.contains("is not applied on this kiosk") == true && warning?.contains("no array of tables scene.board.counter") == true, "\(f.warnings())")
        #expect(f.status().warnings?.contains { $0.contains("scene.board.counter[0].label") } == true)
        // Kept, and the value left out does not stop a reload or this kiosk's own changes.
        #expect(f.state.load(SettingsLayer.stateKey)?.contains("VISITORS") == true)
        #expect(throws: Never.self) { try f.reload().get() }
        change(f, [("scene.score.digits", .int(3))], fleet: false, answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200, 200], "\(answers.list.last?.errorMessage ?? "")")
    }

    @Test func aResetWithFleetScopeDropsTheValueOnEveryKiosk() throws {
        let rig = FleetRig()
        let p = try rig.daemon(role: .primary, id: "p")
        let f = try rig.daemon(role: .follower, id: "f")
        rig.settle()
        let answers = Answers()
        change(p, [(label, .string("LIONS")), ("scene.score.digits", .int(3))], answers)
        rig.settle()
        change(p, [], reset: [label], answers)
        rig.settle()
        #expect(answers.list.map(\.status) == [200, 200])
        #expect(try retained(rig).seq == 2 && retained(rig).settings.map(\.key) == ["scene.score.digits"])
        for d in [p, f] {
            #expect(value(d, label)?.value == .string("HOME") && value(d, label)?.layer == false)
            #expect(value(d, "scene.score.digits")?.value == .int(3))
        }
        // Without a fleet: refused with the reason.
        let alone = try DaemonRigStart.alone()
        let r = try alone.answer(.changeSettings(SettingsChange(set: [(label, .string("X"))], source: .kioskctl(at: Self.at), fleet: true)))
        #expect(r.status == 409 && r.errorMessage?.contains("this kiosk is in no [fleet] group") == true)
        alone.shutdown()
    }

    @Test func theControlRouteTakesTheFleetScope() throws {
        let c = try ControlRouter.parse(method: "PATCH", uri: "/settings/fleet", body: Array("{\"\(label)\": \"LIONS\"}".utf8))
        guard case .changeSettings(let change) = c else { Issue.record("not a settings change: \(c)"); return }
        #expect(change.fleet && change.set.map(\.key) == [label])
        #expect(ControlCommand.changeSettings(change).request.path == "/settings/fleet")
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "GET", uri: "/settings/fleet", body: []) }
        let local = try ControlRouter.parse(method: "PATCH", uri: "/settings", body: Array("{\"\(label)\": \"LIONS\"}".utf8))
        guard case .changeSettings(let l) = local else { Issue.record("not a settings change"); return }
        #expect(!l.fleet)
    }
}

/// A daemon of no fleet.
enum DaemonRigStart {
    static func alone() throws -> Daemon {
        let dir = tempDir()
        return try SettingsLayerTests.start(SettingsLayerTests.config(dir), dir)
    }
}
