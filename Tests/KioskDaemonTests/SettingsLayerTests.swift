import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskScenes
import KioskState
import Testing

/// Settings kept beside the config file (docs/config.md): checked as the file is, kept through
/// the command pipeline in the state directory, laid over the file at start and at every reload;
/// the file itself is never written.
@Suite(.serialized) struct SettingsLayerTests {
    static func config(_ dir: String, label: String = "HOME", digits: Int = 4, color: String? = nil, extra: String = "") -> String {
        """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "320x200"
        [scene.score]
        kind = "counter"
        digits = \(digits)
        [[scene.score.counter]]
        name = "home"
        label = "\(label)"
        \(color.map { "color = \"\($0)\"" } ?? "")
        [[scene.score.counter]]
        name = "away"
        \(extra)
        """
    }

    /// A started daemon of `text` in `dir` over its state directory (a restart when it was used before).
    static func start(_ text: String, _ dir: String) throws -> Daemon {
        let store = try FileStateStore(directory: "\(dir)/state", logger: quietLogger)
        return try DaemonRig.start(text, in: dir, state: store, logger: quietLogger)
    }

    static func set(_ d: Daemon, _ pairs: [(String, SettingValue)], reset: [String] = [], by source: SettingSource = .kioskctl(at: 1_790_000_000)) throws -> ControlResponse {
        try d.answer(.changeSettings(SettingsChange(set: pairs, reset: reset, source: source)))
    }

    static func screen(_ d: Daemon) throws -> [UInt8] {
        try d.step()
        d.manager.renderIfPossible()
        return try d.manager.screenshotPNG()
    }

