import Foundation
import KioskCore
import KioskRender
import Logging

/// The painting table: every finger draws its own stroke, in the selected colour and width, as a
/// smooth curve with round caps and joins; a toolbar with the theme's swatches, brush widths,
/// undo, redo, clear, save and the colour picker; idle reset.
///
/// The settings are `PaintSettings`; which finger does what is `PaintSlots`; saving is
/// `PaintingFiles`; finished strokes live in a cached layer (`PaintLayerCache`, an offscreen
/// canvas). A new point draws only the curve segments it changes, straight onto the screen, and
/// damages only their bounds; when a stroke ends it is drawn once into the layer and its bounds
/// are recomposited from the layer, so the screen then equals a full redraw. Undo puts back the
/// layer pixels kept from before the last stroke (for the latest strokes, up to one screen's
/// worth of pixels), else it rebuilds the layer once; redo draws the stroke again; clear empties
/// the layer.
public final class PaintScene: Scene, PaintControl, PaintingObserver, ColorModelObserver, UsesOffLoopWork {
    public let name: String
    public let kind = "paint"
    public let settings: PaintSettings
    public let painting: Painting
    public let colors: ColorModel
    public let picker: ColorPicker
    public let toolbar = PaintToolbar()
    /// The width new strokes get.
    public private(set) var brushWidth: Double
    public private(set) var pickerOpen = false
    public private(set) var theme = Theme.default
    public private(set) var size = Size(width: 0, height: 0)
    /// Where saved paintings go.
    var files: PaintingFiles
    private var logger: Logger

    private var slots = PaintSlots()

    /// The cached layer of finished strokes.
    private let layer = PaintLayerCache()
    /// Draws the unfinished strokes.
    private let brush = PaintBrush()
    /// Discs the brush laid and pixels it blended so far (the cost of drawing unfinished strokes).
    var brushStats: (discs: Int, pixels: Int) { (brush.discsLaid, brush.pixelsBlended) }
    /// How many times the finished-stroke layer was rebuilt from the whole history.
    public var layerRebuilds: Int { layer.rebuilds }
    /// How many stroke paths were stroked (on screen or in the layer), to show drawing cost.
    public private(set) var strokePathsDrawn = 0

    // Pending drawing, gathered between draws.
    private var needsFull = true
    private var pendingFrom: [Int: Int] = [:]
    /// Per unfinished stroke: each segment's bounds, and the bounds of the last segments drawn.
    private var liveSegments: [Int: [Rect]] = [:]
    private var drawnTail: [Int: Rect] = [:]
    private var recomposite = Damage()
    /// What the toolbar's buttons were last drawn for.
    private var drawnToolbar: ToolbarState?
    private struct ToolbarState: Equatable {
        var color: Color, brushWidth: Double, canUndo: Bool, canRedo: Bool, isEmpty: Bool, pickerOpen: Bool
    }
    private var changes = 0

    // Idle reset.
    private var lastActivityNs: Int64 = 0
    private var lastNow: WallTime?
    /// Paths written by save (newest last).
    public private(set) var savedPaths: [String] = []
    /// Where a save's encoding, write and fsync go (the daemon's worker; at once by default).
    public var offLoop: OffLoopWork = InlineWork()
    /// Paintings copied and not yet on disk, and their pixel bytes.
    public private(set) var savesWaiting = 0
    private var savingBytes = 0
    /// The most pixel bytes of paintings that may wait to be written at once (a slow disk):
    /// a save beyond is refused (errno EAGAIN) rather than holding more memory. One painting
    /// may always wait.
    public var maxSavingBytes = 256 << 20
    /// The last painting copied for a save, and what it was drawn from: saves asked for while
    /// nothing changed (several at once) share one copy.
    private var lastCopy: (changes: Int, theme: Theme, size: Size, pixels: PixelCopy)?

    public init(name: String, settings: PaintSettings = PaintSettings(), dataDirectory: String = "/var/lib/kioskd",
                logger: Logger = Logger(label: "kioskd.paint")) {
        self.name = name
        self.settings = settings
        self.painting = Painting(maxUndo: settings.maxUndo)
        self.colors = ColorModel()
        self.picker = ColorPicker(model: colors)
        self.brushWidth = settings.defaultWidth
        self.files = PaintingFiles(directory: settings.saveDirectory ?? dataDirectory)
        self.logger = logger
        painting.addObserver(self)
        colors.addObserver(self)
    }

