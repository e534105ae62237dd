import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskTesting
import KioskTestTraits
import Logging
import Testing

/// Twenty minutes of a running game clock in the daemon on virtual time: every frame the scene
/// draws, as its frame log says ("game clock shown": the frame's instant and face), shows the
/// truth's face, and the frame that first shows a face comes within one frame of the instant the
/// truth reaches it, from the first minute to the last (no accumulated drift); status agrees to
/// the millisecond; the period ends on the exact nanosecond.
@Suite(.ownThreads) struct GameClockDriftDaemonTests {
    /// The face the truth shows with `ns` left, counting down with tenths under 1:00, written by
    /// the test on its own (a second rounded up as M:SS, or a tenth rounded up as S.t).
    static func truthFace(_ ns: Int64) -> String {
        let tenths = (max(ns, 0) + 99_999_999) / 100_000_000
        if tenths < 600 { return "\(tenths / 10).\(tenths % 10)" }
        let s = (tenths + 9) / 10
        return "\(s / 60):" + (s % 60 < 10 ? "0" : "") + "\(s % 60)"
    }

    /// The most time left that `face` shows (the instant it first appears is when this is left).
    static func faceUpperNs(_ face: String) -> Int64 {
        if let colon = face.firstIndex(of: ":") { return (Int64(face[..<colon])! * 60 + Int64(face[face.index(after: colon)...])!) * 1_000_000_000 }
        let parts = face.split(separator: ".")
        return (Int64(parts[0])! * 10 + Int64(parts[1])!) * 100_000_000
    }

    @Test func twentyMinutesOfFramesInTheDaemonStayWithinOneFrameOfTheTruth() throws {
        let d = tempDir()
        let loop = ManualEventLoop()
        let log = CapturedLog(level: .debug)
        let config = """
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "320x200"
            [scene.board]
            kind = "counter"
            [[scene.board.counter]]
            name = "HOME"
            [scene.board.clock]
            period_length = "20:00"
            tenths_below = "1:00"
            """
        let daemon = try DaemonRig.start(config, in: d, loop: loop, time: loop, logger: log.logger)
        defer { daemon.shutdown() }
        var random = SeededRandom(seed: 1200)
        loop.advance(by: 123_456_789)  // an odd instant
        let since = loop.monotonic
        #expect(try daemon.answer(.clock(intent: .start, scene: nil)).status == 200)
        let length: Int64 = 1_200_000_000_000
        let end = since + length
        var statusReads = 0
        // The render loop wakes at the scene's deadlines and at other instants (input, timers):
        // steps of 1…16 ms, for 20 minutes and a second.
        while loop.monotonic < end + 1_000_000_000 {
            loop.advance(by: Int64.random(in: 1_000_000...16_000_000, using: &random))
            try daemon.step()
            if statusReads < 21, loop.monotonic >= since + Int64(statusReads) * 60_000_000_000 {
                // Status at each whole minute: the truth to the millisecond (rounded up).
                let shown = try #require(daemon.status().clocks?.first).clock.remainingMs
                let truth = Int((max(0, length - (loop.monotonic - since)) + 999_999) / 1_000_000)
                #expect(shown == truth, "status at \(loop.monotonic - since) ns: \(shown) ms, truth \(truth) ms")
                statusReads += 1
            }
        }
        #expect(statusReads == 21)

        // The frame log from the start on: each frame's face is the truth's at that frame.
        let lines = log.entries.filter { $0.message.description == "game clock shown" }.compactMap { e -> (Int64, String, Bool)? in
            guard let f = e.metadata["frame_ns"].flatMap({ Int64("\($0)") }), let g = e.metadata["game"] else { return nil }
            return (f, "\(g)", "\(e.metadata["running"] ?? "")" == "true")
        }.filter { $0.0 >= since }
        // 20:00 was drawn before the start; then 19:59…1:00 and 59.9…0.0, each drawn once.
        #expect(lines.count == 1_140 + 600, "one frame per second, ten under a minute: \(lines.count) frames logged")
        var wrong = 0, lags: [Int64] = []
        var previous = "20:00"
        for (f, face, _) in lines {
            if face != Self.truthFace(length - (f - since)) { wrong += 1 }
            if face != previous { lags.append(f - (end - Self.faceUpperNs(face))) }
            previous = face
        }
        #expect(wrong == 0, "\(wrong) frames showed another face than the truth's")
        #expect(lags.count == 1_140 + 600, "every second and every tenth shown once: \(lags.count) face changes")
        #expect(lags.allSatisfy { (0..<17_000_000).contains($0) }, "a face came early or over one frame late: \(lags.filter { !(0..<17_000_000).contains($0) }.prefix(5))")
        // No drift: the frames of the last minute are as close to the truth as those of the first.
        let firstMinute = lags.prefix(60), lastMinute = lags.suffix(600)
        #expect((lastMinute.max() ?? 0) < 17_000_000 && (firstMinute.max() ?? 0) < 17_000_000)
        // The end: 0.0 on the frame at the exact nanosecond 20:00 after the start, the clock stopped.
        let zero = try #require(log.entries.first { $0.message.description == "game clock reached zero" })
        #expect("\(zero.metadata["zero_ns"] ?? "")" == "\(end)")
        let last = try #require(lines.last)
        #expect(last.1 == "0.0" && !last.2 && last.0 - end < 17_000_000, "\(last)")
        #expect(daemon.status().clocks?.first?.clock.remainingMs == 0)
    }
}
