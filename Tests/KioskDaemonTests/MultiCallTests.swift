import Foundation
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
}
