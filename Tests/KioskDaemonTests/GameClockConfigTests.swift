import Testing
import KioskConfig
import KioskCore
import KioskScenes

/// `[scene.NAME.clock]` of a counter scene, read from a config file's text.
@Suite struct GameClockConfigTests {
    private func settings(_ clockLines: String?) throws -> CounterSettings {
        var text = "[scene.score]\nkind = \"counter\"\n"
        if let c = clockLines { text += "[scene.score.clock]\n" + c }
        let root = try ConfigFile.parse(text, file: "/etc/kioskd/kioskd.toml")
        let scene = try #require(try root.table("scene")?.table("score"))
        _ = try scene.string("kind")
        return try CounterSettings.read(scene, scene: "score")
    }

    private func error(_ clockLines: String) -> String? { configError { _ = try settings(clockLines) } }

    @Test func noTableNoClock() throws {
        #expect(try settings(nil).clock == nil)
    }

    @Test func anEmptyTableIsTenMinutesFourPeriodsDownTenthsUnderAMinute() throws {
        let r = try #require(try settings("").clock)
        #expect(r == (try GameClockRules(periodLengthMs: 600_000, periods: 4, direction: .down, tenthsBelowMs: 60_000,
                                         shotClockMs: nil, showsGameClock: true)))
    }

    @Test func everyKeyIsRead() throws {
        let r = try #require(try settings("""
            period_length = "20:00"
            periods = 2
            direction = "up"
            tenths_below = "0:10.5"
            shot_clock = 30
            show_game_clock = false

            """).clock)
        #expect(r.periodLengthMs == 1_200_000)
        #expect(r.periods == 2)
        #expect(r.direction == .up)
        #expect(r.tenthsBelowMs == 10_500)
        #expect(r.shotClockMs == 30_000)
        #expect(!r.showsGameClock)
    }

    @Test func errorsNameTheFileLineAndKey() {
        let f = "/etc/kioskd/kioskd.toml"
        #expect(error("period_length = \"10:75\"\n")
                == "\(f):4: key 'scene.score.clock.period_length': '10:75' is not MM:SS[.t] (seconds 0–59), e.g. \"10:00\" or \"0:45.5\"")
        #expect(error("period_length = 600\n") == "\(f):4: key 'scene.score.clock.period_length': expected a string, got an integer (600)")
        #expect(error("periods = 0\n") == "\(f):4: key 'scene.score.clock.periods': 0 is out of range, expected 1…99")
        #expect(error("direction = \"sideways\"\n") == "\(f):4: key 'scene.score.clock.direction': expected one of \"down\", \"up\", got \"sideways\"")
        #expect(error("period_length = \"0:30\"\n\ntenths_below = \"1:00\"\n")
                == "\(f):6: key 'scene.score.clock.tenths_below': 1:00 is longer than the period (0:30)")
        #expect(error("shot_clock = 240\n") == "\(f):4: key 'scene.score.clock.shot_clock': 240 is out of range, expected 1…99")
        #expect(error("shot_clock = 9223372036854775807\n")?.hasPrefix("\(f):4: key 'scene.score.clock.shot_clock': ") == true)
        #expect(error("show_game_clock = false\n")
                == "\(f):4: key 'scene.score.clock.show_game_clock': the game clock can be hidden only when there is a shot clock (set shot_clock)")
        #expect(error("horn = true\n")?.hasPrefix("\(f):4: key 'scene.score.clock.horn': unknown key") == true)
    }

    @Test func clockKeysAreTheWordsOfKioskctlClockAndSpaceTogglesWithoutThem() throws {
        #expect(try settings("").clockKeys == [57: .toggle])
        #expect(try settings(nil).clockKeys.isEmpty)
        let keys = try settings("[scene.score.clock.keys]\nKEY_S = \"reset --shot\"\nKEY_LEFT = \"adjust -1\"\n").clockKeys
        #expect(keys == [31: .shotReset(ms: nil), 105: .adjust(ms: -1000)])
        let f = "/etc/kioskd/kioskd.toml"
        #expect(error("[scene.score.clock.keys]\nKEY_S = \"jump\"\n")?.hasPrefix(
            "\(f):5: key 'scene.score.clock.keys.KEY_S': clock: unknown action 'jump'") == true, "\(error("[scene.score.clock.keys]\nKEY_S = \"jump\"\n") ?? "")")
        #expect(error("[scene.score.clock.keys]\nKEY_NOPE = \"start\"\n")?.contains("unknown key name \"KEY_NOPE\"") == true)
    }
}
