import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskTestTraits
import KioskTesting
import Testing

/// The settings layer with the real `kioskd` and `kioskctl` binaries (KIOSK_SLOW_TESTS=1): a
/// value set with `kioskctl config set` is kept through a SIGKILL, shown by `kioskctl config show`
/// with its source, and the config file is never written.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct SettingsProcessTests {
    /// kioskd on the config of the state process tests (one counter scene, HOME), its socket answering.
    func started(_ path: String, _ d: String, log: String) throws -> Child? {
        let child = try Child(Binaries.kioskd, ["--config", path], log: log)
        return StateProcessTests().waitForSocket("\(d)/c.sock", child) ? child : nil
    }

    @Test func aValueSetWithKioskctlSurvivesAKillAndTheFileIsUntouched() throws {
        let d = tempDir()
        let path = write(StateProcessTests().config(state: "\(d)/state", socket: "\(d)/c.sock"), d)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let first = try started(path, d, log: "\(d)/log1") else { return }
        let set = try kioskctl(["config", "set", "scene.score.counter[0].label", "LIONS", "--socket", "\(d)/c.sock"])
        #expect(set.0 == 0, "\(set.2)")
        #expect(set.1.hasPrefix("scene.score.counter[0].label = \"LIONS\"  # set by kioskctl at "), "\(set.1)")
        let zero = try kioskctl(["config", "set", "scene.score.digits", "0", "--socket", "\(d)/c.sock"])
        #expect(zero.0 == 1)
        #expect(zero.2.contains("key 'scene.score.digits'") && zero.2.contains("(HTTP 422)"), "\(zero.2)")
        first.signal(SIGKILL)
        #expect(first.wait(seconds: 10))

        guard let second = try started(path, d, log: "\(d)/log2") else { return }
        let show = try kioskctl(["config", "show", "scene.score", "--socket", "\(d)/c.sock"])
        #expect(show.0 == 0)
        #expect(show.1.contains("scene.score.counter[0].label = \"LIONS\"  # set by kioskctl at "), "\(show.1)")
        #expect(show.1.contains("scene.score.counter[0].name = \"HOME\"  # \(path):8"), "\(show.1)")
        #expect(show.1.contains("scene.score.digits = 4  # default"), "\(show.1)")
        let reset = try kioskctl(["config", "reset", "scene.score.counter[0].label", "--socket", "\(d)/c.sock"])
        #expect(reset.0 == 0, "\(reset.2)")
        #expect(reset.1.hasPrefix("scene.score.counter[0].label = \"HOME\"  # default"), "\(reset.1)")
        second.signal(SIGTERM)
        #expect(second.wait(seconds: 10))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }
}
