import Foundation
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskDaemonTesting
import KioskRender
import KioskScenes
import KioskTesting
import KioskTestTraits
import Testing
import KioskPosix

@Suite(.ownThreads) struct ChangeFeedTests {
    func daemon(_ dir: String) throws -> (Daemon, ManualEventLoop) {
        let path = write("""
        state_dir = "\(dir)/state"
        [display]
        backend = "headless"
        headless_size = "64x48"
        [scene.score]
        kind = "counter"
        digits = 2
        min = 1
        [[scene.score.counter]]
        name = "HOME"
        label = "Home"
        [[scene.score.counter]]
        name = "AWAY"
        [scene.clock]
        kind = "clock"
        """, dir)
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let (d, _) = try headlessDaemon(path, on: loop)
        return (d, loop)
    }

    @Test func everyKindOfChangeIsToldOnceAndAnUnchangedStateIsNotToldAgain() throws {
        let (d, loop) = try daemon(tempDir())
        d.startAsKioskd()
        var seen: [KioskState] = []
        d.changes.observe { seen.append($0) }
        loop.step()
        let first = d.kioskState()
        #expect(first.counters.map(\.name) == ["HOME", "AWAY"])
        #expect(first.counters.map(\.label) == ["Home", "AWAY"])
        #expect(first.counters.map(\.value) == [1, 1])
        #expect(first.counters.first?.maximum == 99)
        #expect(first.counters.first?.minimum == 1)

        seen.removeAll()
        // Two commands committed in one batch and answered in one iteration: one notification with both.
        var answered: [Int?] = []
        d.handle(.counter(name: "HOME", op: .inc, value: nil)) { answered.append($0.jsonObject?["value"] as? Int) }
        d.handle(.counter(name: "HOME", op: .inc, value: nil)) { answered.append($0.jsonObject?["value"] as? Int) }
        try d.step()
        loop.step()
        #expect(answered == [2, 3])
        #expect(seen.map { $0.counters[0].value } == [3])

        _ = d.handle(.status)
        loop.step()
        #expect(seen.count == 1, "a request that changes nothing tells nobody")

        _ = d.handle(.blank(on: true))
        loop.step()
        #expect(seen.last?.blanked == true)

        _ = try d.answer(.scene(name: "clock"))
        loop.step()
        #expect(seen.last?.scene == "clock")
        #expect(seen.last?.sceneKind == "clock")
        #expect(seen.count == 3)
    }

    @Test func aRemovedObserverHearsNothing() throws {
        let (d, loop) = try daemon(tempDir())
        d.startAsKioskd()
        var heard = 0
        let id = d.changes.observe { _ in heard += 1 }
        d.changes.remove(id)
        _ = try d.answer(.counter(name: "AWAY", op: .inc, value: nil))
        loop.step()
        #expect(heard == 0)
        #expect(d.changes.last?.counters[1].value == 2)
    }
}
