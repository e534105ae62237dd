import Foundation
import KioskTesting
import Testing

/// `kioskctl clock …`: actions read before anything is sent (a bad one is a usage error naming
/// the word, exit 64, nothing sent), and what reaches the daemon.
struct KioskctlClockTests {
    init() { signal(SIGPIPE, SIG_IGN) }

    @Test func badClockActionsAreUsageErrorsNamingWhatIsWrong() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Binaries.kioskctl), "build kioskctl first (\(Binaries.kioskctl))")
        let d = tempDir()
        let s = try FakeControlServer(path: "\(d)/c.sock") { fd, _ in KioskctlTests.okJSON(fd, "{}") }
        defer { s.stop() }
        for (words, says) in [(["set", "99:99"], "set: '99:99' is not MM:SS[.t] (seconds 0–59)"),
                              (["adjust", "x"], "adjust: 'x' is not ±SECONDS"),
                              (["period", "0"], "period: '0' is not a period number"),
                              (["jump"], "clock: unknown action 'jump'")] {
            let (code, out, err) = try kioskctl(["clock"] + words + ["--socket", s.path])
            #expect(code == 64, "\(words): exit \(code), stderr: \(err)")
            #expect(err.contains(says), "\(words): \(err)")
            #expect(out.isEmpty)
        }
        #expect(s.received.isEmpty)
    }

    @Test func aClockActionIsSentAsItsWordsAndItsAnswerPrinted() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Binaries.kioskctl), "build kioskctl first (\(Binaries.kioskctl))")
        let d = tempDir()
        let s = try FakeControlServer(path: "\(d)/c.sock") { fd, _ in
            KioskctlTests.okJSON(fd, #"{"ok": true, "scene": "board", "clock": {"running": true, "remaining_ms": 449000, "period": 2, "shot_remaining_ms": 14000}}"#)
        }
        defer { s.stop() }
        let (code, out, err) = try kioskctl(["clock", "adjust", "-60", "--socket", s.path])
        #expect(code == 0, "\(err)")
        #expect(out == "board: 7:29 running, period 2, shot 14\n")
        let req = try #require(s.received.first)
        #expect(req.hasPrefix("POST /clock HTTP/1.1\r\n") && req.hasSuffix(#"{"words":["adjust","-60"]}"#), "\(req)")
    }
}
