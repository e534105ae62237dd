import FoundationEssentials
import Glibc
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
    var logger: Logger

    private var slots = PaintSlots()

    /// The cached layer of finished strokes.
    let layer = PaintLayerCache()
    /// Draws the unfinished strokes.
    let brush = PaintBrush()
    /// Discs the brush laid and pixels it blended so far (the cost of drawing unfinished strokes).
    var brushStats: (discs: Int, pixels: Int) { (brush.discsLaid, brush.pixelsBlended) }
    /// How many times the finished-stroke layer was rebuilt from the whole history.
    public var layerRebuilds: Int { layer.rebuilds }
    /// How many stroke paths were stroked (on screen or in the layer), to show drawing cost.
    public internal(set) var strokePathsDrawn = 0

    // Pending drawing, gathered between draws.
    var needsFull = true
    var pendingFrom: [Int: Int] = [:]
    /// Per unfinished stroke: each segment's bounds, and the bounds of the last segments drawn.
    var liveSegments: [Int: [Rect]] = [:]
    var drawnTail: [Int: Rect] = [:]
    var recomposite = Damage()
    /// What the toolbar's buttons were last drawn for.
    var drawnToolbar: ToolbarState?
    struct ToolbarState: Equatable {
        var color: Color, brushWidth: Double, canUndo: Bool, canRedo: Bool, isEmpty: Bool, pickerOpen: Bool
    }
    var changes = 0

    // Idle reset.
    private var lastActivityNs: Int64 = 0
    var lastNow: WallTime?
    /// Paths written by save (newest last).
    public internal(set) var savedPaths: [String] = []
    /// Where a save's encoding, write and fsync go (the daemon's worker; at once by default).
    public var offLoop: OffLoopWork = InlineWork()
    /// Paintings copied and not yet on disk, and their pixel bytes.
    public internal(set) var savesWaiting = 0
    var savingBytes = 0
    /// The most pixel bytes of paintings that may wait to be written at once (a slow disk):
    /// a save beyond is refused (errno EAGAIN) rather than holding more memory. One painting
    /// may always wait.
    public var maxSavingBytes = 256 << 20
    /// The last painting copied for a save, and what it was drawn from: saves asked for while
    /// nothing changed (several at once) share one copy.
    var lastCopy: (changes: Int, theme: Theme, size: Size, pixels: PixelCopy)?

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
}
