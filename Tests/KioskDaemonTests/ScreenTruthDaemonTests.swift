import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
@testable import KioskMQTTComponent
import KioskDaemonTesting
import KioskMQTT
import KioskRender
import KioskState
import KioskTesting
import Testing

/// A headless display that says what reached its panel as the test sets it (`shown`), as a DRM
/// display does from the kernel's flip events.
private final class ReportingDisplay: DisplayOutput {
    let inner: HeadlessDisplay
    var shown: ShownFrames?
    init(_ inner: HeadlessDisplay) { self.inner = inner }
    var displayDescription: String { inner.displayDescription }
    var logicalSize: Size? { inner.logicalSize }
    var rotation: Rotation { inner.rotation }
    var canPresent: Bool { inner.canPresent }
    var onEvent: ((DisplayEvent) -> Void)? {
        get { inner.onEvent }
        set { inner.onEvent = newValue }
    }
    func lendFrame(repaintsEverything: Bool) throws -> FrameTarget? { try inner.lendFrame(repaintsEverything: repaintsEverything) }
    func presentLent(damage: Damage) throws { try inner.presentLent(damage: damage) }
    func setBlanked(_ blanked: Bool) throws { try inner.setBlanked(blanked) }
    var isBlanked: Bool { inner.isBlanked }
    func shutdown() { inner.shutdown() }
    var shownFrames: ShownFrames? { shown }
}

/// "Screen showing" as observers (MQTT, Home Assistant) hear it, on virtual time: a frame that
/// waits for the kernel turns it off 3 s later with nothing else happening; blanked is off;
/// a frame completing turns it on again. And `kioskctl outputs` says the same.
@Suite struct ScreenTruthDaemonTests {
    @Test func observersHearTheScreenGoDarkWithinThreeSeconds() throws {
        let dir = tempDir()
        // A counter draws nothing by itself: only the recheck timer can tell of the dark screen.
        let path = write("state_dir = \"\(dir)/state\"\n[display]\nbackend = \"headless\"\n[scene.score]\nkind = \"counter\"\n", dir)
        let loop = ManualEventLoop(epochSeconds: 1_700_000_000)
        let display = ReportingDisplay(try HeadlessDisplay(size: Size(width: 64, height: 48)))
        let config = try DaemonConfig.load(path: path, environment: [:])
        let d = try Daemon(config: config, display: display, input: nil, state: MemoryStateStore(), loop: loop, time: loop, logger: quietLogger)
        d.startAsKioskd()
        var heard: [Bool] = []
        d.changes.observe { s in
            if let v = s.screens?.first?.showing, heard.last != v { heard.append(v) }
        }
        let realtime = loop.now(.realtime)
        display.shown = ShownFrames(lastRealtimeNs: realtime, lastMinute: 1)
        d.changes.noteChange()
        loop.step()
        #expect(heard == [true])
        #expect(d.kioskState().screens == [.init(name: "output-1", showing: true, notShowing: nil)])

        // A frame handed to the kernel that never completes: off 3 s later, told without polling.
        let queued = loop.now(.monotonic)
        display.shown = ShownFrames(lastRealtimeNs: realtime, lastMinute: 1, pendingSinceNs: queued)
        d.changes.noteChange()
        loop.step()
        loop.advance(by: ScreenShowing.staleNs - 1_000_000)
        #expect(heard == [true], "not yet: the frame may still complete")
        loop.advance(by: 1_000_000)
        loop.step()
        #expect(heard == [true, false], "off 3 s after the frame was handed over")
        let answer = try #require(d.status().outputs?.first)
        #expect(answer.showing == false && answer.notShowing == "no page flip completed within 3 s")
        #expect(answer.connected == true && answer.mode == "64x48")

        // Frames complete again: on.
        display.shown = ShownFrames(lastRealtimeNs: loop.now(.realtime), lastMinute: 2)
        d.changes.noteChange()
        loop.step()
        #expect(heard == [true, false, true])

        // Blanked: off, with the retained MQTT topic saying so.
        _ = d.handle(.blank(on: true))
        loop.step()
        #expect(heard == [true, false, true, false])
        let topics = d.kioskState().showingPublications(KioskTopics(id: "hall"))
        #expect(topics.map(\.topic) == ["kioskd/hall/output/output-1/showing"])
        #expect(topics.map { String(decoding: $0.payload, as: UTF8.self) } == ["OFF"])
        #expect(d.status().outputs?.first?.notShowing == "blanked")
        d.shutdown()
    }
}