    static func bytes(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test func aLabelSetIsShownKeptAcrossARestartAndTheFileIsUntouched() throws {
        let dir = tempDir()
        let reference = try Self.start(Self.config(tempDir(), label: "LIONS"), tempDir())
        let lions = try Self.screen(reference)
        reference.shutdown()

        let d = try Self.start(Self.config(dir), dir)
        let file = "\(dir)/kioskd.toml"
        let before = try Self.bytes(file)
        let home = try Self.screen(d)
        #expect(home != lions)

        let started = DispatchTime.now().uptimeNanoseconds
        let r = try Self.set(d, [("scene.score.counter[0].label", .string("LIONS"))])
        let shown = try Self.screen(d)
        let ms = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
        print("settings change from submit to screen (check, commit, reload, frame): \(String(format: "%.1f", ms)) ms")
        #expect(r.status == 200, "\(r.errorMessage ?? "")")
        let answer = try r.decode(SettingsAnswer.self)
        let label = answer.values.first { $0.key == "scene.score.counter[0].label" }
        #expect(label?.value == .string("LIONS"))
        #expect(label?.layer == true)
        #expect(label?.source == "set by kioskctl at 2026-09-21T14:13:20Z")
        #expect(answer.values.first { $0.key == "scene.score.digits" }?.source == "\(file):7")
        #expect(shown == lions, "the screen shows the label set, as a config file with it would")
        #expect(try Self.bytes(file) == before, "the config file is not written")
        #expect(d.state.load(SettingsLayer.stateKey)?.contains("LIONS") == true, "kept before it was answered")
        d.shutdown()

        // A restart lays the kept layer over the file again.
        let again = try Self.start(Self.config(dir), dir)
        #expect(try Self.screen(again) == lions)
        #expect(again.settingsAnswer().values.first { $0.key == "scene.score.counter[0].label" }?.layer == true)
        #expect(try Self.bytes(file) == before)
        again.shutdown()
    }

    @Test func invalidValuesGiveTheConfigsErrorNamingTheKeyAndChangeNothing() throws {
        let dir = tempDir()
        let d = try Self.start(Self.config(dir, extra: "[display.brightness]\nschedule = [\"08:00 80%\"]"), dir)
        let shown = try Self.screen(d)

        let zero = try Self.set(d, [("scene.score.digits", .int(0))])
        #expect(zero.status == 422)
        #expect(zero.errorMessage?.contains("key 'scene.score.digits'") == true, "\(zero.errorMessage ?? "")")
        #expect(zero.errorMessage?.contains("settings 'scene.score.digits' (set by kioskctl") == true, "\(zero.errorMessage ?? "")")
        #expect(zero.jsonObject?["field"] as? String == "scene.score.digits")

        let twice = try Self.set(d, [("display.brightness.schedule", .strings(["08:00 80%", "08:00 20%"]))])
        #expect(twice.status == 422)
        #expect(twice.errorMessage?.contains("display.brightness.schedule") == true, "\(twice.errorMessage ?? "")")
        #expect(twice.errorMessage?.contains("two periods starting at 08:00") == true, "\(twice.errorMessage ?? "")")

        let wrongType = try Self.set(d, [("scene.score.counter[1].label", .int(3))])
        #expect(wrongType.status == 422)
        #expect(wrongType.errorMessage?.contains("key 'scene.score.counter[1].label': expected a string, got an integer") == true, "\(wrongType.errorMessage ?? "")")

        let nul = try Self.set(d, [("scene.score.counter[1].label", .string("A\u{0}B"))])
        #expect(nul.status == 422)
        #expect(nul.errorMessage?.contains("key 'scene.score.counter[1].label': contains a NUL character") == true, "\(nul.errorMessage ?? "")")
        let long = try Self.set(d, [("scene.score.time_zone", .string(String(repeating: "x", count: 5000)))])
        #expect(long.status == 422)
        #expect(long.errorMessage?.contains("a string of 5000 bytes is too long") == true, "\(long.errorMessage ?? "")")

        let noSuchCounter = try Self.set(d, [("scene.score.counter[5].label", .string("X"))])
        #expect(noSuchCounter.status == 422)
        #expect(noSuchCounter.errorMessage?.contains("no scene.score.counter[5]") == true, "\(noSuchCounter.errorMessage ?? "")")

        // Only the file sets network, MQTT and listen addresses.
        for key in ["mqtt.broker", "web.listen", "control.socket", "state_dir"] {
            let r = try Self.set(d, [(key, .string("x"))])
            #expect(r.status == 400)
            #expect(r.errorMessage?.contains("set only in the config file") == true, "\(key): \(r.errorMessage ?? "")")
        }
        let notASetting = try Self.set(d, [("scene.score.roll_ms", .int(10))])
        #expect(notASetting.status == 400)
        #expect(notASetting.errorMessage?.contains("not a setting") == true)

        #expect(d.state.load(SettingsLayer.stateKey) == nil, "nothing was kept")
        #expect(d.settings.layer.isEmpty)
        #expect(try Self.screen(d) == shown)
        d.shutdown()
    }

    /// A blanking schedule with overlapping periods from the phone gets the file's error, naming
    /// the key and both periods; nothing is kept and the running schedule stays.
    @Test func overlappingBlankPeriodsAreRefusedAsInTheFile() throws {
        let dir = tempDir()
        let d = try Self.start(Self.config(dir, extra: "[display.blank]\nschedule = [\"23:00-06:00\"]"), dir)
        let r = try Self.set(d, [("display.blank.schedule", .strings(["22:00-02:00", "01:00-07:00"]))], by: .phone("Anna's phone", at: 1_790_000_000))
        #expect(r.status == 422)
        #expect(r.jsonObject?["field"] as? String == "display.blank.schedule")
        #expect(r.errorMessage?.contains("settings 'display.blank.schedule' (set from the phone by Anna's phone at ") == true, "\(r.errorMessage ?? "")")
        #expect(r.errorMessage?.contains("key 'display.blank.schedule[1]': blank period \"01:00-07:00\" overlaps \"22:00-02:00\" (display.blank.schedule[0]); blank periods must not overlap; join them into one, like \"22:00-07:00\"") == true, "\(r.errorMessage ?? "")")
        #expect(d.state.load(SettingsLayer.stateKey) == nil, "nothing was kept")
        #expect(d.config.display.blankSchedule == ["23:00-06:00"], "the running schedule stays")
        let ok = try Self.set(d, [("display.blank.schedule", .strings(["22:00-02:00", "02:00-07:00"]))])
        #expect(ok.status == 200, "periods that only touch are taken: \(ok.errorMessage ?? "")")
        #expect(d.config.display.blankSchedule == ["22:00-02:00", "02:00-07:00"])
        d.shutdown()
    }

    @Test func resetGoesBackToTheFileAndAFileEditWinsOnlyWhereTheLayerIsSilent() throws {
        let dir = tempDir()
        let home = try { () throws -> [UInt8] in
            let r = try Self.start(Self.config(tempDir()), tempDir()); defer { r.shutdown() }; return try Self.screen(r)
        }()
        let d = try Self.start(Self.config(dir), dir)
        #expect(try Self.set(d, [("scene.score.counter[0].label", .string("LIONS"))]).status == 200)
        #expect(try Self.screen(d) != home)

        // The file changes the label and the digits; the reload keeps the layer's label and takes the file's digits.
        try Self.config(dir, label: "GUESTS", digits: 3).write(toFile: "\(dir)/kioskd.toml", atomically: true, encoding: .utf8)
        #expect(d.reload().map { _ in true } == .success(true))
        let a = d.settingsAnswer()
        #expect(a.values.first { $0.key == "scene.score.counter[0].label" }?.value == .string("LIONS"))
        #expect(a.values.first { $0.key == "scene.score.digits" }?.value == .int(3))
        #expect(a.values.first { $0.key == "scene.score.digits" }?.layer == false)

        // Reset: the file's label (now GUESTS) shows; the layer is empty.
        let r = try Self.set(d, [], reset: ["scene.score.counter[0].label"])
        #expect(r.status == 200)
        #expect(try r.decode(SettingsAnswer.self).values.first { $0.key == "scene.score.counter[0].label" }?.value == .string("GUESTS"))
        #expect(d.settings.layer.isEmpty)
        #expect(SettingsLayer.decode(d.state.load(SettingsLayer.stateKey)) == .layer(SettingsLayer()))
        let reference = try Self.start(Self.config(tempDir(), label: "GUESTS", digits: 3), tempDir())
        let guests = try Self.screen(reference)
        reference.shutdown()
        #expect(try Self.screen(d) == guests)
        d.shutdown()
    }

    /// A team's colour (issue: team names and colours from the phone): its digit windows, set
    /// from the layer as from the file.
    @Test func aTeamColourFromTheLayerDrawsAsFromTheFile() throws {
        let plain = try Self.start(Self.config(tempDir()), tempDir())
        let theme = try Self.screen(plain)
        plain.shutdown()
        let red = try Self.start(Self.config(tempDir(), color: "#C8102E"), tempDir())
        let filed = try Self.screen(red)
        red.shutdown()
        #expect(filed != theme)

        let dir = tempDir()
        let d = try Self.start(Self.config(dir), dir)
        #expect(try Self.set(d, [("scene.score.counter[0].color", .string("#C8102E"))]).status == 200)
        #expect(try Self.screen(d) == filed)
        let bad = try Self.set(d, [("scene.score.counter[0].color", .string("red"))])
        #expect(bad.status == 422)
        #expect(bad.errorMessage?.contains("key 'scene.score.counter[0].color': expected a colour like \"#RRGGBB\"") == true, "\(bad.errorMessage ?? "")")
        d.shutdown()
    }

    /// A layer value the file no longer accepts (its counter was removed) is left out at start;
    /// the others apply.
    @Test func aStaleLayerValueIsLeftOutAtStartAndTheRestApplies() throws {
        let dir = tempDir()
        let d = try Self.start(Self.config(dir), dir)
        #expect(try Self.set(d, [("scene.score.counter[1].label", .string("AWAY")), ("scene.score.digits", .int(2))]).status == 200)
        d.shutdown()
        let one = """
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "home"
        """
        let again = try Self.start(one, dir)
        #expect(again.config.settings.entries.count == 2, "kept, to be reset by hand")
        #expect((again.manager.scenes.first as? CounterScene)?.settings.digits == 2)
        // Reported in the status; reloads and other changes go on without it.
        #expect(again.warnings().contains { $0.hasPrefix("the setting 'scene.score.counter[1].label' (set by kioskctl") && $0.contains("is not applied on this kiosk") },
                "\(again.warnings())")
        #expect(throws: Never.self) { try again.reload().get() }
        let r = try Self.set(again, [("scene.score.digits", .int(3))])
        #expect(r.status == 200, "\(r.errorMessage ?? "")")
        #expect((again.manager.scenes.first as? CounterScene)?.settings.digits == 3)
        again.shutdown()
    }

