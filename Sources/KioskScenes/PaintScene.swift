import Foundation
import KioskCore
import KioskRender
import Logging

/// The paint scene's settings (`[scene.NAME]` with `kind = "paint"`, see docs/config-paint.md).
public struct PaintSettings: Sendable, Equatable {
    /// The canvas colour; nil: the theme's background (the `light` theme's is seed 004's rgb 250,250,250).
    public var background: Color?
    /// Brush widths offered on the toolbar, in pixels.
    public var brushWidths: [Double]
    /// The width a visitor starts with.
    public var defaultWidth: Double
    /// How many of the latest strokes can be undone; 0 = all.
    public var maxUndo: Int
    /// Seconds without touch after which the painting is cleared; 0 = never.
    public var idleResetSeconds: Double
    /// Save a PNG before an idle reset clears a painting.
    public var idleSave: Bool
    /// Where saved paintings go; nil: the daemon's data directory.
    public var saveDirectory: String?

    public init(background: Color? = nil, brushWidths: [Double] = [8, 20, 40], defaultWidth: Double = 20, maxUndo: Int = 0,
                idleResetSeconds: Double = 0, idleSave: Bool = false, saveDirectory: String? = nil) {
        self.background = background; self.brushWidths = brushWidths; self.defaultWidth = defaultWidth
        self.maxUndo = maxUndo; self.idleResetSeconds = idleResetSeconds; self.idleSave = idleSave
        self.saveDirectory = saveDirectory
    }

    /// Reads every key of a `[scene.NAME]` table with `kind = "paint"`, then reports unknown keys.
    public static func read(_ table: ConfigTable) throws -> PaintSettings {
        var s = PaintSettings()
        if let b = try table.string("background"), b != "theme" {
            guard let c = Color(hex: b), !b.isEmpty else {
                throw table.error("background", "expected \"theme\" or a colour like \"#FAFAFA\", got \"\(b)\"")
            }
            s.background = c.withAlpha(1)
        }
        if let widths = try table.doubleArray("brush_widths") {
            guard (1...8).contains(widths.count) else {
                throw table.error("brush_widths", "expected 1…8 widths, got \(widths.count)")
            }
            for (i, w) in widths.enumerated() where !(1...400).contains(w) {
                throw table.error("brush_widths", "entry \(i) (\(w)) is out of range, expected 1…400 pixels")
            }
            s.brushWidths = widths
        }
        if table.has("default_width") {
            let w = try table.double("default_width", default: 20, range: 1...400)
            guard s.brushWidths.contains(w) else {
                throw table.error("default_width", "\(w) is not one of brush_widths \(s.brushWidths.map { formatWidth($0) })")
            }
            s.defaultWidth = w
        } else {
            s.defaultWidth = s.brushWidths.contains(20) ? 20 : s.brushWidths[s.brushWidths.count / 2]
        }
        s.maxUndo = try table.int("max_undo", default: 0, range: 0...1_000_000)
        s.idleResetSeconds = try table.double("idle_reset_seconds", default: 0, range: 0...604_800)
        s.idleSave = try table.bool("idle_save", default: false)
        if let d = try table.string("save_directory") {
            guard d.hasPrefix("/") else {
                throw table.error("save_directory", "expected an absolute path, got \"\(d)\"")
            }
            s.saveDirectory = d
        }
        try table.finish()
        return s
    }

    static func formatWidth(_ w: Double) -> String { w == w.rounded() ? "\(Int(w))" : "\(w)" }
}

