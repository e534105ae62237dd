import Foundation
import KioskConfig
import KioskControl
import KioskCore
@testable import KioskDaemon
import KioskPosix
@testable import KioskWeb
import Testing

/// `[web] pair_gesture`: a finger held on a screen corner opens an operator code.
@Suite(.serialized) struct PairGestureTests {
    static let second: UInt64 = 1_000_000

    @Test func aHoldOnTheCornerOpensOnceAndNothingElseDoes() {
        var g = PairGesture(settings: PairGestureSettings(corner: .topRight, holdUsec: 3 * Self.second))
        var r = (swallow: false, open: false)
        var fired = false
        // Elsewhere: passed on, nothing armed.
        r = g.feed(TouchEvent(.down, slot: 0, x: 0.5, y: 0.05, timeUsec: 0)); #expect(r.swallow == false && r.open == false)
        #expect(g.nextDeadline() == nil)
        r = g.feed(TouchEvent(.up, slot: 0, x: 0.5, y: 0.05, timeUsec: 5 * Self.second)); #expect(r.swallow == false && r.open == false)
        // On the corner: taken, and due three seconds later.
        r = g.feed(TouchEvent(.down, slot: 0, x: 0.97, y: 0.03, timeUsec: 10 * Self.second)); #expect(r.swallow == true && r.open == false)
        #expect(g.nextDeadline() == 13 * Self.second)
        fired = g.advance(toUsec: 13 * Self.second - 1); #expect(!fired)
        fired = g.advance(toUsec: 13 * Self.second); #expect(fired)
        fired = g.advance(toUsec: 20 * Self.second); #expect(!fired, "once per hold")
        r = g.feed(TouchEvent(.up, slot: 0, x: 0.97, y: 0.03, timeUsec: 21 * Self.second)); #expect(r.swallow == true && r.open == false)
        // Lifted too early: nothing.
        r = g.feed(TouchEvent(.down, slot: 0, x: 0.99, y: 0.0, timeUsec: 30 * Self.second)); #expect(r.swallow == true && r.open == false)
        r = g.feed(TouchEvent(.up, slot: 0, x: 0.99, y: 0.0, timeUsec: 32 * Self.second)); #expect(r.swallow == true && r.open == false)
        #expect(g.nextDeadline() == nil)
        // Slid out of the corner: nothing.
        _ = g.feed(TouchEvent(.down, slot: 0, x: 0.95, y: 0.05, timeUsec: 40 * Self.second))
        r = g.feed(TouchEvent(.motion, slot: 0, x: 0.5, y: 0.5, timeUsec: 41 * Self.second)); #expect(r.swallow == true && r.open == false)
        fired = g.advance(toUsec: 50 * Self.second); #expect(!fired)
        // A hold whose deadline passed before the next event counts at that event.
        _ = g.feed(TouchEvent(.up, slot: 0, x: 0.5, y: 0.5, timeUsec: 51 * Self.second))
        _ = g.feed(TouchEvent(.down, slot: 0, x: 0.95, y: 0.05, timeUsec: 60 * Self.second))
        r = g.feed(TouchEvent(.up, slot: 0, x: 0.95, y: 0.05, timeUsec: 64 * Self.second)); #expect(r.swallow == true && r.open == true)
    }

    @Test func configErrorsNameFileLineAndKey() throws {
        let dir = shortDir()
        func load(_ web: String) -> String? {
            let p = "\(dir)/k.toml"
            try! "[display]\nbackend = \"headless\"\n[scene.clock]\nkind = \"clock\"\n[web]\nlisten = \"127.0.0.1:8080\"\n\(web)\n"
                .write(toFile: p, atomically: false, encoding: .utf8)
            do { _ = try DaemonConfig.load(path: p, environment: [:]); return nil } catch let e as KioskError { return e.message } catch { return "\(error)" }
        }
        #expect(load(#"pair_gesture = "swipe-left""#)?.contains(#"k.toml:7: key 'web.pair_gesture': unknown gesture "swipe-left"; expected one of "hold-top-left", "hold-top-right", "hold-bottom-left", "hold-bottom-right""#) == true)
        #expect(load("pair_gesture = \"hold-top-left\"\npair_gesture_seconds = 0")?.contains("k.toml:8: key 'web.pair_gesture_seconds': 0 is out of range, expected 1…30") == true)
        #expect(load("pair_gesture_seconds = 5")?.contains("k.toml:7: key 'web.pair_gesture_seconds': set without pair_gesture") == true)
        #expect(load("pair_gesture = \"hold-bottom-left\"\npair_gesture_seconds = 5") == nil)
    }

    @Test func touchesHeldOnTheCornerThroughTheManagerShowAnOperatorCode() async throws {
        let k = WebKiosk()
        try await k.start(extra: "pair_gesture = \"hold-bottom-right\"")
        // The loop thread starts the daemon (and its input filter) on its own: wait for its first frame.
        #expect(await eventually(10) { k.frameCount > 0 })
        #expect(k.onLoop { $0.manager.current.name } == "score")
        _ = try await k.ctl(.counter(name: "AWAY", op: .set, value: 5))
        // Touch times three seconds apart (the touches' own clock): the hold completes at the motion.
        let shown = k.onLoop { d -> String? in
            let t0 = d.manager.time.now().monotonicUsec
            // A quick tap on the corner: not the gesture, and not a point for AWAY either.
            d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.95, y: 0.95, timeUsec: t0)))
            d.manager.input(.touch(TouchEvent(.up, slot: 0, x: 0.95, y: 0.95, timeUsec: t0 + 50_000)))
            let t1 = t0 + Self.second
            d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.95, y: 0.95, timeUsec: t1)))
            let before = d.manager.pairingPrompt
            d.manager.input(.touch(TouchEvent(.motion, slot: 0, x: 0.955, y: 0.95, timeUsec: t1 + 3 * Self.second)))
            d.manager.input(.touch(TouchEvent(.up, slot: 0, x: 0.955, y: 0.95, timeUsec: t1 + 3 * Self.second + 1)))
            return before == nil ? d.manager.pairingPrompt?.code : "shown too early"
        }
        let code = try #require(shown)
        #expect(code.count == 6, "\(code)")
        // The corner's touches were the kiosk's: the counter scene saw neither the tap (+1) nor the long press (reset).
        #expect(try await k.ctl(.counter(name: "AWAY", op: .get, value: nil)).decode(CounterAnswer.self).value == 5)
        let r = try await http(k.port, "POST", "/api/pair", body: #"{"code": "\#(code)", "name": "held the corner"}"#)
        #expect(r.status == 200)
        #expect(r.text.contains(#""role":"operator""#))
        await k.stop()
    }

    @Test func aFingerHeldStillWithoutFurtherEventsOpensTheCodeByTheTimer() async throws {
        let k = WebKiosk()
        try await k.start(extra: "pair_gesture = \"hold-bottom-left\"\npair_gesture_seconds = 1")
        #expect(await eventually(10) { k.frameCount > 0 })
        k.onLoop { d in
            d.manager.input(.touch(TouchEvent(.down, slot: 0, x: 0.02, y: 0.98, timeUsec: d.manager.time.now().monotonicUsec)))
        }
        #expect(k.onLoop { $0.manager.pairingPrompt } == nil)
        #expect(await eventually(5) { k.onLoop { $0.manager.pairingPrompt } != nil }, "the hold's timer opens the code")
        await k.stop()
    }
}