    @Test func keysAndTheKeptFormat() throws {
        #expect(SettingsKeys.refusal("scene.score.counter[0].label") == nil)
        #expect(SettingsKeys.refusal("scene.\"a.b\".digits") == nil)
        #expect(SettingsKeys.refusal("output[1].blank.schedule") == nil)
        #expect(SettingsKeys.refusal("mqtt.password_file")?.contains("set only in the config file") == true)
        #expect(SettingsKeys.refusal("scene.score.counter.label")?.contains("not a setting") == true)
        #expect(SettingsKeys.refusal("scene..x")?.contains("expected a name") == true)
        #expect(SettingsKeys.canonical("scene.\"score\".counter[0].label") == "scene.score.counter[0].label")

        let layer = SettingsLayer().applying(SettingsChange(set: [("theme", .string("dark")), ("scenes.order", .strings(["a", "b"]))],
                                                            source: .phone("Anna's phone", at: 0)))
        #expect(SettingsLayer.decode(layer.encoded()) == .layer(layer))
        #expect(layer.entries.first?.source.description == "set from the phone by Anna's phone at 1970-01-01T00:00:00Z")
        let newer = layer.encoded().replacingOccurrences(of: "\"version\":1", with: "\"version\":2")
        #expect(SettingsLayer.decode(newer) == .newer(2))
        if case .damaged = SettingsLayer.decode("{}") {} else { Issue.record("an empty object is not a layer") }
    }

