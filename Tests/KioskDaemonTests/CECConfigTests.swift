import Foundation
import KioskCEC
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskPosix
import KioskRender
import KioskState
import KioskTesting
import Testing

/// `[display.cec]` and `[output.cec]`: the adapter an output's TV is reached through, errors
/// naming file:line:key, and the status an output's CEC link reports.
@Suite struct CECConfigTests {
    static let clock = """
    [scene.clock]
    kind = "clock"
    """

    @Test func noTableMeansNoCEC() throws {
        let c = try loadConfig("[display]\nbackend = \"headless\"\n" + Self.clock)
        #expect(c.display.cec == .none)
        #expect(c.outputs[0].cecChoice(c.display) == .none)
    }

    @Test func displayTableChoosesForTheSingleOutput() throws {
        let auto = try loadConfig("[display]\nbackend = \"headless\"\n[display.cec]\nadapter = \"auto\"\n" + Self.clock)
        #expect(auto.outputs[0].cecChoice(auto.display) == .auto)
        let path = try loadConfig("[display]\nbackend = \"headless\"\n[display.cec]\nadapter = \"/dev/cec1\"\n" + Self.clock)
        #expect(path.outputs[0].cecChoice(path.display) == .path("/dev/cec1"))
        let table = try loadConfig("[display]\nbackend = \"headless\"\n[display.cec]\n" + Self.clock)
        #expect(table.display.cec == .none) // adapter left out: "none"
    }

    @Test func outputTablesChooseTheirOwnOrTakeTheDisplays() throws {
        let c = try loadConfig("""
        [display]
        backend = "headless"
        [display.cec]
        adapter = "auto"
        [[output]]
        connector = "HDMI-A-1"
        [output.cec]
        adapter = "/dev/cec0"
        [[output]]
        connector = "HDMI-A-2"
        [[output]]
        connector = "DSI-1"
        [output.cec]
        adapter = "none"
        """ + "\n" + Self.clock)
        #expect(c.outputs.map { $0.cecChoice(c.display) } == [.path("/dev/cec0"), .auto, CECAdapterChoice.none])
    }

    @Test func aBadAdapterNamesFileLineAndKey() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig("[display]\nbackend = \"headless\"\n[display.cec]\nadapter = \"cec0\"\n" + Self.clock, dir: d) }
        #expect(msg == "\(d)/kioskd.toml:4: key 'display.cec.adapter': expected \"auto\", \"none\" or a CEC device path like \"/dev/cec0\", got \"cec0\"")
        let typo = configError { _ = try loadConfig("[display]\nbackend = \"headless\"\n[display.cec]\nadaptor = \"auto\"\n" + Self.clock, dir: d) }
        #expect(typo?.hasPrefix("\(d)/kioskd.toml:4: key 'display.cec.adaptor': unknown key") == true, "\(typo ?? "")")
    }

    @Test func anOutputsBadAdapterNamesItsTable() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig("""
        [display]
        backend = "headless"
        [[output]]
        connector = "HDMI-A-1"
        [output.cec]
        adapter = 3
        """ + "\n" + Self.clock, dir: d) }
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:6: key 'output[0].cec.adapter': expected a string") == true, "\(msg ?? "")")
    }

    @Test func twoOutputsCannotShareAnAdapter() {
        let d = tempDir()
        let msg = configError { _ = try loadConfig("""
        [display]
        backend = "headless"
        [[output]]
        connector = "HDMI-A-1"
        [output.cec]
        adapter = "/dev/cec0"
        [[output]]
        connector = "HDMI-A-2"
        [output.cec]
        adapter = "/dev/cec0"
        """ + "\n" + Self.clock, dir: d) }
        #expect(msg?.contains("key 'output[1].cec.adapter': adapter \"/dev/cec0\" is also the adapter of the output at") == true, "\(msg ?? "")")
        #expect(msg?.hasPrefix("\(d)/kioskd.toml:") == true, "\(msg ?? "")")
        let shared = configError { _ = try loadConfig("""
        [display]
        backend = "headless"
        [display.cec]
        adapter = "/dev/cec0"
        [[output]]
        connector = "HDMI-A-1"
        [[output]]
        connector = "HDMI-A-2"
        """ + "\n" + Self.clock, dir: d) }
        #expect(shared?.hasPrefix("\(d)/kioskd.toml:4: key 'display.cec.adapter': adapter \"/dev/cec0\" is also the adapter of the output at") == true,
                "\(shared ?? "")")
    }

    /// A missing adapter does not stop the kiosk: the output's status names the adapter and the
    /// open error (the link's thread reports it; nothing waits on the render loop).
    @Test func aMissingAdapterIsReportedInStatus() throws {
        let dir = tempDir()
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x36"
        [display.cec]
        adapter = "\(dir)/cec9"
        """ + "\n" + Self.clock, dir)
        let config = try DaemonConfig.load(path: path, environment: [:])
        let loop = try EventLoop()
        let display = try HeadlessDisplay(size: Size(width: 64, height: 36))
        let d = try Daemon(config: config, display: display, input: nil, state: MemoryStateStore(), loop: loop, logger: quietLogger)
        d.startAsKioskd()
        defer { d.shutdown() }
        var cec: OutputsAnswer.Output.CEC?
        let until = nowNanos(.monotonic) + 10_000_000_000
        while nowNanos(.monotonic) < until {
            try loop.runOnce(timeoutMs: 20)
            cec = d.status().outputs?.first?.cec
            if cec?.error != nil { break }
        }
        #expect(cec?.adapter == "\(dir)/cec9")
        #expect(cec?.power == "unknown")
        #expect(cec?.error == "cec: open \(dir)/cec9 failed: No such file or directory (errno 2)")
    }
}

/// Whatever blanks or lights the panel reaches `BlankController.onBlankedChange`, the hook the
/// TV's CEC link follows: idle, a waking touch, `kioskctl blank`, the schedule.
@Suite struct CECBlankingHookTests {
    @Test func everyBlankingRoadReachesTheHook() throws {
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let now = Int(LocalZone.system.secondsSinceMidnight(at: 1_700_000_000))
        func hhmm(_ s: Int) -> String {
            let m = ((s / 60) % 1440 + 1440) % 1440
            return String(format: "%02d:%02d", m / 60, m % 60)
        }
        // The period starts 61…120 s from now (whole minutes) and lasts an hour.
        let period = "\(hhmm(now + 120))-\(hhmm(now + 3720))"
        let dir = tempDir()
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [display.blank]
        idle_seconds = 30
        schedule = ["\(period)"]
        [scene.clock]
        kind = "clock"
        """, dir)
        let (d, display) = try headlessDaemon(path, on: loop)
        d.startAsKioskd()
        var seen: [Bool] = []
        d.blanking.onBlankedChange = { seen.append($0) }
        loop.advance(seconds: 31)
        #expect(seen == [true], "idle")
        d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.5, y: 0.5, timeUsec: loop.now().monotonicUsec)))
        #expect(seen == [true, false], "a waking touch")
        _ = d.handle(.blank(on: true))
        _ = d.handle(.blank(on: false))
        #expect(seen == [true, false, true, false], "kioskctl blank on, off")
        loop.advance(seconds: 150)
        #expect(seen == [true, false, true, false, true], "the schedule's period, \(period)")
        #expect(display.isBlanked)
    }
}