    /// Makes a paint scene from `[scene.NAME]` (`kind = "paint"`): reads every key, then `finish()`.
    public static func make(_ table: ConfigTable, _ context: SceneContext) throws -> Scene {
        let settings = try PaintSettings.read(table)
        var logger = context.logger
        logger[metadataKey: "scene"] = "\(context.name)"
        return PaintScene(name: context.name, settings: settings, dataDirectory: context.dataDirectory, logger: logger)
    }

    public var background: Color { settings.background ?? theme.palette.background }
    public var strokeCount: Int { painting.strokes.count }
    public var statusSummary: String { "\(strokeCount) stroke\(strokeCount == 1 ? "" : "s")" }

    /// The part of the screen strokes are drawn on (the screen minus the toolbar).
    public var paintArea: Rect { toolbar.paintArea }

    // MARK: Scene

    public func layout(size: Size) {
        if size != self.size { layer.invalidate() }
        self.size = size
        toolbar.layout(size: size, tools: tools)
        picker.layout(in: pickerFrame(in: toolbar.paintArea, screen: size))
        needsFull = true
    }

    private var tools: [PaintTool] {
        swatches.indices.map { .swatch($0) } + settings.brushWidths.indices.map { .width($0) }
            + [.undo, .redo, .clear, .save, .picker]
    }

    /// The colour picker's panel: centred in the paint area, wider than tall where there is room.
    private func pickerFrame(in area: Rect, screen: Size) -> Rect {
        let m = max(8, min(screen.width, screen.height) / 25)
        let pw = max(1, min(area.width - 2 * m, Int(Double(area.height - 2 * m) * 1.4)))
        let ph = max(1, min(area.height - 2 * m, Int(Double(pw) * 0.9)))
        return Rect(x: area.x + (area.width - pw) / 2, y: area.y + (area.height - ph) / 2, width: pw, height: ph)
    }

    /// The toolbar's colours: the theme's palette swatches, each colour once (in `default`,
    /// `highlight` and `text` are both black).
    public var swatches: [Color] { Self.swatches(of: theme) }

    static func swatches(of theme: Theme) -> [Color] {
        var out: [Color] = []
        for c in theme.palette.swatches.map({ $0.withAlpha(1) }) where !out.contains(c) { out.append(c) }
        return out
    }

    public func apply(theme: Theme) {
        let relayout = Self.swatches(of: theme).count != swatches.count
        self.theme = theme
        toolbar.apply(theme: theme)
        picker.apply(theme: theme)
        if settings.background == nil { layer.invalidate() }
        if relayout && size.width > 0 { layout(size: size) }
        needsFull = true
    }

    public func didAppear(now: WallTime) {
        lastNow = now
        lastActivityNs = now.monotonicNs
        needsFull = true
    }

    public func handle(_ event: InputEvent, now: WallTime) -> Bool {
        lastNow = now
        if case .deviceRemoved(let info) = event, !slots.isEmpty {
            // Its fingers will send nothing more: end their strokes as drawn (like a cancel).
            logger.info("input device gone, ending its touches", metadata: ["device": "\(info.sysname)", "touches": "\(slots.count)"])
            let before = changes
            for slot in slots.slots { finishSlot(slot) }
            return changes != before
        }
        guard case .touch(let t) = event, size.width > 0 else { return false }
        // Positions come normalised; a calibration may put them a little outside 0…1. Anything
        // not finite is dropped (it would poison the curve and the damage boxes).
        guard t.x.isFinite, t.y.isFinite else {
            logger.debug("touch without a usable position ignored", metadata: ["slot": "\(t.slot)", "x": "\(t.x)", "y": "\(t.y)"])
            return false
        }
        let before = changes
        lastActivityNs = now.monotonicNs
        let p = Point(x: min(max(t.x, -1), 2) * Double(size.width), y: min(max(t.y, -1), 2) * Double(size.height))
        switch t.phase {
        case .down:
            if slots[t.slot] != nil { finishSlot(t.slot) }
            let role = PaintSlots.role(forDownAt: p, toolbar: toolbar, picker: pickerOpen ? picker : nil)
            slots[t.slot] = role
            switch role {
            case .tool: if let tool = toolbar.tool(at: p) { activate(tool) }
            case .picker(let part): picker.touch(part, at: p)
            case .ignored: setPicker(open: false)
            case .draw: painting.startStroke(slot: t.slot, at: p, color: colors.color, width: brushWidth)
            }
        case .motion:
            switch slots[t.slot] {
            case .draw?: painting.continueStroke(slot: t.slot, to: p)
            case .picker(let part)? where part != .panel: picker.touch(part, at: p)
            default: break
            }
        case .up, .cancel:
            // A cancelled touch ends its stroke as drawn, like a lifted finger.
            if slots[t.slot] == .draw { painting.continueStroke(slot: t.slot, to: p) }
            finishSlot(t.slot)
        }
        return changes != before
    }

