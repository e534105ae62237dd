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
        #expect(player.sound() == .alreadySounding)
        let deadline = asked + 5_000_000_000
        while player.lastReport == nil && nowNanos(.monotonic) < deadline { usleep(5000) }
        let r = try #require(player.lastReport)
        #expect(r.requestedNs == asked && r.firstWrittenNs >= asked && r.error == nil)
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
