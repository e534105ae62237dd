import KioskCore

/// The paint scene's settings (`[scene.NAME]` with `kind = "paint"`, see docs/config-paint.md).
public struct PaintSettings: Sendable, Equatable {
    /// The canvas colour; nil: the theme's background.
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
