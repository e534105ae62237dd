import Testing
@testable import KioskCore

@Suite struct GestureTests {
    let th = GestureThresholds(tapMaxDuration: 300_000, tapMaxMovement: 0.03, longPressDuration: 800_000, swipeMinDistance: 0.15)

    /// Feeds a script and collects every gesture, advancing time to each event first.
    func run(_ events: [TouchEvent], _ r: inout GestureRecognizer) -> [Gesture] {
        events.flatMap { r.feed($0) }
    }

    @Test func quickStillTouchIsATap() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.5, y: 0.5, timeUsec: 1_000_000),
            TouchEvent(.motion, slot: 0, x: 0.51, y: 0.49, timeUsec: 1_050_000),
            TouchEvent(.up, slot: 0, x: 0.51, y: 0.49, timeUsec: 1_200_000),
        ], &r)
        #expect(g == [.tap(x: 0.51, y: 0.49)])
    }

    @Test func slowTouchIsNeitherTapNorLongPress() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.5, y: 0.5, timeUsec: 0),
            TouchEvent(.up, slot: 0, x: 0.5, y: 0.5, timeUsec: 500_000),
        ], &r)
        #expect(g.isEmpty)
    }

    @Test func tapThatWandersIsNotATap() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.5, y: 0.5, timeUsec: 0),
            TouchEvent(.motion, slot: 0, x: 0.6, y: 0.5, timeUsec: 50_000),
            TouchEvent(.up, slot: 0, x: 0.5, y: 0.5, timeUsec: 100_000),
        ], &r)
        #expect(g.isEmpty)
    }

    @Test func longPressFiresAtTheDeadlineWhileHeld() {
        var r = GestureRecognizer(thresholds: th)
        #expect(r.nextDeadline() == nil)
        #expect(r.feed(TouchEvent(.down, slot: 3, x: 0.2, y: 0.3, timeUsec: 5_000_000)).isEmpty)
        #expect(r.nextDeadline() == 5_800_000)
        #expect(r.advance(toUsec: 5_799_999).isEmpty)
        #expect(r.advance(toUsec: 5_800_000) == [.longPress(x: 0.2, y: 0.3)])
        #expect(r.nextDeadline() == nil)
        #expect(r.advance(toUsec: 9_000_000).isEmpty)
        #expect(r.feed(TouchEvent(.up, slot: 3, x: 0.2, y: 0.3, timeUsec: 6_000_000)).isEmpty)
    }

    @Test func lateTimerStillGivesLongPressBeforeTheUp() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.2, y: 0.3, timeUsec: 0),
            TouchEvent(.up, slot: 0, x: 0.2, y: 0.3, timeUsec: 1_000_000),
        ], &r)
        #expect(g == [.longPress(x: 0.2, y: 0.3)])
    }

    @Test func movingCancelsTheLongPressDeadline() {
        var r = GestureRecognizer(thresholds: th)
        _ = r.feed(TouchEvent(.down, slot: 0, x: 0.2, y: 0.3, timeUsec: 0))
        _ = r.feed(TouchEvent(.motion, slot: 0, x: 0.3, y: 0.3, timeUsec: 100_000))
        #expect(r.nextDeadline() == nil)
        #expect(r.advance(toUsec: 2_000_000).isEmpty)
    }

    @Test(arguments: [
        (Point(x: 0.8, y: 0.5), Point(x: 0.2, y: 0.55), SwipeDirection.left),
        (Point(x: 0.2, y: 0.5), Point(x: 0.8, y: 0.45), SwipeDirection.right),
        (Point(x: 0.5, y: 0.8), Point(x: 0.45, y: 0.3), SwipeDirection.up),
        (Point(x: 0.5, y: 0.2), Point(x: 0.55, y: 0.9), SwipeDirection.down),
    ])
    func swipesInEveryDirection(from: Point, to: Point, direction: SwipeDirection) {
        var r = GestureRecognizer(thresholds: th)
        let mid = Point(x: (from.x + to.x) / 2, y: (from.y + to.y) / 2)
        let g = run([
            TouchEvent(.down, slot: 0, x: from.x, y: from.y, timeUsec: 0),
            TouchEvent(.motion, slot: 0, x: mid.x, y: mid.y, timeUsec: 60_000),
            TouchEvent(.motion, slot: 0, x: to.x, y: to.y, timeUsec: 120_000),
            TouchEvent(.up, slot: 0, x: to.x, y: to.y, timeUsec: 150_000),
        ], &r)
        #expect(g == [.swipe(direction, x: from.x, y: from.y)])
    }

    @Test func shortDragIsNotASwipe() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.5, y: 0.5, timeUsec: 0),
            TouchEvent(.motion, slot: 0, x: 0.6, y: 0.5, timeUsec: 60_000),
            TouchEvent(.up, slot: 0, x: 0.6, y: 0.5, timeUsec: 120_000),
        ], &r)
        #expect(g.isEmpty)
    }

    @Test func secondFingerCancelsUntilAllFingersAreUp() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.2, y: 0.5, timeUsec: 0),
            TouchEvent(.down, slot: 1, x: 0.6, y: 0.5, timeUsec: 10_000),
            TouchEvent(.motion, slot: 0, x: 0.9, y: 0.5, timeUsec: 50_000),
            TouchEvent(.up, slot: 1, x: 0.6, y: 0.5, timeUsec: 60_000),
            TouchEvent(.up, slot: 0, x: 0.9, y: 0.5, timeUsec: 100_000),
        ], &r)
        #expect(g.isEmpty)
        #expect(r.nextDeadline() == nil)
        // Finger 0 still down when finger 1 lifts: no new gesture begins until both are up.
        let g2 = run([
            TouchEvent(.down, slot: 0, x: 0.2, y: 0.5, timeUsec: 1_000_000),
            TouchEvent(.down, slot: 1, x: 0.6, y: 0.5, timeUsec: 1_010_000),
            TouchEvent(.up, slot: 1, x: 0.6, y: 0.5, timeUsec: 1_020_000),
        ], &r)
        #expect(g2.isEmpty)
        #expect(r.nextDeadline() == nil)
        #expect(r.advance(toUsec: 5_000_000).isEmpty)
        #expect(r.feed(TouchEvent(.up, slot: 0, x: 0.2, y: 0.5, timeUsec: 5_000_000)).isEmpty)
        // After all fingers are up, taps work again.
        let g3 = run([
            TouchEvent(.down, slot: 4, x: 0.3, y: 0.3, timeUsec: 6_000_000),
            TouchEvent(.up, slot: 4, x: 0.3, y: 0.3, timeUsec: 6_100_000),
        ], &r)
        #expect(g3 == [.tap(x: 0.3, y: 0.3)])
    }

    @Test func cancelledTouchMakesNothing() {
        var r = GestureRecognizer(thresholds: th)
        let g = run([
            TouchEvent(.down, slot: 0, x: 0.2, y: 0.5, timeUsec: 0),
            TouchEvent(.motion, slot: 0, x: 0.9, y: 0.5, timeUsec: 50_000),
            TouchEvent(.cancel, slot: 0, x: 0.9, y: 0.5, timeUsec: 60_000),
        ], &r)
        #expect(g.isEmpty)
        #expect(r.nextDeadline() == nil)
    }

    @Test func thresholdValidationNamesTheField() throws {
        try GestureThresholds().validate()
        #expect(throws: KioskError.config("longPressDuration (200000 µs) must be longer than tapMaxDuration (300000 µs)")) {
            try GestureThresholds(longPressDuration: 200_000).validate()
        }
        #expect(throws: KioskError.config("swipeMinDistance (0.02) must be larger than tapMaxMovement (0.03)")) {
            try GestureThresholds(swipeMinDistance: 0.02).validate()
        }
        #expect(throws: KioskError.config("tapMaxMovement must be between 0 and 1 (a fraction of the screen), got nan")) {
            try GestureThresholds(tapMaxMovement: .nan).validate()
        }
        #expect(throws: KioskError.config("tapMaxDuration must be greater than 0")) {
            try GestureThresholds(tapMaxDuration: 0).validate()
        }
    }
}
