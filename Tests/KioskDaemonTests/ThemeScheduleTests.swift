import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskTesting
import Testing
import KioskPosix

@Suite struct ThemeScheduleTests {
    func hhmm(_ s: Int) -> String {
        let m = ((s / 60) % 1440 + 1440) % 1440
        return String(format: "%02d:%02d", m / 60, m % 60)
    }

    @Test func scheduledThemeDuringItsPeriodAndManualChoiceUntilNextChange() throws {
        let d = tempDir()
        let start: Int64 = 1_700_000_000
        let now = LocalZone.system.secondsSinceMidnight(at: start)
        // "dark" from 30 minutes from now for an hour.
        let period = "\(hhmm(now + 1800))-\(hhmm(now + 5400))"
        let path = write("""
        theme = "light"
        theme_schedule = [ { theme = "dark", period = "\(period)" } ]
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [scene.score]
        kind = "counter"
        [[scene.score.counter]]
        name = "HOME"
        """, d)
        let config = try DaemonConfig.load(path: path, environment: [:])
        #expect(config.themeSchedule.map(\.name) == ["dark"])
        // On virtual time: each change below comes from the theme controller's own wall-clock
        // timer as the loop advances, never from a call to `refreshTheme`. A counter, not a
        // clock: a clock would draw each of the day's 90 000 virtual seconds (12 s of test).
        let loop = ManualEventLoop(epochSeconds: start)
        let (daemon, _) = try headlessDaemon(path, on: loop)
        daemon.startAsKioskd()
        #expect(daemon.manager.theme == .light)
        loop.advance(seconds: 1800)
        #expect(daemon.activeThemeName == "dark")
        #expect(daemon.manager.theme == .dark)
        #expect(daemon.status().theme == "dark")
        // Chosen by hand during the period: holds until the period ends.
        #expect(try daemon.answer(.theme(name: "high-contrast")).status == 200)
        #expect(daemon.manager.theme == .highContrast)
        loop.advance(seconds: 600)
        #expect(daemon.manager.theme == .highContrast)
        // After the period: the chosen theme (no schedule entry applies).
        loop.advance(seconds: 3600)
        #expect(daemon.activeThemeName == "high-contrast")
        // Next day's period shows the scheduled theme again.
        loop.advance(seconds: 86_400 - 3600)
        #expect(daemon.activeThemeName == "dark")
        daemon.shutdown()
    }

    @Test func badScheduleEntriesNameLineAndKey() {
        let d = tempDir()
        let base = "state_dir = \"/tmp/x\"\n[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n"
        let m1 = configError { _ = try loadConfig("theme_schedule = [ { theme = \"dark\", period = \"22:00\" } ]\n" + base, dir: d) }
        #expect(m1?.hasPrefix("\(d)/kioskd.toml:1: key 'theme_schedule[0].period': expected a period") == true, "\(m1 ?? "")")
        let m2 = configError { _ = try loadConfig("theme_schedule = [\n  { theme = \"dark\", period = \"22:00-07:00\" },\n  { theme = \"nigth\", period = \"07:00-08:00\" },\n]\n" + base, dir: d) }
        #expect(m2?.hasPrefix("\(d)/kioskd.toml:3: key 'theme_schedule[1].theme': unknown theme \"nigth\"") == true, "\(m2 ?? "")")
    }
}
