import KioskCore
import KioskRender

/// A button of the paint toolbar.
public enum PaintTool: Sendable, Equatable, Hashable {
    /// A palette swatch (index into the theme's `Palette.swatches`).
    case swatch(Int)
    /// A brush width (index into the configured widths).
    case width(Int)
    case undo, redo, clear, save
    /// Opens or closes the colour picker.
    case picker
}

/// How a toolbar button looks; a button is redrawn only when its look changes.
public struct PaintToolLook: Sendable, Equatable {
    public var tool: PaintTool
    public var selected: Bool
    public var enabled: Bool
    /// The swatch colour, or the current colour for widths and the picker button.
    public var color: Color
    /// The brush width in pixels for width buttons.
    public var width: Double
    public init(tool: PaintTool, selected: Bool = false, enabled: Bool = true, color: Color = .black, width: Double = 0) {
        self.tool = tool; self.selected = selected; self.enabled = enabled; self.color = color; self.width = width
    }
}

/// The toolbar along one edge of the screen, sized for fingers: along the bottom when the
/// screen is wider than tall, along the left edge otherwise (always the long edge).
public final class PaintToolbar {
    public private(set) var frame = Rect(x: 0, y: 0, width: 0, height: 0)
    /// Each button's cell (the touch target) and the tool it holds, in order.
    public private(set) var buttons: [(tool: PaintTool, rect: Rect)] = []
    /// The part of the screen left for painting.
    public private(set) var paintArea = Rect(x: 0, y: 0, width: 0, height: 0)
    private var drawn: [PaintToolLook?] = []
    private var needsFull = true
    private var theme = Theme.default

    public init() {}

    /// Lays out `tools` for a screen `size`. The bar is 12 % of the short side (48…160 px) thick.
    public func layout(size: Size, tools: [PaintTool]) {
        let horizontal = size.width >= size.height
        let short = min(size.width, size.height), long = max(size.width, size.height)
        let thickness = min(max(Int(Double(short) * 0.12), 48), 160, max(short / 2, 1))
        if horizontal {
            frame = Rect(x: 0, y: size.height - thickness, width: size.width, height: thickness)
            paintArea = Rect(x: 0, y: 0, width: size.width, height: size.height - thickness)
        } else {
            frame = Rect(x: 0, y: 0, width: thickness, height: size.height)
            paintArea = Rect(x: thickness, y: 0, width: size.width - thickness, height: size.height)
        }
        buttons = []
        let n = max(tools.count, 1)
        for (i, tool) in tools.enumerated() {
            let a = long * i / n, b = long * (i + 1) / n
            let r = horizontal ? Rect(x: a, y: frame.y, width: b - a, height: thickness)
                               : Rect(x: 0, y: a, width: thickness, height: b - a)
            buttons.append((tool, r))
        }
        drawn = Array(repeating: nil, count: buttons.count)
        needsFull = true
    }

    public func apply(theme: Theme) { self.theme = theme; needsFull = true }
    public func invalidate() { needsFull = true }
    /// Whether the next `draw` redraws the whole bar (after layout, theme or `invalidate`).
    public var needsFullDraw: Bool { needsFull }

    /// The tool under a point (scene pixels); nil outside the toolbar. A point on the bar
    /// between buttons returns nil but is still on the bar (`frame.contains`).
    public func tool(at p: Point) -> PaintTool? {
        buttons.first { $0.rect.contains(p) }?.tool
    }

    public func rect(of tool: PaintTool) -> Rect? { buttons.first { $0.tool == tool }?.rect }

    private var barColor: Color { theme.palette.background.mixed(with: theme.palette.text, 0.12) }

    /// Draws the buttons whose look changed (all after layout, theme or `invalidate`).
    public func draw(into canvas: Canvas, looks: [PaintTool: PaintToolLook]) -> Damage {
        var damage = Damage()
        let full = needsFull
        if full {
            canvas.fill(frame, barColor)
            damage.add(frame)
            needsFull = false
        }
        for (i, b) in buttons.enumerated() {
            let look = looks[b.tool] ?? PaintToolLook(tool: b.tool)
            if !full, drawn[i] == look { continue }
            canvas.withClip(b.rect) { drawButton(canvas, b.rect, look) }
            drawn[i] = look
            damage.add(b.rect)
        }
        return damage
    }

    private func drawButton(_ canvas: Canvas, _ cell: Rect, _ look: PaintToolLook) {
        let p = theme.palette
        canvas.fill(cell, barColor)
        let side = Double(min(cell.width, cell.height))
        let c = Point(x: Double(cell.x) + Double(cell.width) / 2, y: Double(cell.y) + Double(cell.height) / 2)
        let ink = look.enabled ? p.text : p.text.mixed(with: barColor, 0.65)
        if look.selected {
            canvas.strokeRoundedRect(x: c.x - side * 0.46, y: c.y - side * 0.46, width: side * 0.92, height: side * 0.92,
                                     radius: side * 0.12, lineWidth: max(2, side * 0.05), p.highlight == barColor ? p.text : p.highlight)
        }
        switch look.tool {
        case .swatch:
            canvas.fillCircle(center: c, radius: side * 0.3, look.color)
            canvas.strokeCircle(center: c, radius: side * 0.3, lineWidth: max(1.5, side * 0.02), p.text)
        case .width:
            let r = min(look.width / 2, side * 0.36)
            canvas.fillCircle(center: c, radius: max(r, 1), look.color)
            canvas.strokeCircle(center: c, radius: max(r, 1) + 1, lineWidth: 1.5, p.text.mixed(with: barColor, 0.4))
        case .picker:
            let cc = Point(x: c.x, y: c.y - side * 0.12)
            canvas.fillCircle(center: cc, radius: side * 0.22, look.color)
            canvas.strokeCircle(center: cc, radius: side * 0.22, lineWidth: max(1.5, side * 0.02), p.text)
            label(canvas, "Colour", center: Point(x: c.x, y: c.y + side * 0.27), side: side, ink: ink, fraction: 0.2)
        case .undo: label(canvas, "Undo", center: c, side: side, ink: ink, fraction: 0.3)
        case .redo: label(canvas, "Redo", center: c, side: side, ink: ink, fraction: 0.3)
        case .clear: label(canvas, "Clear", center: c, side: side, ink: ink, fraction: 0.3)
        case .save: label(canvas, "Save", center: c, side: side, ink: ink, fraction: 0.3)
        }
    }

    private func label(_ canvas: Canvas, _ text: String, center: Point, side: Double, ink: Color, fraction: Double) {
        let style = theme.fonts.body
        // One size for every label (the widest word decides), so the bar looks even.
        let px = canvas.fittingSize("Colour", style, maxPx: side * fraction, width: side * 0.84, height: side * fraction)
        canvas.drawText(text, style, px: px, color: ink,
                        in: (x: center.x - side / 2, y: center.y - side * fraction / 2, width: side, height: side * fraction))
    }
}