/// The painting table (seeds 004 and 001): every finger draws its own stroke, in the selected
/// colour and width, as a smooth curve with round caps and joins; a toolbar with the theme's
/// swatches, brush widths, undo, redo, clear, save and the colour picker; idle reset.
///
/// Finished strokes live in a cached layer (an offscreen canvas). A new point draws only the
/// curve segments it changes, straight onto the screen, and damages only their bounds; when a
/// stroke ends it is drawn once into the layer and its bounds are recomposited from the layer,
/// so the screen then equals a full redraw. Undo puts back the layer pixels kept from before
/// the last stroke (for the latest strokes, up to one screen's worth of pixels), else it
/// rebuilds the layer once; redo draws the stroke again; clear empties the layer.
public final class PaintScene: Scene, PaintControl, PaintingObserver, ColorModelObserver {
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
    private let dataDirectory: String
    private var logger: Logger

    /// What each finger (touch slot) is doing.
    enum SlotRole: Equatable { case draw, tool, picker(ColorPicker.Part), ignored }
    private var slots: [Int: SlotRole] = [:]

    // The cached layer of finished strokes.
    private var layer: Canvas?
    private var layerValid = false
    /// How many times the finished-stroke layer was rebuilt from the whole history.
    public private(set) var layerRebuilds = 0
    /// Layer pixels under the latest finished strokes, from before each was drawn (for undo).
    private struct UndoPatch { let index: Int; let rect: Rect; let pixels: Canvas? }
    private var undoPatches: [UndoPatch] = []
    private var undoPatchArea = 0
    /// How many stroke paths were stroked (on screen or in the layer), to show drawing cost.
    public private(set) var strokePathsDrawn = 0

    // Pending drawing, gathered between draws.
    private var needsFull = true
    private var pendingFrom: [Int: Int] = [:]
    /// Per unfinished stroke: each segment's bounds, and the bounds of the last segments drawn.
    private var liveSegments: [Int: [Rect]] = [:]
    private var drawnTail: [Int: Rect] = [:]
    private var recomposite = Damage()
    private var changes = 0

    // Idle reset.
    private var lastActivityNs: Int64 = 0
    private var lastNow: WallTime?
    /// Paths written by save (newest last).
    public private(set) var savedPaths: [String] = []

