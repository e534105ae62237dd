import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskScenes
import KioskTestTraits
import Testing

/// `POST /horn` and status's `audio` on a running daemon: ALSA's null device sounds, `mute` is
/// answered "muted", a device that cannot be opened leaves the horn unavailable (503 naming it)
/// while the daemon keeps drawing, and no `[audio]` is a 404 that says what to add.
@Suite(.ownThreads) struct DaemonHornTests {
    func daemon(_ audio: String) throws -> Daemon {
        let d = try makeDaemon(tempDir(), extra: audio)
        d.startAsKioskd()
        try d.step()
        return d
    }

    @Test func theNullDeviceSoundsAndStatusReportsIt() throws {
        let d = try daemon("[audio]\ndevice = \"null\"\nhorn_seconds = 0.2\n")
        defer { d.shutdown() }
        let r = try d.answer(.horn)
        let body = String(decoding: r.body, as: UTF8.self)
        #expect(r.status == 200 && r.jsonObject?["result"] as? String == "sounding" && r.jsonObject?["device"] as? String == "null", "\(body)")
        let deadline = nowNanos(.monotonic) + 5_000_000_000
        while d.status().audio?.lastHorn == nil && nowNanos(.monotonic) < deadline { usleep(5000) }
        let audio = try #require(d.status().audio)
        #expect(audio.available && !audio.muted && audio.horn == "builtin" && audio.device == "null")
        let last = try #require(audio.lastHorn)
        #expect(last.requestedNs == (r.jsonObject?["requested_ns"] as? Int).map(Int64.init) && last.writeLatencyMs < 50, "\(last)")
    }

    /// The clock's hook: the horn is requested for the instant of the frame that shows 0.0 (not
    /// the instant the clock reached zero, nor when the hook ran); the VM scenario
    /// `kioskd-horn-clock` measures the sound against that instant.
    @Test func aClockAtZeroSoundsTheHornForTheFramesInstant() throws {
        let d = try daemon("[audio]\ndevice = \"null\"\nhorn_seconds = 0.2\n")
        defer { d.shutdown() }
        let frame = nowNanos(.monotonic) - 3_000_000
        d.clockReachedZero(GameClockEvent(scene: "board", event: .init(.periodEnded(period: 1), monotonicNs: frame - 2_000_000), frameNs: frame))
        let deadline = nowNanos(.monotonic) + 5_000_000_000
        while d.status().audio?.lastHorn == nil && nowNanos(.monotonic) < deadline { usleep(5000) }
        let last = try #require(d.status().audio?.lastHorn)
        #expect(last.requestedNs == frame, "\(last)")
    }

    @Test func mutedIsAnsweredMuted() throws {
        let d = try daemon("[audio]\ndevice = \"null\"\nmute = true\n")
        defer { d.shutdown() }
        let r = try d.answer(.horn)
        #expect(r.status == 200 && r.jsonObject?["result"] as? String == "muted", "\(String(decoding: r.body, as: UTF8.self))")
        #expect(d.status().audio?.muted == true && d.status().audio?.available == true)
    }

    @Test func noDeviceLeavesTheHornUnavailableAndTheDaemonDrawing() throws {
        let d = try daemon("[audio]\ndevice = \"hw:97,0\"\n")
        defer { d.shutdown() }
        let audio = try #require(d.status().audio)
        #expect(!audio.available && audio.error?.hasPrefix("cannot open the sound device \"hw:97,0\"") == true, "\(audio)")
        let r = try d.answer(.horn)
        #expect(r.status == 503 && r.errorMessage?.hasPrefix("the horn is unavailable: cannot open the sound device \"hw:97,0\"") == true,
                "\(String(decoding: r.body, as: UTF8.self))")
        let frames = d.manager.frameCount
        #expect(try d.answer(.scene(name: "clock")).status == 200)
        for _ in 0..<3 { try d.step() }
        #expect(d.manager.frameCount > frames, "the daemon kept drawing (\(frames) → \(d.manager.frameCount) frames)")
    }

    @Test func noAudioTableIsA404ThatSaysWhatToAdd() throws {
        let d = try daemon("")
        defer { d.shutdown() }
        #expect(d.status().audio == nil)
        let r = try d.answer(.horn)
        #expect(r.status == 404 && r.errorMessage?.contains("add an [audio] table") == true)
    }
}

/// The route: `POST /horn` with no body or `{}`; other methods refused.
@Suite struct HornRouteTests {
    @Test func route() throws {
        #expect(try ControlRouter.parse(method: "POST", uri: "/horn", body: []) == .horn)
        #expect(try ControlRouter.parse(method: "POST", uri: "/horn", body: Array("{}".utf8)) == .horn)
        #expect(ControlCommand.horn.request == ControlRequest(method: "POST", path: "/horn"))
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "GET", uri: "/horn", body: []) }
        #expect(throws: ControlRequestError.self) { try ControlRouter.parse(method: "POST", uri: "/horn/now", body: []) }
    }
}
