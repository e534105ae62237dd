import Foundation
import KioskCore
import Testing

@Suite struct KioskVersionTests {
    /// The version compiled in (CKioskVersion/version.c) is the file VERSION's: the package,
    /// `kioskd --version`, `kioskctl status` and the state directory's version file agree.
    @Test func theCompiledVersionIsTheVersionFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("VERSION"), encoding: .utf8)
        #expect(KioskVersion.current == file.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(!KioskVersion.current.isEmpty)
    }

    @Test func versionsOrderAsDpkgOrdersThem() {
        let ascending = ["0.0.9", "0.1.0~rc1", "0.1.0", "0.1.0-2", "0.1.1", "0.2.0", "0.10.0", "1.0.0~beta", "1.0.0"]
        for (i, a) in ascending.enumerated() {
            for (j, b) in ascending.enumerated() {
                let c = KioskVersion.compare(a, b)
                #expect(c == (i < j ? -1 : i > j ? 1 : 0), "\(a) vs \(b): \(c)")
            }
        }
        #expect(KioskVersion.compare("0.1.0-1", "0.1.0-1") == 0)
        #expect(KioskVersion.compare("0.1.0+upgradetest1", "0.1.0") == 1)
    }
}
