import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskWeb
import Testing

/// `GET /api/settings` and `PATCH /api/settings` on the phone page's server: a change is named
/// as the paired device's, refused to a role that may not change settings, and answered with
/// the effective values or the config's error naming the key.
@Suite(.serialized) struct WebSettingsTests {
    @Test func anOwnerSetsALabelAnOperatorIsRefusedAndErrorsNameTheKey() async throws {
        let k = WebKiosk()
        try await k.start()
        let op = try await k.pairedCookie(role: "owner", name: "Anna")
        let viewer = try await k.pairedCookie(role: "operator", name: "wall")
        let file = try Data(contentsOf: URL(fileURLWithPath: "\(k.dir)/kioskd.toml"))

        let refused = try await http(k.port, "PATCH", "/api/settings", body: #"{"scene.score.counter[0].label": "LIONS"}"#, cookie: viewer)
        #expect(refused.status == 403)
        #expect(refused.error?.contains("only an owner may change settings") == true, "\(refused.text)")

        let started = DispatchTime.now().uptimeNanoseconds
        let ok = try await http(k.port, "PATCH", "/api/settings", body: #"{"scene.score.counter[0].label": "LIONS"}"#, cookie: op)
        print("PATCH /api/settings answered (checked, kept with fsync, reloaded) after \(String(format: "%.1f", Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)) ms")
        #expect(ok.status == 200, "\(ok.text)")
        let a = try JSONDecoder().decode(SettingsAnswer.self, from: Data(ok.body))
        let label = a.values.first { $0.key == "scene.score.counter[0].label" }
        #expect(label?.value == .string("LIONS"))
        #expect(label?.source.hasPrefix("set from the phone by Anna at ") == true, "\(label?.source ?? "")")

        let bad = try await http(k.port, "PATCH", "/api/settings", body: #"{"scene.score.digits": 0}"#, cookie: op)
        #expect(bad.status == 422)
        #expect(bad.error?.contains("key 'scene.score.digits'") == true, "\(bad.text)")
        let overlap = try await http(k.port, "PATCH", "/api/settings", body: #"{"display.blank.schedule": ["22:00-02:00", "01:00-03:00"]}"#, cookie: op)
        #expect(overlap.status == 422)
        #expect((try? JSONSerialization.jsonObject(with: Data(overlap.body)) as? [String: Any])?["field"] as? String == "display.blank.schedule", "\(overlap.text)")
        #expect(overlap.error?.contains("key 'display.blank.schedule[1]': blank period \"01:00-03:00\" overlaps \"22:00-02:00\"") == true, "\(overlap.text)")
        let fileOnly = try await http(k.port, "PATCH", "/api/settings", body: #"{"web.listen": "0.0.0.0:80"}"#, cookie: op)
        #expect(fileOnly.status == 400)
        #expect(fileOnly.error?.contains("set only in the config file") == true, "\(fileOnly.text)")

        // For the whole fleet: owners only, and this kiosk is in no fleet group.
        let fleetByOperator = try await http(k.port, "PATCH", "/api/settings/fleet", body: #"{"scene.score.digits": 3}"#, cookie: viewer)
        #expect(fleetByOperator.status == 403)
        let fleet = try await http(k.port, "PATCH", "/api/settings/fleet", body: #"{"scene.score.digits": 3}"#, cookie: op)
        #expect(fleet.status == 409 && fleet.error?.contains("this kiosk is in no [fleet] group") == true, "\(fleet.text)")

        // Operators (and viewers) read the settings.
        let read = try await http(k.port, "GET", "/api/settings", cookie: viewer)
        #expect(read.status == 200)
        let values = try JSONDecoder().decode(SettingsAnswer.self, from: Data(read.body)).values
        #expect(values.first { $0.key == "scene.score.counter[0].label" }?.value == .string("LIONS"))
        #expect(values.first { $0.key == "scene.score.digits" }?.value == .int(2), "the refused change left the file's digits")
        #expect(!values.contains { $0.key == "display.blank.schedule" && $0.layer }, "the refused schedule was not kept")
        #expect(try Data(contentsOf: URL(fileURLWithPath: "\(k.dir)/kioskd.toml")) == file)
        await k.stop()
    }

    @Test func onlyTheSettingsRoleDecides() {
        let change = ControlCommand.changeSettings(SettingsChange(set: [("theme", .string("dark"))], source: .kioskctl(at: 0)))
        for role in WebRole.allCases {
            let r = WebResponder.settingsChange(change, WebDevice(name: "p", role: role))
            switch r {
            case .run(.changeSettings(let c))?:
                #expect(role.mayChangeSettings)
                #expect(c.source.by == "phone" && c.source.device == "p", "named as the device's, whatever the body said")
            case .refuse(let e)?:
                #expect(!role.mayChangeSettings)
                #expect(e.status == 403)
            default:
                Issue.record("\(String(describing: r))")
            }
        }
        #expect(WebResponder.settingsChange(.status, WebDevice(name: "p", role: .viewer)) == nil)
    }
}
