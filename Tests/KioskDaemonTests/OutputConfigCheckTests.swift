import Foundation
import KioskCore
@testable import KioskDaemon
import Testing

/// Output settings the start would refuse are refused when the config is read (what
/// `--check-config` does), each naming file:line and the key: modes no display or framebuffer
/// can have, two outputs with one name, connector names no kernel gives.
@Suite struct OutputConfigCheckTests {
    static let scenes = """
    [scene.clock]
    kind = "clock"
    """

    /// Two outputs on `backend`; `first` and `second` are the bodies of their tables.
    static func twoOutputs(_ dir: String, backend: String = "drm", first: String, second: String) -> String {
        """
        state_dir = "\(dir)/state"
        [display]
        backend = "\(backend)"
        [[output]]
        \(first)
        [[output]]
        \(second)
        \(scenes)
        """
    }

    func error(_ text: String, _ dir: String) -> String {
        configError { _ = try loadConfig(text, dir: dir) } ?? "no error"
    }

    @Test(arguments: ["100000x100000", "16385x1080", "1920x1080@1000", "0x1080", "1920x1080@0"])
    func modesNoDisplayHasAreRefusedWithFileLineKey(mode: String) {
        let d = tempDir()
        let e = error(Self.twoOutputs(d, first: "connector = \"HDMI-A-1\"", second: "connector = \"DSI-1\"\nmode = \"\(mode)\""), d)
        #expect(e == "\(d)/kioskd.toml:8: key 'output[1].mode': expected a mode like \"1920x1080\" or \"1920x1080@60\" "
                + "(each side 1…16384, refresh under 1000 Hz), got \"\(mode)\"", "\(e)")
        let single = error("state_dir = \"\(d)/state\"\n[display]\nmode = \"\(mode)\"\n\(Self.scenes)", d)
        #expect(single.hasPrefix("\(d)/kioskd.toml:3: key 'display.mode': expected a mode like"), "\(single)")
    }

    /// With the headless backend an output's mode is the size of a frame in memory.
    @Test func headlessOutputSizesAreBounded() throws {
        let d = tempDir()
        let e = error(Self.twoOutputs(d, backend: "headless", first: "mode = \"160x90\"", second: "mode = \"10000x100\""), d)
        #expect(e == "\(d)/kioskd.toml:7: key 'output[1].mode': with backend = \"headless\" the mode is the size of the output's "
                + "frame in memory: each side 16…8192, got \"10000x100\"", "\(e)")
        let fine = try loadConfig(Self.twoOutputs(d, backend: "headless", first: "mode = \"160x90\"", second: "mode = \"8192x16@60\""), dir: d)
        #expect(fine.outputs.map(\.mode) == ["160x90", "8192x16@60"])
        // A fractional refresh the DRM backend reads is a mode too.
        let drm = try loadConfig(Self.twoOutputs(d, first: "mode = \"1920x1080@59.94\"", second: "mode = \"16384x16384\""), dir: d)
        #expect(drm.outputs.map(\.mode) == ["1920x1080@59.94", "16384x16384"])
    }

    @Test func twoOutputsWithOneNameAreRefused() {
        let d = tempDir()
        // The second output has no connector: it is called output-2, as the first is named.
        let e = error(Self.twoOutputs(d, first: "connector = \"output-2\"", second: "rotation = 90"), d)
        #expect(e == "\(d)/kioskd.toml:5: key 'output[0].connector': connector \"output-2\" is also the name of the output without "
                + "a connector at \(d)/kioskd.toml:6 (outputs without one are called output-N, N counted from 1); name that output's "
                + "connector or use another name", "\(e)")
        let upper = error(Self.twoOutputs(d, first: "rotation = 90", second: "connector = \"OUTPUT-1\""), d)
        #expect(upper.hasPrefix("\(d)/kioskd.toml:7: key 'output[1].connector': connector \"OUTPUT-1\" is also the name of the output without "
                                + "a connector at \(d)/kioskd.toml:4 "), "\(upper)")
    }

    @Test(arguments: ["HDMI-A-1\n", "HDMI\u{1}A-1", "DSI-1\r", "HDMI-A-1\t", "HDMI-A-1\u{7F}", "\u{85}DSI-1", "DSI\u{2028}1",
                      String(repeating: "A", count: 65)])
    func connectorNamesNoKernelGivesAreRefused(name: String) {
        let d = tempDir()
        let toml = "\"" + name.unicodeScalars.map { $0.value < 0x20 || $0.value >= 0x7F ? String(format: "\\u%04X", $0.value) : String($0) }.joined() + "\""
        let shown = ConfigTable.quoted(name)
        let rule = "a connector name like \"HDMI-A-1\" (1…64 characters, no control characters or line breaks; kioskd --list-outputs shows them)"
        let e = error(Self.twoOutputs(d, first: "connector = \(toml)", second: "connector = \"DSI-1\""), d)
        #expect(e == "\(d)/kioskd.toml:5: key 'output[0].connector': expected \(rule), got \(shown)", "\(e)")
        let single = error("state_dir = \"\(d)/state\"\n[display]\noutput = \(toml)\n\(Self.scenes)", d)
        #expect(single == "\(d)/kioskd.toml:3: key 'display.output': expected \(rule), got \(shown)", "\(single)")
        let mapped = error("state_dir = \"\(d)/state\"\n[input]\nmap_to_output = \(toml)\n\(Self.scenes)", d)
        #expect(mapped == "\(d)/kioskd.toml:3: key 'input.map_to_output': expected \(rule), got \(shown)", "\(mapped)")
    }

    @Test func kernelConnectorNamesAreAccepted() throws {
        let d = tempDir()
        // Kernel names, and (headless, where a name is only a name) any line of printable text.
        for name in ["HDMI-A-1", "DSI-1", "Virtual-2", "eDP-1", "Unknown20-1", "DVI-I-1", "Writeback-1", "Desk #2/left+", "Écran ☀",
                     String(repeating: "A", count: 64)] {
            let c = try loadConfig(Self.twoOutputs(d, first: "connector = \"\(name)\"", second: "connector = \"*\""), dir: d)
            #expect(c.outputs.map(\.name) == [name, "output-2"])
        }
    }
}