    public init(name: String, settings: PaintSettings = PaintSettings(), dataDirectory: String = "/var/lib/kioskd",
                logger: Logger = Logger(label: "kioskd.paint")) {
        self.name = name
        self.settings = settings
        self.painting = Painting(maxUndo: settings.maxUndo)
        self.colors = ColorModel()
        self.picker = ColorPicker(model: colors)
        self.brushWidth = settings.defaultWidth
        self.dataDirectory = settings.saveDirectory ?? dataDirectory
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
        if size != self.size { layerValid = false }
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
        if settings.background == nil { layerValid = false }
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
            for slot in slots.keys.sorted() { finishSlot(slot) }
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
            if toolbar.frame.contains(p) {
                slots[t.slot] = .tool
                if let tool = toolbar.tool(at: p) { activate(tool) }
            } else if pickerOpen {
                if let part = picker.part(at: p) {
                    slots[t.slot] = .picker(part)
                    picker.touch(part, at: p)
                } else {
                    slots[t.slot] = .ignored
                    setPicker(open: false)
                }
            } else {
                slots[t.slot] = .draw
                painting.startStroke(slot: t.slot, at: p, color: colors.color, width: brushWidth)
            }
        case .motion:
            switch slots[t.slot] {
            case .draw?: painting.continueStroke(slot: t.slot, to: p)
            case .picker(let part)? where part != .panel: picker.touch(part, at: p)
            default: break
            }
        case .up, .cancel:
            // A cancelled touch keeps its stroke as drawn (seed 004 ends the stroke either way).
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
            do { _ = try save(name: nil) } catch { logger.error("cannot save the painting", metadata: ["error": "\(error)"]) }
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
            do { _ = try save(name: nil) } catch { logger.error("idle reset: cannot save the painting", metadata: ["error": "\(error)"]) }
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

    /// Writes the paint area (finished and unfinished strokes, without the toolbar) as PNG into
    /// the save directory (created when missing), never anywhere else and never over an existing
    /// file. Without a name: `painting-YYYYMMDD-HHMMSS[-N].png` (local time); a given name must be
    /// a plain file name (see `validateFileName`). The PNG is encoded in memory, then written and
    /// fsync'ed to a new file (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0640) that is removed again if
    /// writing fails. Errors name the path, the call and errno.
    public func save(name: String?) throws -> String {
        if let name { try Self.validateFileName(name) }
        try Self.makeDirectory(dataDirectory)
        let png = try renderPainting().pngData()
        let base = dataDirectory.hasSuffix("/") ? dataDirectory : dataDirectory + "/"
        let target: String
        if let name {
            target = base + name
            try ExclusiveFile.write(png, to: target)
        } else {
            let stamp = timeStamp()
            var n = 1
            while true {
                let candidate = base + (n == 1 ? "painting-\(stamp).png" : "painting-\(stamp)-\(n).png")
                do {
                    try ExclusiveFile.write(png, to: candidate)
                    target = candidate
                    break
                } catch let e as KioskError where e.errno == EEXIST && n < 1000 {
                    n += 1
                }
            }
        }
        savedPaths.append(target)
        logger.info("painting saved", metadata: ["path": "\(target)", "strokes": "\(painting.strokes.count)"])
        return target
    }

    /// The longest file name `save(name:)` takes, in bytes.
    public static let maxFileNameBytes = PaintingFileName.maxBytes

    /// A file name for a saved painting (the rule is `PaintingFileName.validate`, shared with
    /// the control protocol).
    public static func validateFileName(_ name: String) throws { try PaintingFileName.validate(name) }

    /// Creates a directory and its missing parents (mkdir, mode 0755); errors name the directory and errno.
    static func makeDirectory(_ path: String) throws {
        var prefix = ""
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                let e = errno
                throw KioskError(.scene, "cannot create the painting directory \(path): mkdir \(prefix): \(String(cString: strerror(e)))", errno: e)
            }
        }
        var st = stat()
        guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else {
            throw KioskError(.scene, "cannot save paintings in \(path): it is not a directory")
        }
    }

    private func timeStamp() -> String {
        let ns = lastNow?.realtimeNs ?? SystemTimeSource().now().realtimeNs
        var t = time_t(ns / 1_000_000_000)
        var tmv = tm()
        localtime_r(&t, &tmv)
        var buf = [CChar](repeating: 0, count: 32)
        strftime(&buf, buf.count, "%Y%m%d-%H%M%S", &tmv)
        return String(cString: buf)
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
            if layerValid, let layer, let patch = undoPatches.last, patch.index == painting.strokes.count {
                undoPatches.removeLast()
                undoPatchArea -= patch.rect.area
                if let pixels = patch.pixels { layer.draw(pixels, x: Double(patch.rect.x), y: Double(patch.rect.y)) }
                recomposite.add(patch.rect.intersection(paintArea))
            } else {
                layerValid = false
                needsFull = true
            }
        case .cleared:
            dropUndoPatches()
            pendingFrom.removeAll()
            liveSegments.removeAll()
            drawnTail.removeAll()
            for (slot, role) in slots where role == .draw { slots[slot] = .ignored }
            if let layer { layer.clear(background); layerValid = true }
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

    /// Draws `strokes[index]` (just finished or redone) onto a valid layer, first keeping the
    /// layer pixels it will cover so that undoing it restores them instead of rebuilding.
    private func addToLayer(_ index: Int) {
        let s = painting.strokes[index]
        let b = bounds(of: s)
        recomposite.add(b.intersection(paintArea))
        guard layerValid, let layer else { return }
        let r = b.intersection(Rect(size: layer.size))
        var pixels: Canvas?
        if !r.isEmpty, let c = try? Canvas(size: Size(width: r.width, height: r.height)) {
            c.draw(layer, x: Double(-r.x), y: Double(-r.y))
            pixels = c
        }
        if r.isEmpty || pixels != nil {
            undoPatches.append(UndoPatch(index: index, rect: r, pixels: pixels))
            undoPatchArea += r.area
            // Keep at most one screen's worth of pixels and 64 patches: oldest go first.
            while undoPatches.count > 64 || (undoPatchArea > size.area && undoPatches.count > 1) {
                undoPatchArea -= undoPatches.removeFirst().rect.area
            }
        }
        stroke(s, on: layer)
    }

    private func dropUndoPatches() {
        undoPatches.removeAll()
        undoPatchArea = 0
    }

    /// The finished-stroke layer, rebuilt from the whole history only when invalid.
    private func cachedLayer() throws -> Canvas {
        if layer == nil || layer?.size != size { layer = try Canvas(size: size); layerValid = false }
        let l = layer!
        if !layerValid {
            dropUndoPatches()
            l.clear(background)
            for s in painting.strokes { stroke(s, on: l) }
            layerValid = true
            layerRebuilds += 1
        }
        return l
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

    /// Repaints `region` as a full redraw would: the layer, then every unfinished stroke that
    /// reaches the region, in the order they started. Of each stroke only the run of segments
    /// that reaches the region is stroked, as one path, clipped to the region: the same shape as
    /// the whole curve there. (cairo rasterises a clipped stroke with a few levels of difference
    /// in anti-aliasing at the edge; the finished stroke is composited from the layer, which is
    /// stroked unclipped, so once a finger lifts the pixels are exactly those of a full redraw.)
    private func recompose(_ region: Rect, layer: Canvas, on canvas: Canvas) {
        let c = clip(region)
        guard !c.isEmpty else { return }
        canvas.draw(layer, clip: c)
        canvas.withClip(c) {
            for slot in painting.activeOrder {
                guard let s = painting.active[slot] else { continue }
                let pts = s.points
                if pts.count == 1 {
                    if SmoothCurve.bounds(pts, from: 0, to: 0, width: s.width).intersects(region) { stroke(s, on: canvas) }
                    continue
                }
                let sb = segmentBounds(slot: slot, s)
                guard let a = sb.firstIndex(where: { $0.intersects(region) }),
                      let b = sb.lastIndex(where: { $0.intersects(region) }) else { continue }
                let start = max(a - 1, 0), end = min(b + 2, pts.count - 1)
                canvas.strokePathSegment(Array(pts[start...end]), from: a - start, to: b + 1 - start, width: s.width, s.color)
                strokePathsDrawn += 1
            }
        }
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
        damage.formUnion(toolbar.draw(into: canvas, looks: looks))
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

/// Writes a new file in one go: created exclusively (never over an existing file, never through a
/// symlink), written, fsync'ed, closed; removed again when any step fails.
enum ExclusiveFile {
    /// Test seam: called before each write with the path; an errno makes that write fail.
    nonisolated(unsafe) static var writeFault: ((String) -> Int32?)?

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o640) throws {
        func failure(_ call: String, _ e: Int32) -> KioskError {
            KioskError(.system, "cannot write \(path): \(call): \(String(cString: strerror(e))) (errno \(e))", errno: e)
        }
        var fd: Int32
        repeat { fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) } while fd < 0 && errno == EINTR
        guard fd >= 0 else {
            let e = errno
            if e == EEXIST {
                throw KioskError(.system, "cannot write \(path): a file of that name already exists (errno \(e)); paintings are never overwritten", errno: e)
            }
            throw failure("open", e)
        }
        var done = 0
        var err: KioskError?
        while done < bytes.count {
            if let e = writeFault?(path) { err = failure("write", e); break }
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                err = failure("write", errno)
                break
            }
            done += n
        }
        if err == nil && fsync(fd) != 0 { err = failure("fsync", errno) }
        if close(fd) != 0 && err == nil && errno != EINTR { err = failure("close", errno) }
        if let err {
            unlink(path)
            throw err
        }
    }
}