    @Test func patchBodiesAndTheWebsRole() throws {
        let c = try ControlRouter.parse(method: "PATCH", uri: "/settings", body: Array(#"{"scene.score.digits": 3, "theme": null, "scene.score.counter[0].label": "LIONS", "display.blank.schedule": ["22:00-07:00"], "x": 1.5, "y": true}"#.utf8))
        guard case .changeSettings(let change) = c else { Issue.record("\(c)"); return }
        #expect(change.set.map(\.key) == ["display.blank.schedule", "scene.score.counter[0].label", "scene.score.digits", "x", "y"])
        #expect(change.set.map(\.value) == [.strings(["22:00-07:00"]), .string("LIONS"), .int(3), .double(1.5), .bool(true)])
        #expect(change.reset == ["theme"])
        #expect(change.source.by == "kioskctl")
        // The request kioskctl sends reads back as the same change (named as kioskctl's, at the time it is read).
        guard case .changeSettings(let back) = try ControlRouter.parse(method: "PATCH", uri: "/settings", body: change.request.body) else { Issue.record("not a change"); return }
        #expect(back.set.map(\.key) == change.set.map(\.key) && back.set.map(\.value) == change.set.map(\.value) && back.reset == change.reset)
        #expect(try ControlRouter.parse(method: "GET", uri: "/settings", body: []) == .settings)
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "PATCH", uri: "/settings", body: Array("[1]".utf8)) }
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "PATCH", uri: "/settings", body: Array(#"{"k": {"a": 1}}"#.utf8)) }
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "POST", uri: "/settings", body: []) }
        #expect(SettingValue.argument("LIONS") == .string("LIONS"))
        #expect(SettingValue.argument("3") == .int(3))
        #expect(SettingValue.argument("[\"a\", \"b\"]") == .strings(["a", "b"]))
    }

    /// A config error names the key it is about, also as an element of an array (a schedule's
    /// line: `display.brightness.schedule[1]`); the answer's `field` is that key whatever the
    /// order of the body's keys.
    @Test func theErrorsFieldIsTheKeyItNamesAlsoForAnElement() {
        let element = "settings 'display.brightness.schedule' (set from the phone by p at 2026-11-28T20:00:00Z): key 'display.brightness.schedule[1]': brightness period \"25:00 20%\": …"
        let keys = ["scene.score.counter[0].label", "display.brightness.schedule"]
        #expect(Daemon.settingsField(of: element, keys: keys) == "display.brightness.schedule")
        #expect(Daemon.settingsField(of: element, keys: keys.reversed()) == "display.brightness.schedule")
        let digits = "key 'scene.score.digits': 0 is out of range, expected 1…9"
        #expect(Daemon.settingsField(of: digits, keys: ["scene.score.digits[0]", "scene.score.digits"]) == "scene.score.digits")
        #expect(Daemon.settingsField(of: digits, keys: ["theme", "scene.score.digits"]) == "scene.score.digits")
        // A key that is a prefix of another's name is not taken for it.
        #expect(Daemon.settingsField(of: "key 'scene.score.digits_x': …", keys: ["theme", "scene.score.digits"]) == "theme")
        #expect(Daemon.settingsField(of: "no key named", keys: ["theme", "scene.score.digits"]) == "theme")
    }
}

private extension SettingsChange {
    var request: ControlRequest { ControlCommand.changeSettings(self).request }
}
