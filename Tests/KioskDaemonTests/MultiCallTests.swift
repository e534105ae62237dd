import Foundation
import KioskControl
import KioskTestTraits
import KioskTesting
import Testing

/// The package installs /usr/bin/kioskctl as a link to kioskd (scripts/package.sh): one binary,
/// one copy of the static Swift runtime. kioskd called by that name is kioskctl.
@Suite(.ownThreads)
struct MultiCallTests {
    @Test func kioskdCalledKioskctlIsKioskctl() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Binaries.kioskd), "build kioskd first (\(Binaries.kioskd))")
        let d = tempDir()
        let link = "\(d)/kioskctl"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: Binaries.kioskd)
        let (code, out, err) = try SpawnedProcess.run(link, ["status", "--socket", "\(d)/c.sock"])
        #expect(code == 2, "stdout: \(out) stderr: \(err)")
        #expect(err == "kioskctl: kioskd is not running (no socket at \(d)/c.sock)\n")
        let (helpCode, help, _) = try SpawnedProcess.run(link, ["--help"])
        #expect(helpCode == 0)
        #expect(help.contains("USAGE: kioskctl <subcommand>"), "\(help)")
        // Under its own name it is still the daemon.
        let (daemonCode, daemonHelp, _) = try SpawnedProcess.run(Binaries.kioskd, ["--help"])
        #expect(daemonCode == 0)
        #expect(daemonHelp.contains("--check-config") && !daemonHelp.contains("<subcommand>"), "\(daemonHelp)")
    }

    /// A command that succeeds exits 0 with the answer alone (it went on into the daemon's
    /// arguments: the answer, then "Unknown option '--socket'", exit 64; seen on the arm64 VM).
    @Test func kioskctlThroughTheLinkExitsZeroAfterAnAnswer() throws {
        let d = tempDir()
        let config = write("state_dir = \"\(d)/state\"\n[display]\nbackend = \"headless\"\nheadless_size = \"320x180\"\n[scene.clock]\nkind = \"clock\"\n[control]\nsocket = \"\(d)/c.sock\"\n", d)
        let daemon = try Child(Binaries.kioskd, ["--config", config], log: "\(d)/log")
        defer { daemon.signal(SIGTERM); _ = daemon.wait(seconds: 10) }
        var up = false
        for _ in 0..<1200 where !up { up = ControlClient.socketAnswers("\(d)/c.sock"); if !up { usleep(25_000) } }
        try #require(up, "kioskd did not open its socket: \(daemon.log)")
        let link = "\(d)/kioskctl"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: Binaries.kioskd)
        let (code, out, err) = try SpawnedProcess.run(link, ["status", "--socket", "\(d)/c.sock"])
        #expect(code == 0, "stdout: \(out) stderr: \(err)")
        #expect(out.hasPrefix("scene:   clock (clock)") && out.contains("version: kioskd "), "\(out)")
        #expect(err.isEmpty, "\(err)")
    }
}
