import Foundation

/// The built executables (`kioskd`, `kioskctl`) that process tests start: next to the test
/// bundle, or in `$KIOSKD_BIN_DIR`.
public enum Binaries {
    public static var dir: String {
        if let d = ProcessInfo.processInfo.environment["KIOSKD_BIN_DIR"] { return d }
        var p = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // swift-testing runs inside "<bin>/kioskdPackageTests.xctest".
        if p.lastPathComponent.hasSuffix(".xctest") { p = p.deletingLastPathComponent() }
        if !FileManager.default.isExecutableFile(atPath: p.appendingPathComponent("kioskd").path) {
            p = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        }
        return p.path
    }
    public static var kioskd: String { "\(dir)/kioskd" }
    public static var kioskctl: String { "\(dir)/kioskctl" }
    /// The release `kioskd` (the Swift runtime linked statically, as installed): `$KIOSKD_RELEASE_BIN`,
    /// else `.build-bench/release/kioskd` under the current directory; nil when it is not built.
    public static var releaseKioskd: String? {
        let p = ProcessInfo.processInfo.environment["KIOSKD_RELEASE_BIN"]
            ?? FileManager.default.currentDirectoryPath + "/.build-bench/release/kioskd"
        return FileManager.default.isExecutableFile(atPath: p) ? p : nil
    }
}
