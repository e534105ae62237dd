import Foundation
import KioskAudio
import KioskCore
import Logging
import Testing

/// The player's device handling: an unknown device is a clear error naming it; on ALSA's null
/// device (no sound card needed) a horn is written on the audio thread soon after it is asked for.
@Suite struct HornPlayerTests {
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test func aDeviceThatCannotBeOpenedIsNamed() {
        let sound = HornTone().render(seconds: 0.2, volume: 50)
        do {
            _ = try HornPlayer(device: "hw:97,0", sound: sound, muted: false, logger: logger)
            Issue.record("hw:97,0 opened")
        } catch {
            #expect("\(error)".hasPrefix("cannot open the sound device \"hw:97,0\": "), "\(error)")
        }
    }

    @Test func theNullDeviceSoundsOnTheAudioThread() throws {
        let sound = HornTone().render(seconds: 0.3, volume: 50)
        let player = try HornPlayer(device: "null", sound: sound, muted: false, logger: logger)
        defer { player.stop() }
        #expect(player.bufferFrames > 0 && player.periodFrames > 0 && player.periodFrames <= player.bufferFrames)
        let asked = nowNanos(.monotonic)
        #expect(player.sound(requestedNs: asked) == .sounding)
        // The null device takes the whole sound at once (it does not play in real time), so on a
        // loaded machine the audio thread may have finished the first horn before this second
        // call: then the second sounds, and the report is its own. While the first is under way
        // the second is refused, and the report is the first's.
        let second = player.sound(requestedNs: asked + 1)
        #expect(second == .alreadySounding || second == .sounding)
        let expected = second == .sounding ? asked + 1 : asked
        let deadline = asked + 5_000_000_000
        while (player.isSounding || player.lastReport?.requestedNs != expected) && nowNanos(.monotonic) < deadline { usleep(5000) }
        let r = try #require(player.lastReport)
        #expect(r.requestedNs == expected && r.firstWrittenNs >= expected && r.error == nil)
        #expect(r.writeLatencyMs < 50, "written \(r.writeLatencyMs) ms after the request")
        #expect(!player.isSounding)
    }

    @Test func mutedPlaysNothing() throws {
        let player = try HornPlayer(device: "null", sound: HornTone().render(seconds: 0.2, volume: 50), muted: true, logger: logger)
        defer { player.stop() }
        #expect(player.sound() == .muted)
        usleep(100_000)
        #expect(player.lastReport == nil && !player.isSounding)
    }
}
