import KioskCore
import KioskRender

/// The scene manager's state for moving static content along the pixel orbit.
struct OrbitComposer {
    /// While the orbit moves the scene on screen, the scene draws here (at offset zero) and the
    /// frame is composed from it at the orbit's offset.
    var sceneCanvas: Canvas?
    /// Fires at the orbit's next step (one wake-up per step; none while nothing is moved).
    var timer: TimerID?
    /// The orbit's current offset (changed only when a step falls due).
    var offset = PixelOffset.zero
    /// What the frame shows: the offset, content boxes and background it was composed with.
    var shownOffset = PixelOffset.zero
    var shownBoxes: [Rect] = []
    var shownBackground: Color?
    /// The scene drawn last, and whether it was composed through `sceneCanvas`.
    var lastScene: ObjectIdentifier?
    var lastComposed = false
}

extension SceneManager {
    /// The offset the content on screen is drawn at: zero when the orbit is off or the scene on
    /// screen is not moved.
    public var contentOffset: PixelOffset { orbit.lastComposed ? orbit.shownOffset : .zero }

    /// The scene on screen, when the orbit moves it.
    var orbitingScene: PixelShiftable? {
        guard pixelOrbit != nil else { return nil }
        return current as? PixelShiftable
    }

    /// The orbit was switched on, off or changed: the next frame shows the new state.
    func pixelOrbitChanged() {
        stopOrbit()
        if pixelOrbit == nil { orbit.sceneCanvas = nil }
        guard started else { return }
        updateOrbitTimer()
        setNeedsFrame()
    }

    func stopOrbit() {
        if let t = orbit.timer { loop.cancel(t); orbit.timer = nil }
    }

    /// Keeps one timer armed for the orbit's next step while the scene on screen is moved, and
    /// none otherwise (called whenever the manager reschedules; does nothing when all is set).
    func updateOrbitTimer() {
        guard started, let o = pixelOrbit, orbitingScene != nil else { stopOrbit(); return }
        guard orbit.timer == nil else { return }
        let now = loop.now(.monotonic)
        orbit.offset = o.offset(atNanos: now)
        let next = o.nextStep(afterNanos: now)
        guard next != Int64.max else { return }
        do {
            orbit.timer = try loop.schedule(at: next, clock: .monotonic) { [weak self] _ in
                guard let self else { return }
                self.orbit.timer = nil
                self.updateOrbitTimer()
                if self.orbit.offset != self.orbit.shownOffset { self.setNeedsFrame() }
            }
        } catch {
            // Tried again at the next reschedule (the clock's next second, the next input).
            logger.error("cannot arm the pixel orbit's timer", metadata: ["error": "\(error)"])
        }
    }

    /// Draws the scene on screen into the frame and returns the frame's damage: straight, or —
    /// while the orbit moves it — into its own canvas, composed into the frame at the orbit's
    /// offset. A step damages only where the content was and is (each content box grown by the
    /// step); the place the content left is filled with the scene's background.
    func drawScene(into frame: Canvas, full fullFrame: Bool) -> Damage {
        let scene = current
        let id = ObjectIdentifier(scene)
        var moving = orbitingScene
        if moving != nil, orbit.sceneCanvas?.size != frame.size {
            do {
                orbit.sceneCanvas = try Canvas(size: frame.size)
                // The scene's last frame is not in the new canvas.
                scene.apply(theme: theme)
            } catch {
                logger.error("cannot create the canvas for the pixel orbit; content is not moved",
                             metadata: ["size": "\(frame.size)", "error": "\(error)"])
                orbit.sceneCanvas = nil
                moving = nil
            }
        }
        let composed = moving != nil
        var full = fullFrame
        if orbit.lastScene != id || orbit.lastComposed != composed {
            // The canvas the scene draws into does not hold its last frame: a scene that just
            // appeared repaints anyway; one that stays on screen is asked to.
            if orbit.lastScene == id { scene.apply(theme: theme) }
            full = true
        }
        orbit.lastScene = id
        orbit.lastComposed = composed
        guard let moving, let sceneCanvas = orbit.sceneCanvas else {
            let damage = scene.draw(into: frame)
            return full ? .full(frame.size) : damage
        }

        let sceneDamage = moving.draw(into: sceneCanvas)
        let bounds = Rect(size: frame.size)
        let off = orbit.offset
        let background = moving.shiftBackground
        let boxes = moving.shiftContentBoxes
        var damage = Damage()
        if full || background != orbit.shownBackground || sceneDamage.bounds.contains(bounds) {
            damage.add(bounds)
        } else {
            for r in sceneDamage.rects { damage.add(r.shifted(by: off)) }
            if off != orbit.shownOffset {
                for r in orbit.shownBoxes { damage.add(r.shifted(by: orbit.shownOffset)) }
                for r in boxes { damage.add(r.shifted(by: off)) }
            }
            damage = damage.clipped(to: bounds)
        }
        compose(sceneCanvas, into: frame, at: off, background: background, damage: damage)
        orbit.shownOffset = off
        orbit.shownBoxes = boxes
        orbit.shownBackground = background
        return damage
    }

    /// Puts the scene's canvas into `damage` of the frame at `offset`; what lies beyond the
    /// scene's canvas there is filled with `background`.
    private func compose(_ scene: Canvas, into frame: Canvas, at offset: PixelOffset, background: Color, damage: Damage) {
        guard !damage.isEmpty else { return }
        let placed = Rect(size: scene.size).shifted(by: offset)
        var inside: [Rect] = []
        for r in damage.rects {
            let i = r.intersection(placed)
            for strip in r.subtracting(i) { frame.fill(strip, background) }
            if !i.isEmpty { inside.append(i) }
        }
        guard !inside.isEmpty else { return }
        frame.draw(scene, x: Double(offset.dx), y: Double(offset.dy), clip: Damage(inside, limit: Int.max))
    }
}

extension Rect {
    func shifted(by o: PixelOffset) -> Rect { Rect(x: x + o.dx, y: y + o.dy, width: width, height: height) }

    /// The parts of this rectangle outside `inner` (which lies within it, or is empty): up to
    /// four strips.
    func subtracting(_ inner: Rect) -> [Rect] {
        guard !inner.isEmpty else { return isEmpty ? [] : [self] }
        return [Rect(x: x, y: y, width: width, height: inner.y - y),
                Rect(x: x, y: inner.maxY, width: width, height: maxY - inner.maxY),
                Rect(x: x, y: inner.y, width: inner.x - x, height: inner.height),
                Rect(x: inner.maxX, y: inner.y, width: maxX - inner.maxX, height: inner.height)].filter { !$0.isEmpty }
    }
}
