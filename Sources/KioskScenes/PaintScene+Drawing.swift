import FoundationEssentials
import KioskCore
import KioskRender

/// Drawing the paint scene: live strokes straight onto the screen, finished ones through the
/// cached layer, the toolbar and the colour picker.
extension PaintScene {
    // MARK: drawing

    private func bounds(of s: Stroke) -> Rect {
        SmoothCurve.bounds(s.points, from: 0, to: s.points.count - 1, width: s.width)
    }

    /// Strokes a whole stroke: a dot for one point, else the smooth curve through every point.
    func stroke(_ s: Stroke, on canvas: Canvas) {
        canvas.strokePath(s.points, width: s.width, s.color, smooth: true)
        strokePathsDrawn += 1
    }

    /// Draws `strokes[index]` (just finished or redone) onto the layer (keeping the pixels it
    /// covers for undo) and recomposites its bounds.
    func addToLayer(_ index: Int) {
        let s = painting.strokes[index]
        let b = bounds(of: s)
        recomposite.add(b.intersection(paintArea))
        layer.add(index: index, bounds: b, screenArea: size.area) { stroke(s, on: $0) }
    }

    /// The finished-stroke layer, rebuilt from the whole history only when invalid.
    func cachedLayer() throws -> Canvas {
        try layer.layer(size: size, background: background, strokes: painting.strokes) { stroke($0, on: $1) }
    }

    /// The rectangles strokes may be drawn in on screen: the paint area minus the open picker.
    private var paintRects: [Rect] {
        let a = paintArea
        guard pickerOpen else { return [a] }
        let f = picker.frame.intersection(a)
        guard !f.isEmpty else { return [a] }
        return [Rect(x: a.x, y: a.y, width: a.width, height: f.y - a.y),
                Rect(x: a.x, y: f.maxY, width: a.width, height: a.maxY - f.maxY),
                Rect(x: a.x, y: f.y, width: f.x - a.x, height: f.height),
                Rect(x: f.maxX, y: f.y, width: a.maxX - f.maxX, height: f.height)].filter { !$0.isEmpty }
    }

    private func clip(_ r: Rect) -> Damage {
        Damage(paintRects.map { $0.intersection(r) }.filter { !$0.isEmpty }, limit: 8)
    }

    /// Repaints `region` as a full redraw would: the layer's pixels, then every unfinished
    /// stroke that reaches the region, in the order they started. Of each stroke only the
    /// segments that reach the region are drawn, by `PaintBrush` (the round brush laid along the
    /// same curve; each segment's pixels do not depend on the region, so regions drawn in
    /// different frames meet without seams). A finished stroke is composited from the layer,
    /// where cairo stroked it whole, so once a finger lifts the pixels are exactly those of a full
    /// redraw.
    private func recompose(_ region: Rect, layer: Canvas, on canvas: Canvas) {
        let c = clip(region)
        guard !c.isEmpty else { return }
        let dst = canvas.pixels, src = layer.pixels
        for r in c.rects { blit(src, into: dst, rect: r, rotation: .r0) }
        for slot in painting.activeOrder {
            guard let s = painting.active[slot] else { continue }
            let pts = s.points
            if pts.count == 1 {
                if SmoothCurve.bounds(pts, from: 0, to: 0, width: s.width).intersects(region) {
                    for r in c.rects { brush.draw(pts, segments: [], width: s.width, color: s.color, clip: r, into: dst) }
                    strokePathsDrawn += 1
                }
                continue
            }
            let sb = segmentBounds(slot: slot, s)
            var drawn = false
            for r in c.rects {
                let segments = sb.indices.filter { sb[$0].intersects(r) }
                guard !segments.isEmpty else { continue }
                brush.draw(pts, segments: segments, width: s.width, color: s.color, clip: r, into: dst)
                drawn = true
            }
            if drawn { strokePathsDrawn += 1 }
        }
        for r in c.rects { canvas.markDirty(r) }
    }

    /// Bounds of each segment of an unfinished stroke, kept up to date as points arrive: a new
    /// point changes the last two segments (the curve's tangent at the old end point).
    private func segmentBounds(slot: Int, _ s: Stroke) -> [Rect] {
        var sb = liveSegments[slot] ?? []
        let n = s.points.count - 1          // segments
        if sb.count > n { sb.removeAll() }
        let firstStale = max(0, min(sb.count, n) - 2)
        sb.removeSubrange(firstStale...)
        for i in firstStale..<max(n, firstStale) { sb.append(SmoothCurve.bounds(s.points, from: i, to: i + 1, width: s.width)) }
        liveSegments[slot] = sb
        return sb
    }

    /// Where the newest points of a stroke changed the picture: its last segments as they are
    /// now, and as they were drawn before (the old last segment was bent by the new point).
    private func tailRegion(slot: Int, from: Int, _ s: Stroke) -> Rect {
        let pts = s.points
        let lo = max(from - 2, 0), hi = pts.count - 1
        var r = SmoothCurve.bounds(pts, from: lo, to: hi, width: s.width)
        if let old = drawnTail[slot] { r = r.union(old) }
        drawnTail[slot] = SmoothCurve.bounds(pts, from: max(hi - 1, 0), to: hi, width: s.width)
        return r
    }

    public func draw(into canvas: Canvas) -> Damage {
        guard size.width > 0, canvas.size == size, let layer = try? cachedLayer() else { return Damage() }
        var damage = Damage()
        if needsFull {
            needsFull = false
            recomposite = Damage()
            pendingFrom.removeAll()
            recompose(paintArea, layer: layer, on: canvas)
            toolbar.invalidate()
            picker.invalidate()
            damage = .full(size)
        } else {
            var regions = recomposite
            for (slot, from) in pendingFrom {
                guard let s = painting.active[slot] else { continue }
                regions.add(tailRegion(slot: slot, from: from, s).intersection(paintArea))
            }
            for r in regions.rects {
                recompose(r, layer: layer, on: canvas)
                damage.add(r.intersection(paintArea))
            }
            recomposite = Damage()
            pendingFrom.removeAll()
        }
        // The buttons' looks follow from a few values: only when one of them changed (or the bar
        // must be redrawn whole) are the looks worked out and compared button by button.
        let key = ToolbarState(color: colors.color, brushWidth: brushWidth, canUndo: painting.canUndo, canRedo: painting.canRedo,
                               isEmpty: painting.isEmpty, pickerOpen: pickerOpen)
        if toolbar.needsFullDraw || key != drawnToolbar {
            damage.formUnion(toolbar.draw(into: canvas, looks: looks))
            drawnToolbar = key
        }
        if pickerOpen { damage.formUnion(picker.draw(into: canvas)) }
        return damage
    }

    /// How each toolbar button should look now.
    private var looks: [PaintTool: PaintToolLook] {
        var out: [PaintTool: PaintToolLook] = [:]
        let color = colors.color
        for (i, c) in swatches.enumerated() {
            out[.swatch(i)] = PaintToolLook(tool: .swatch(i), selected: c == color, color: c)
        }
        for (i, w) in settings.brushWidths.enumerated() {
            out[.width(i)] = PaintToolLook(tool: .width(i), selected: w == brushWidth, color: color, width: w)
        }
        out[.undo] = PaintToolLook(tool: .undo, enabled: painting.canUndo)
        out[.redo] = PaintToolLook(tool: .redo, enabled: painting.canRedo)
        out[.clear] = PaintToolLook(tool: .clear, enabled: !painting.isEmpty)
        out[.save] = PaintToolLook(tool: .save)
        out[.picker] = PaintToolLook(tool: .picker, selected: pickerOpen, color: color)
        return out
    }
}
