import Foundation
import KioskConfig
import KioskCore
@testable import KioskDaemon
import Testing

/// Paths in the config resolved against the config file's folder, and the start-up check walking
/// up a path, where a folder's name is one character (full Foundation's NSString path methods
/// trapped on those: `kioskd --config k`).
struct ConfigPathTests {
    /// A good config whose `state_dir` is relative.
    static let text = ConfigHardeningTests.good.replacingOccurrences(of: "/tmp/x", with: "state")

    @Test func relativePathsResolveBesideAConfigNamedWithOneCharacter() throws {
        let here = try DaemonConfig(root: ConfigFile.parse(Self.text, file: "k"), file: "k")
        #expect(here.stateDirectory == "state")
        let inC = try DaemonConfig(root: ConfigFile.parse(Self.text, file: "c/k"), file: "c/k")
        #expect(inC.stateDirectory == "c/state")
        let inRoot = try DaemonConfig(root: ConfigFile.parse(Self.text, file: "/k"), file: "/k")
        #expect(inRoot.stateDirectory == "/state")
    }

    @Test func creatableWalksUpToARelativeFolderOfOneCharacter() {
        // "Ω" is not in the tests' working folder: the walk ends at the working folder itself.
        #expect(!FileManager.default.fileExists(atPath: "Ω"))
        #expect(DaemonConfig.creatable("Ω/state") == nil)
        #expect(DaemonConfig.creatable("Ω/a/state") == nil)
    }
}
