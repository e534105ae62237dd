import KioskCore
import KioskRender

/// Input: scene-switch keys and gestures, the mouse cursor as a finger, then the scene on screen.
extension SceneManager {
    // MARK: input

    /// Routes one input event: scene-switch keys and gestures first, then the scene on screen.
    public func input(_ event: InputEvent) {
        if let f = inputFilter, f(event) { return }
        switch event {
        case .pointerMotion(let dx, let dy, let t): moveCursor(dx: dx, dy: dy, timeUsec: t); return
        case .pointerButton(let pressed, let t): clickCursor(pressed: pressed, timeUsec: t); return
        default: break
        }
        let now = time.now()
        if case .key(let code, .pressed, _) = event {
            if switching.nextKeys.contains(code) { next(); return }
            if switching.previousKeys.contains(code) { previous(); return }
        }
        var changed = current.handle(event, now: now)
        if case .touch(let t) = event {
            changed = route(gestureRecognizer.feed(t), now: now) || changed
            armGestureTimer()
        }
        if changed { setNeedsFrame() }
        reschedule()
    }

    private func moveCursor(dx: Double, dy: Double, timeUsec: UInt64) {
        guard showsCursor, let size = frameSize else { return }
        let p = cursor.move(dx: dx, dy: dy, on: size)
        setNeedsFrame()
        if cursor.isDown {
            input(.touch(TouchEvent(.motion, slot: Self.cursorSlot, x: p.x / Double(size.width), y: p.y / Double(size.height), timeUsec: timeUsec)))
            input(.touchFrame(timeUsec: timeUsec))
        }
    }

    private func clickCursor(pressed: Bool, timeUsec: UInt64) {
        guard showsCursor, let size = frameSize, let p = cursor.press(pressed, on: size) else { return }
        input(.touch(TouchEvent(pressed ? .down : .up, slot: Self.cursorSlot, x: p.x / Double(size.width), y: p.y / Double(size.height), timeUsec: timeUsec)))
        input(.touchFrame(timeUsec: timeUsec))
    }

    /// Gives recognised gestures to the scene (an edge swipe switches scenes when configured).
    private func route(_ gestures: [Gesture], now: WallTime) -> Bool {
        var changed = false
        for gesture in gestures {
            if switching.edgeSwipe, case .swipe(let dir, let x, _) = gesture, dir == .left || dir == .right,
               x < 0.1 || x > 0.9 {
                dir == .left ? next() : previous()
                continue
            }
            changed = current.handle(.gesture(gesture), now: now) || changed
        }
        return changed
    }

    /// Arms a timer for a pending long press (touch times are CLOCK_MONOTONIC microseconds).
    private func armGestureTimer() {
        if let t = gestureTimer { loop.cancel(t); gestureTimer = nil }
        guard let due = gestureRecognizer.nextDeadline() else { return }
        gestureTimer = try? loop.schedule(at: Int64(due) * 1000, clock: .monotonic) { [weak self] _ in
            guard let self else { return }
            self.gestureTimer = nil
            let now = self.time.now()
            if self.route(self.gestureRecognizer.advance(toUsec: now.monotonicUsec), now: now) { self.setNeedsFrame() }
            self.reschedule()
        }
    }
}
