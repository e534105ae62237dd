import KioskCore
import KioskRender
import Logging

/// Something drawn over the scene's frame (the cursor, the state warning, the pairing prompt). It
/// keeps the frame pixels it covers and puts them back before the scene draws again, so scenes
/// never see it.
protocol FrameOverlay: AnyObject {
    /// The pixels kept are stale: the frame changed size (`size` is the new one), or the next
    /// frame is drawn where this overlay was not drawn (another buffer, or over everything).
    func resize(to size: Size)
    /// Puts back the pixels it covered; returns where (nil: it was not drawn).
    func remove(from canvas: Canvas) -> Rect?
    /// Keeps the pixels under it, then draws itself; returns where (nil: nothing to show).
    func draw(on canvas: Canvas, theme: Theme) -> Rect?
}

/// What became of a frame the composer was asked for.
enum ComposedFrame {
    /// The display lent nothing to draw into (cannot take a frame now, or no memory: logged).
    case noTarget
    /// Drawn, and nothing changed: nothing was shown.
    case unchanged
    /// The display refused the frame (logged): the next one must send everything.
    case failed
    /// Shown, with this damage.
    case presented(Damage)
}

/// Draws the frames of one display: takes the place the display lends for the next frame
/// (`DisplayOutput.lendFrame`), takes the overlays off, lets the scene draw (only its changes, or
/// everything when the target missed frames), puts the overlays back on top and presents the
/// damage. It keeps the canvases on the display's buffers and the one that holds the frame on
/// screen (screenshots). Runs on the event loop's thread.
final class FrameComposer {
    let display: DisplayOutput
    /// Drawn over the scene in this order (and taken off in the reverse order).
    let overlays: [FrameOverlay]
    private let logger: Logger
    /// Canvases on the pixels the display lent, by address (its buffers cycle through two or three).
    private var canvases: [(base: UnsafeMutableRawPointer, canvas: Canvas)] = []
    /// The canvas holding the frame on screen (the latest one presented); nil before the first
    /// frame, and after the display's buffers may have gone (a new size, the output inactive).
    private(set) var shown: Canvas?
    /// Frames that repaint everything drawn straight into the buffer the display shows.
    private(set) var directFrames: UInt64 = 0
    /// Partial frames drawn in place in the buffer the display shows.
    private(set) var inPlaceFrames: UInt64 = 0
    /// The display lent a copy of the frame (a frame-sized canvas besides its buffers) since
    /// the size last changed.
    private(set) var lentCopy = false
    /// Monotonic time of the latest present.
    private(set) var lastPresentNs: Int64 = 0
    /// A lent target was given back unshown: what it holds is not known, so the next frame
    /// repaints everything.
    private var abandoned = false

    init(display: DisplayOutput, overlays: [FrameOverlay], logger: Logger) {
        self.display = display
        self.overlays = overlays
        self.logger = logger
    }

    /// The display's buffers may be gone (it became inactive, or changed size: `size`, nil for
    /// none): the canvases on them are dropped; at a new size the overlays' kept pixels too.
    func displayChanged(size: Size?, sizeChanged: Bool) {
        canvases.removeAll()
        shown = nil
        guard sizeChanged else { return }
        lentCopy = false
        if let size { for o in overlays { o.resize(to: size) } }
    }

    /// Draws a frame of `size` and presents it. `full`: everything is damaged (the scene was
    /// laid out or changed theme). `repaintsEverything`: the scene's next draw covers every pixel
    /// without reading them (the display may lend the buffer it shows next). `draw` lets the scene
    /// draw into the canvas (everything when its second argument is true) and returns its damage.
    /// When the target missed frames, `scene` is laid out first so that it repaints everything.
    func render(size: Size, full: Bool, repaintsEverything: Bool, scene: Scene, theme: Theme,
                draw: (Canvas, Bool) -> Damage) -> ComposedFrame {
        let target: FrameTarget
        do {
            guard let lent = try display.lendFrame(repaintsEverything: repaintsEverything) else { return .noTarget }
            target = lent
        } catch {
            logger.error("cannot get a frame to draw into", metadata: ["display": "\(display.displayDescription)", "error": "\(error)"])
            return .noTarget
        }
        guard target.pixels.size == size, let canvas = canvas(on: target.pixels) else {
            if target.pixels.size != size {
                logger.error("the display lent a frame of another size", metadata: ["display": "\(display.displayDescription)",
                                                                                    "lent": "\(target.pixels.size)", "size": "\(size)"])
            }
            giveBack()
            return .noTarget
        }
        if target.isCopy { lentCopy = true }
        // The target misses frames that went elsewhere: the scene repaints it completely (laid
        // out again unless it repaints everything anyway), and the overlays' kept pixels belong
        // to another buffer. A frame drawn over everything needs nothing put back either.
        let fresh = !target.missed.isEmpty || abandoned
        abandoned = false
        var damage = Damage()
        if fresh || repaintsEverything {
            for o in overlays { o.resize(to: size) }
        } else {
            for o in overlays.reversed() { if let r = o.remove(from: canvas) { damage.add(r) } }
        }
        if fresh && !repaintsEverything { scene.layout(size: size) }
        let drawn = draw(canvas, full || fresh)
        if full || fresh || repaintsEverything { damage = .full(size) } else { damage.formUnion(drawn) }
        for o in overlays { if let r = o.draw(on: canvas, theme: theme) { damage.add(r) } }
        damage = damage.clipped(to: Rect(size: size))
        canvas.flush()
        do {
            if !damage.isEmpty { lastPresentNs = nowNanos(.monotonic) }
            try display.presentLent(damage: damage)
        } catch {
            logger.error("present failed", metadata: ["display": "\(display.displayDescription)", "error": "\(error)"])
            shown = nil
            return .failed
        }
        guard !damage.isEmpty else { return .unchanged }
        shown = canvas
        if !target.isCopy {
            if repaintsEverything { directFrames += 1 } else { inPlaceFrames += 1 }
        }
        return .presented(damage)
    }

    /// Gives the lent target back unshown.
    private func giveBack() {
        abandoned = true
        do { try display.presentLent(damage: Damage()) } catch {
            logger.error("cannot give the lent frame back", metadata: ["display": "\(display.displayDescription)", "error": "\(error)"])
        }
    }

    /// A canvas on the lent `pixels` (kept by address); nil when cairo cannot wrap them (logged).
    private func canvas(on pixels: PixelBuffer) -> Canvas? {
        if let c = canvases.first(where: { $0.base == pixels.base }), c.canvas.size == pixels.size, c.canvas.pixels.stride == pixels.stride {
            return c.canvas
        }
        do {
            let c = try Canvas(wrapping: pixels)
            canvases.removeAll { $0.base == pixels.base }
            if canvases.count >= 4 { canvases.removeFirst() }
            canvases.append((pixels.base, c))
            return c
        } catch {
            logger.error("cannot draw into the display's buffer", metadata: ["size": "\(pixels.size)", "error": "\(error)"])
            return nil
        }
    }
}
