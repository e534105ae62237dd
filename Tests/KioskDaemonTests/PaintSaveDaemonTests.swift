import Foundation
import KioskConfig
import KioskControl
import KioskCore
import KioskRender
import KioskState
import KioskTesting
@testable import KioskDaemon
import KioskDaemonTesting
import Testing
import KioskPosix

/// `POST /paint/save` and `POST /screenshot` carried out by the daemon.
@Suite struct PaintSaveDaemonTests {
    @Test func savesGoIntoThePaintingsFolderAndAreNeverOverwritten() throws {
        let d = tempDir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        let path = write("""
        state_dir = "\(d)/state"
        [display]
        backend = "headless"
        headless_size = "400x300"
        [scene.paint]
        kind = "paint"
        """, d)
        let config = try DaemonConfig.load(path: path, environment: [:])
        let daemon = try DaemonRunner.makeDaemon(config: config, state: MemoryStateStore(), loop: try EventLoop(), logger: quietLogger)
        daemon.startAsKioskd()
        defer { daemon.shutdown() }
        let first = daemon.handle(.paint(op: .save, name: "mine.png"))
        #expect(first.status == 200)
        #expect(first.jsonObject?["path"] as? String == "\(d)/state/paintings/mine.png")
        let again = daemon.handle(.paint(op: .save, name: "mine.png"))
        #expect(again.status == 409)
        #expect(again.jsonObject?["error"] as? String == "cannot write \(d)/state/paintings/mine.png: a file of that name already exists (errno 17); paintings are never overwritten")
        let auto = daemon.handle(.paint(op: .save, name: nil))
        #expect((auto.jsonObject?["path"] as? String)?.hasPrefix("\(d)/state/paintings/painting-") == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(d)/state/paintings").count == 2)

        // The screenshot is the frame's PNG, in the answer; nothing is written.
        let shot = daemon.handle(.screenshot())
        #expect(shot.status == 200 && shot.contentType == "image/png")
        let file = "\(d)/shot.png"
        try Data(shot.body).write(to: URL(fileURLWithPath: file))
        let img = try Canvas.loadPNG(path: file)
        let frame = try #require(daemon.manager.canvas)
        #expect(img.size == frame.size)
        #expect(Pixels.differingPixels(img, frame) == 0)
    }
}
