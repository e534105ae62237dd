import KioskCore
import KioskRender

/// The paint scene's finished strokes as pixels: an offscreen canvas of the screen's size,
/// rebuilt from the whole history only when invalid, plus the layer pixels each of the latest
/// finished strokes covered from before it was drawn, so that undoing it puts them back instead
/// of rebuilding. At most `maxPatches` strokes and one screen's worth of pixels are kept; the
/// oldest go first.
final class PaintLayerCache {
    static let maxPatches = 64

    /// The layer (nil until first built).
    private(set) var canvas: Canvas?
    /// Whether `canvas` holds exactly the finished strokes on the background.
    private(set) var isValid = false
    /// How many times the layer was rebuilt from the whole history.
    private(set) var rebuilds = 0

    private struct UndoPatch { let index: Int; let rect: Rect; let pixels: Canvas? }
    private var patches: [UndoPatch] = []
    private var patchArea = 0

    /// The layer no longer matches the strokes (size, background or history changed).
    func invalidate() { isValid = false }

    /// The layer for a screen of `size`: when invalid it is cleared to `background` and every
    /// stroke is drawn onto it with `draw`, in order.
    func layer(size: Size, background: Color, strokes: [Stroke], draw: (Stroke, Canvas) -> Void) throws -> Canvas {
        if canvas == nil || canvas?.size != size { canvas = try Canvas(size: size); isValid = false }
        let l = canvas!
        if !isValid {
            dropPatches()
            l.clear(background)
            for s in strokes { draw(s, l) }
            isValid = true
            rebuilds += 1
        }
        return l
    }

    /// Draws stroke `index` (just finished or redone, within `bounds`) onto a valid layer with
    /// `draw`, first keeping the layer pixels it will cover. An invalid layer is left alone: the
    /// next rebuild draws the stroke.
    func add(index: Int, bounds: Rect, screenArea: Int, draw: (Canvas) -> Void) {
        guard isValid, let layer = canvas else { return }
        let r = bounds.intersection(Rect(size: layer.size))
        var pixels: Canvas?
        if !r.isEmpty, let c = try? Canvas(size: Size(width: r.width, height: r.height)) {
            c.draw(layer, x: Double(-r.x), y: Double(-r.y))
            pixels = c
        }
        if r.isEmpty || pixels != nil {
            patches.append(UndoPatch(index: index, rect: r, pixels: pixels))
            patchArea += r.area
            while patches.count > Self.maxPatches || (patchArea > screenArea && patches.count > 1) {
                patchArea -= patches.removeFirst().rect.area
            }
        }
        draw(layer)
    }

    /// Stroke `index` was undone: puts back the layer pixels it covered and returns where, or —
    /// when they were not kept — invalidates the layer and returns nil (rebuild once).
    func undo(index: Int) -> Rect? {
        if isValid, let layer = canvas, let patch = patches.last, patch.index == index {
            patches.removeLast()
            patchArea -= patch.rect.area
            if let pixels = patch.pixels { layer.draw(pixels, x: Double(patch.rect.x), y: Double(patch.rect.y)) }
            return patch.rect
        }
        isValid = false
        return nil
    }

    /// Every stroke was cleared: an existing layer becomes the bare background (and valid).
    func clear(to background: Color) {
        dropPatches()
        if let canvas { canvas.clear(background); isValid = true }
    }

    private func dropPatches() {
        patches.removeAll()
        patchArea = 0
    }
}