    private func finishSlot(_ slot: Int) {
        if slots[slot] == .draw { painting.endStroke(slot: slot) }
        slots[slot] = nil
    }

    private func activate(_ tool: PaintTool) {
        switch tool {
        case .swatch(let i):
            let sw = swatches
            if sw.indices.contains(i) { colors.set(color: sw[i]); changes += 1 }
        case .width(let i):
            if settings.brushWidths.indices.contains(i) { brushWidth = settings.brushWidths[i]; changes += 1 }
        case .undo: undo()
        case .redo: redo()
        case .clear: clear()
        case .save:
            save(name: nil) { [logger] result in
                if case .failure(let error) = result { logger.error("cannot save the painting", metadata: ["error": "\(error)"]) }
            }
        case .picker:
            setPicker(open: !pickerOpen)
        }
    }

    private func setPicker(open: Bool) {
        guard open != pickerOpen else { return }
        pickerOpen = open
        if open { picker.invalidate() } else { recomposite.add(picker.frame) }
        changes += 1
    }

    public func update(now: WallTime) -> Bool {
        lastNow = now
        guard let d = idleDeadline, now.monotonicNs >= d else { return false }
        if !slots.isEmpty {                 // a finger resting on the screen is still a visitor
            lastActivityNs = now.monotonicNs
            return false
        }
        idleReset()
        return true
    }

    /// Monotonic instant of the next idle reset; nil when off or when there is nothing to reset.
    private var idleDeadline: Int64? {
        guard settings.idleResetSeconds > 0 else { return nil }
        let untouched = painting.isEmpty && !pickerOpen && brushWidth == settings.defaultWidth && colors.color == ColorModel().color
        if untouched && painting.redoStack.isEmpty { return nil }
        return lastActivityNs + Int64(settings.idleResetSeconds * 1e9)
    }

    public func nextDeadline(now: WallTime) -> Deadline? { idleDeadline.map { .monotonic($0) } }

    /// Saves (when configured) and clears for the next visitor: painting, picker, colour and width.
    private func idleReset() {
        if settings.idleSave && !painting.strokes.isEmpty {
            // The painting is copied now, before it is cleared below; it is written afterwards.
            save(name: nil) { [logger] result in
                if case .failure(let error) = result { logger.error("idle reset: cannot save the painting", metadata: ["error": "\(error)"]) }
            }
        }
        logger.info("idle reset", metadata: ["strokes": "\(painting.strokes.count)"])
        painting.clear()
        setPicker(open: false)
        let start = ColorModel()
        colors.set(brightness: start.brightness)
        colors.set(hue: start.hue, saturation: start.saturation)
        brushWidth = settings.defaultWidth
        changes += 1
    }

    // MARK: PaintControl

    public func clear() { painting.clear() }
    @discardableResult public func undo() -> Bool { painting.undo() }
    @discardableResult public func redo() -> Bool { painting.redo() }

    /// Writes the paint area (finished and unfinished strokes, without the toolbar) as a new PNG
    /// file in the paintings folder (see `PaintingFiles`), all of it on the calling thread;
    /// returns the path written.
    public func save(name: String?) throws -> String {
        var outcome: Result<String, Error>?
        save(name: name, on: InlineWork()) { outcome = $0 }
        return try outcome!.get()
    }

    /// Saves the painting as `save(name:)` does without holding the loop: the paint area is
    /// drawn and its pixels copied here; the PNG is encoded, written and fsync'ed on `offLoop`;
    /// `done` runs on the loop once the file is on disk, with its path, or with the error
    /// (naming the file and the call that failed).
    public func save(name: String?, done: @escaping (Result<String, Error>) -> Void) {
        save(name: name, on: offLoop, done: done)
    }

