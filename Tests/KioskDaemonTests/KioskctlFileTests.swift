import Foundation
import KioskControl
import KioskCore
import KioskDaemon
import KioskTestTraits
import Testing
import KioskTesting

/// `kioskctl paint save [NAME]` and `kioskctl screenshot FILE` against the real kioskd.
@Suite(.ownThreads, .serialized, .enabled(if: slowTests, "set KIOSK_SLOW_TESTS=1 to run the kioskd process tests"))
struct KioskctlFileTests {
    @Test func paintSaveTakesANameAndScreenshotIsWrittenByKioskctl() throws {
        let d = tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let path = write("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "320x180"
        [scene.paint]
        kind = "paint"
        [control]
        socket = "\(d)/c.sock"
        """, d)
        let child = try Child(Binaries.kioskd, ["--config", path], log: "\(d)/log")
        defer { child.signal(SIGKILL) }
        for _ in 0..<1200 where !ControlClient.socketAnswers("\(d)/c.sock") && child.process.isRunning { usleep(25_000) }
        let sock = ["--socket", "\(d)/c.sock"]

        let (badCode, _, badErr) = try kioskctl(["paint", "save", "../x.png"] + sock)
        #expect(badCode == 1)
        #expect(badErr.hasPrefix("kioskctl: field 'name': painting name \"../x.png\" contains '/'"), "\(badErr)")
        #expect(!FileManager.default.fileExists(atPath: "\(d)/state/x.png"))
        let (code, out, err) = try kioskctl(["paint", "save", "mine.png"] + sock)
        #expect(code == 0, "\(err)")
        #expect(out == "save: 0 strokes, saved \(d)/state/paintings/mine.png\n")
        let (againCode, _, againErr) = try kioskctl(["paint", "save", "mine.png"] + sock)
        #expect(againCode == 1)
        #expect(againErr.contains("a file of that name already exists (errno 17); paintings are never overwritten (HTTP 409)"), "\(againErr)")

        let (shotCode, shotOut, _) = try kioskctl(["screenshot", "\(d)/shot.png"] + sock)
        #expect(shotCode == 0)
        #expect(shotOut.hasPrefix("wrote \(d)/shot.png ("))
        #expect(FileManager.default.contents(atPath: "\(d)/shot.png").map { Array($0.prefix(4)) } == [0x89, 0x50, 0x4E, 0x47])
        let (failCode, _, failErr) = try kioskctl(["screenshot", "\(d)/missing/shot.png"] + sock)
        #expect(failCode == 1)
        #expect(failErr == "kioskctl: cannot write the screenshot: open \(d)/missing/shot.png failed: No such file or directory (errno 2)\n")
    }
}
