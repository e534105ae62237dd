import KioskCore
import KioskRender
import Logging

/// Time: the one timer for the scene's next deadline (re-armed after a backoff when arming
/// fails), ticking, and the scene rotation.
extension SceneManager {
    // MARK: time

    /// Arms one timer for the scene's next deadline (replacing the previous one), or none.
    /// When arming fails the scene is brought up to date again after a backoff (50 ms doubling
    /// to 1 s) until arming succeeds: the scene never stops ticking.
    public func reschedule() {
        guard started else { return }
        updateOrbitTimer()
        let now = time.now()
        // The armed deadline has come but its timer has not run yet (the loop runs the other
        // work of this iteration first: a posted batch of committed values, an MQTT packet).
        // Leave it: it ticks the scene and re-arms. Re-armed now for the next deadline, the
        // scene would skip this one (the clock would miss a second: a 2 s gap between frames).
        if let armed = armedDeadline, deadlineTimer != nil, armed.monotonicNs(from: now) <= now.monotonicNs { return }
        let d = current.nextDeadline(now: now)
        if d == armedDeadline, deadlineTimer != nil { return }
        if let t = deadlineTimer { loop.cancel(t); deadlineTimer = nil }
        armedDeadline = d
        guard let d else { return }
        do {
            let handler: (TimerFire) -> Void = { [weak self] fire in
                guard let self else { return }
                self.deadlineTimer = nil
                self.armedDeadline = nil
                if fire == .clockChanged { self.logger.notice("wall clock was set; recomputing the next tick") }
                self.tick()
            }
            if let fault = armFault, let e = fault() { throw e }
            switch d {
            case .realtime(let r): deadlineTimer = try loop.schedule(at: r, clock: .realtime, handler)
            case .monotonic(let m): deadlineTimer = try loop.schedule(at: m, clock: .monotonic, handler)
            }
            if armRetryDelayNs != Self.armRetryFirstNs {
                logger.notice("the scene timer is armed again")
                armRetryDelayNs = Self.armRetryFirstNs
            }
        } catch {
            retryArming(after: error)
        }
    }

    static let armRetryFirstNs: Int64 = 50_000_000
    static let armRetryMaxNs: Int64 = 1_000_000_000

    private func retryArming(after error: Error) {
        guard armRetryTimer == nil else { return }
        let delay = armRetryDelayNs
        logger.error("cannot arm the scene timer; trying again", metadata: ["error": "\(error)", "retry_ms": "\(delay / 1_000_000)"])
        armRetryDelayNs = min(delay * 2, Self.armRetryMaxNs)
        armRetryTimer = try? loop.schedule(after: delay) { [weak self] _ in
            guard let self else { return }
            self.armRetryTimer = nil
            self.tick()
        }
    }

    /// Brings the scene on screen up to now (timer fired, clock changed) and draws if it changed.
    public func tick() {
        if current.update(now: time.now()) { setNeedsFrame() }
        reschedule()
    }

    func armRotation() {
        if let t = rotationTimer { loop.cancel(t); rotationTimer = nil }
        guard switching.rotateSeconds > 0, scenes.count > 1, started else { return }
        rotationTimer = try? loop.schedule(after: Int64(switching.rotateSeconds * 1e9)) { [weak self] _ in
            self?.rotationTimer = nil
            self?.next()
        }
    }
}