    private func save(name: String?, on work: OffLoopWork, done: @escaping (Result<String, Error>) -> Void) {
        let copy: PixelCopy
        do {
            if let name { try Self.validateFileName(name) }
            if let last = lastCopy, last.changes == changes, last.theme == theme, last.size == size {
                copy = last.pixels
            } else {
                copy = try renderPainting().pixelCopy()
                lastCopy = (changes, theme, size, copy)
            }
        } catch {
            done(.failure(error))
            return
        }
        guard savesWaiting == 0 || savingBytes + copy.bytes.count <= maxSavingBytes else {
            let waiting = savesWaiting == 1 ? "1 painting (\(savingBytes >> 20) MiB) is" : "\(savesWaiting) paintings (\(savingBytes >> 20) MiB) are"
            done(.failure(KioskError(.scene, "cannot save the painting now: \(waiting) still being written to \(files.directory); not saved, try again once they are on disk", errno: EAGAIN)))
            return
        }
        savesWaiting += 1
        savingBytes += copy.bytes.count
        let files = self.files
        let realtimeNs = lastNow?.realtimeNs ?? SystemTimeSource().now().realtimeNs
        let strokes = painting.strokes.count
        work.run({ () -> Result<String, Error> in
            Result {
                try files.prepare(name: name)
                return try files.write(try copy.pngData(), name: name, realtimeNs: realtimeNs)
            }
        }, then: { result in
            self.savesWaiting -= 1
            self.savingBytes -= copy.bytes.count
            if self.savesWaiting == 0 { self.lastCopy = nil } // its pixels are not kept longer than the saves
            if case .success(let target) = result {
                self.savedPaths.append(target)
                self.logger.info("painting saved", metadata: ["path": "\(target)", "strokes": "\(strokes)"])
            }
            done(result)
        })
    }

    /// The painting as an image of the paint area's size.
    public func renderPainting() throws -> Canvas {
        let area = paintArea
        guard area.width > 0, area.height > 0 else {
            throw KioskError.scene("the paint scene '\(name)' has no size yet (it was never laid out)")
        }
        let out = try Canvas(size: Size(width: area.width, height: area.height))
        let layer = try cachedLayer()
        out.draw(layer, x: Double(-area.x), y: Double(-area.y))
        out.translated(x: Double(-area.x), y: Double(-area.y)) {
            for slot in painting.activeOrder { if let s = painting.active[slot] { stroke(s, on: out) } }
        }
        return out
    }

    // MARK: model observers

    public func painting(_ painting: Painting, didChange change: PaintingChange) {
        changes += 1
        switch change {
        case .started(let slot):
            pendingFrom[slot] = 0
            liveSegments[slot] = nil
            drawnTail[slot] = nil
        case .extended(let slot, let from):
            pendingFrom[slot] = min(pendingFrom[slot] ?? from, from)
        case .finished(let slot, let index):
            pendingFrom[slot] = nil
            liveSegments[slot] = nil
            drawnTail[slot] = nil
            addToLayer(index)
        case .redone(let index):
            addToLayer(index)
        case .undone:
            // The undone stroke was strokes[count]: put back the layer pixels it covered, or
            // rebuild the layer once when they were not kept.
            if let r = layer.undo(index: painting.strokes.count) {
                recomposite.add(r.intersection(paintArea))
            } else {
                needsFull = true
            }
        case .cleared:
            pendingFrom.removeAll()
            liveSegments.removeAll()
            drawnTail.removeAll()
            slots.ignoreDrawing()
            layer.clear(to: background)
            needsFull = true
        }
    }

    public func colorModel(_ model: ColorModel, didChange change: ColorChange) { changes += 1 }

    // MARK: drawing

    private func bounds(of s: Stroke) -> Rect {
        SmoothCurve.bounds(s.points, from: 0, to: s.points.count - 1, width: s.width)
    }

    /// Strokes a whole stroke: a dot for one point, else the smooth curve through every point.
    private func stroke(_ s: Stroke, on canvas: Canvas) {
        canvas.strokePath(s.points, width: s.width, s.color, smooth: true)
        strokePathsDrawn += 1
    }

    /// Draws `strokes[index]` (just finished or redone) onto the layer (keeping the pixels it
    /// covers for undo) and recomposites its bounds.
    private func addToLayer(_ index: Int) {
        let s = painting.strokes[index]
        let b = bounds(of: s)
        recomposite.add(b.intersection(paintArea))
        layer.add(index: index, bounds: b, screenArea: size.area) { stroke(s, on: $0) }
    }

    /// The finished-stroke layer, rebuilt from the whole history only when invalid.
    private func cachedLayer() throws -> Canvas {
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
