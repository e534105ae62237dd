import FoundationEssentials
import KioskCore
import KioskRender
import Logging

/// What fills the clock's background (config `background`).
public enum ClockBackground: String, Sendable, Equatable, CaseIterable {
    /// The colour of the time (the product): changes every second.
    case time
    /// The theme's background; only the text changes each second.
    case theme
}

/// The colour clock: `HH:mm:ss` and a `#RRGGBB` label on a background whose colour follows the
/// time, redrawn exactly on each wall-clock second.
///
/// A `ClockModel` turns the time into a reading and tells this scene (its observer) when the
/// shown second changed; the scene never polls: it asks to run again at the next whole second
/// (`Deadline.realtime`), which the scene manager arms as a CLOCK_REALTIME timer, so a clock
/// jump (NTP step, manual change) is followed at once.
public final class ClockScene: Scene, ClockModelObserver {
    public let name: String
    public var kind: String { "clock" }
    /// How the time becomes a colour; changed at run time with `setColorMode` (`kioskctl clock mode`).
    public private(set) var colorMode: ClockColorMode
    /// The config's `color_mode` (what `colorMode` starts as).
    public let configuredColorMode: ClockColorMode
    public let backgroundMode: ClockBackground
    public let hourFormat: ClockHourFormat
    public let showLabel: Bool
    /// What is shown while the system clock is not synchronised.
    public let unsynced: ClockUnsyncedDisplay
    /// Whether the system clock is synchronised (told by the scene manager).
    public private(set) var timeSynchronized = true
    public let model: ClockModel
    private let logger: Logger

    private var theme: Theme = .default
    private var size = Size(width: 1, height: 1)
    private var needsFull = true
    private var dirty = true
    /// Set by `clockDidUpdate` between two `update(now:)` calls.
    private var notified = false
    private var fontsFor: Size?
    private var timePx = 10.0
    private var labelPx = 10.0
    /// The characters of the time and the label, rendered once per font and size.
    private let stamps = TextStamps(limit: 128)

    /// Where the time and the label were drawn last (pixels); empty before the first draw.
    public private(set) var timeRect = Rect(x: 0, y: 0, width: 0, height: 0)
    public private(set) var labelRect = Rect(x: 0, y: 0, width: 0, height: 0)
    /// Where the "time not synchronised" mark and the dimmed seconds were drawn last (empty when not).
    public private(set) var markRect = Rect(x: 0, y: 0, width: 0, height: 0)
    public private(set) var secondsRect = Rect(x: 0, y: 0, width: 0, height: 0)

    public init(name: String, colorMode: ClockColorMode = .scaled, background: ClockBackground = .time,
                hourFormat: ClockHourFormat = .h24, timeZone: LocalZone = .system,
                showLabel: Bool = true, unsynced: ClockUnsyncedDisplay = .mark, logger: Logger = Logger(label: "kioskd.clock")) {
        self.name = name
        self.unsynced = unsynced
        self.colorMode = colorMode
        self.configuredColorMode = colorMode
        self.backgroundMode = background
        self.hourFormat = hourFormat
        self.showLabel = showLabel
        self.model = ClockModel(timeZone: timeZone)
        self.logger = logger
        model.addObserver(self)
    }

    /// Makes a clock from `[scene.NAME]` (`kind = "clock"` already read by the manager).
    public static func make(_ table: ConfigTable, _ context: SceneContext) throws -> Scene {
        let mode = try table.choice("color_mode", default: ClockColorMode.scaled)
        let background = try table.choice("background", default: ClockBackground.time)
        let hf = try table.int("hour_format", default: 24, range: 12...24)
        guard let hourFormat = ClockHourFormat(rawValue: hf) else {
            throw table.error("hour_format", "expected 12 or 24, got \(hf)")
        }
        var tz = LocalZone.system
        if let id = try table.string("time_zone") {
            guard !id.isEmpty, let z = LocalZone.named(id) else {
                throw table.error("time_zone", "unknown time zone \"\(id)\" (expected an IANA name such as \"Europe/Berlin\" or \"UTC\")")
            }
            tz = z
        }
        let showLabel = try table.bool("show_label", default: true)
        let unsynced = try table.choice("unsynced", default: ClockUnsyncedDisplay.mark)
        try table.finish()
        var logger = context.logger
        logger[metadataKey: "scene"] = "\(context.name)"
        return ClockScene(name: context.name, colorMode: mode, background: background, hourFormat: hourFormat,
                          timeZone: tz, showLabel: showLabel, unsynced: unsynced, logger: logger)
    }

    /// Switches the colour mode; the next draw repaints everything. False when it already was.
    @discardableResult
    public func setColorMode(_ mode: ClockColorMode) -> Bool {
        guard mode != colorMode else { return false }
        colorMode = mode
        needsFull = true
        return true
    }

    // MARK: what is shown (pure)

    /// The reading on screen (nil before the first update).
    public var reading: ClockReading? { model.reading }

    /// The time's colour (what the label names), independent of the background mode.
    public var timeColor: Color? { model.reading.map { colorMode.color(for: $0) } }

    /// The colour the background is filled with.
    public var backgroundColor: Color {
        if unsyncedShown == .hide { return theme.palette.background }
        switch backgroundMode {
        case .theme: return theme.palette.background
        case .time: return timeColor ?? theme.palette.background
        }
    }

    /// The colour text is drawn in on the current background (the palette's readable-text rule).
    public var textColor: Color { theme.palette.readableText(on: backgroundColor) }

    public var statusSummary: String {
        guard let r = model.reading else { return "clock (not started)" }
        return "\(r.text(hourFormat: hourFormat)) \(colorMode.color(for: r).hexString)"
    }

    // MARK: Scene

    public func layout(size: Size) {
        self.size = size
        fontsFor = nil
        stamps.removeAll()
        needsFull = true
    }

    public func apply(theme: Theme) {
        self.theme = theme
        fontsFor = nil
        stamps.removeAll()
        needsFull = true
    }

    public func didAppear(now: WallTime) {
        model.update(now: now)
        needsFull = true
    }

    public func clockDidUpdate(_ clock: ClockModel) {
        notified = true
        if unsyncedShown != .hide { dirty = true }
    }

    /// Feeds `now` to the model; true only when the shown second changed (never while the
    /// time is hidden).
    public func update(now: WallTime) -> Bool {
        notified = false
        model.update(now: now)
        return notified && unsyncedShown != .hide
    }

    /// How the time is shown differently now: nil when as usual (synchronised, or `ignore`).
    public var unsyncedShown: ClockUnsyncedDisplay? {
        timeSynchronized || unsynced == .ignore ? nil : unsynced
    }

    public func handle(_ event: InputEvent, now: WallTime) -> Bool { false }

    /// The next whole wall-clock second, exactly (no interval that could drift).
    public func nextDeadline(now: WallTime) -> Deadline? {
        .realtime(ClockModel.nextSecondBoundary(after: now.realtimeNs))
    }

    /// The boxes the time and the label are centred in.
    private var timeBox: (x: Double, y: Double, width: Double, height: Double) {
        let w = Double(size.width), h = Double(size.height)
        return (w * 0.05, h * (showLabel ? 0.22 : 0.3), w * 0.9, h * 0.4)
    }
    private var labelBox: (x: Double, y: Double, width: Double, height: Double) {
        let w = Double(size.width), h = Double(size.height)
        return (w * 0.2, h * 0.64, w * 0.6, h * 0.12)
    }

    private func fitFonts(_ canvas: Canvas) {
        guard fontsFor != size else { return }
        let tb = timeBox, lb = labelBox
        let sample = ClockReading(hours: 20, minutes: 08, seconds: 08).text(hourFormat: hourFormat)
        timePx = canvas.fittingSize(sample, theme.fonts.heading, maxPx: tb.height, width: tb.width, height: tb.height)
        labelPx = canvas.fittingSize("#D8D8D8", theme.fonts.body, maxPx: lb.height, width: lb.width, height: lb.height)
        fontsFor = size
    }

    /// One fill and two text runs. With the time's colour as background the whole screen
    /// changes every second (full damage); with the theme's background only the text does.
    public func draw(into canvas: Canvas) -> Damage {
        guard needsFull || dirty else { return Damage() }
        fitFonts(canvas)
        let bg = backgroundColor
        let full = needsFull || backgroundMode == .time
        var damage = Damage()
        let shown = unsyncedShown
        if full, let r = model.reading, shown == nil || shown == .mark {
            // The background and the text from stamps, each pixel written once (`compose`).
            let fg = textColor
            let time = stamps.placeRun(r.text(hourFormat: hourFormat), theme.fonts.heading, px: timePx, color: fg,
                                       in: timeBox, canvasSize: canvas.size)
            let label = showLabel
                ? stamps.placeRun(colorMode.color(for: r).hexString, theme.fonts.body, px: labelPx, color: fg,
                                  in: labelBox, canvasSize: canvas.size)
                : (placements: [], covered: Rect(x: 0, y: 0, width: 0, height: 0))
            let mark = shown == .mark
                ? UnsyncedClockDrawing.placeMark(stamps, canvasSize: canvas.size, theme: theme, background: bg, timeTop: timeBox.y)
                : (placements: [], covered: Rect(x: 0, y: 0, width: 0, height: 0))
            canvas.compose(Rect(size: canvas.size), background: bg, stamps: time.placements + label.placements + mark.placements)
            timeRect = time.covered
            labelRect = label.covered
            secondsRect = Rect(x: 0, y: 0, width: 0, height: 0)
            markRect = mark.covered
            needsFull = false
            dirty = false
            return Damage.full(canvas.size)
        }
        if full {
            canvas.clear(bg)
            damage = Damage.full(canvas.size)
        } else {
            for r in [timeRect, labelRect] where !r.isEmpty {
                canvas.fill(r, bg)
                damage.add(r)
            }
        }
        if let r = model.reading {
            let fg = textColor
            secondsRect = Rect(x: 0, y: 0, width: 0, height: 0)
            switch shown {
            case .hide:
                timeRect = canvas.drawText(UnsyncedClockDrawing.placeholder, theme.fonts.heading, px: timePx,
                                           color: UnsyncedClockDrawing.dimmed(fg, on: bg), in: timeBox)
            case .dimSeconds:
                (timeRect, secondsRect) = UnsyncedClockDrawing.drawDimmedSeconds(
                    r.text(hourFormat: hourFormat), on: canvas, font: theme.fonts.heading, px: timePx, color: fg,
                    dim: UnsyncedClockDrawing.dimmed(fg, on: bg), in: timeBox)
            default:
                // Character by character from stamps: a new second costs no text layout.
                timeRect = stamps.drawRun(r.text(hourFormat: hourFormat), theme.fonts.heading, px: timePx, color: fg, in: timeBox, on: canvas)
            }
            labelRect = showLabel && shown != .hide
                ? stamps.drawRun(colorMode.color(for: r).hexString, theme.fonts.body, px: labelPx, color: fg, in: labelBox, on: canvas)
                : Rect(x: 0, y: 0, width: 0, height: 0)
            // The mark stays put between full draws (it changes only with synchronisation).
            if full {
                markRect = shown == .mark || shown == .hide
                    ? UnsyncedClockDrawing.drawMark(on: canvas, theme: theme, background: bg, timeTop: timeBox.y)
                    : Rect(x: 0, y: 0, width: 0, height: 0)
            }
            if !full { damage.add(timeRect); damage.add(labelRect) }
        }
        needsFull = false
        dirty = false
        return damage.clipped(to: Rect(size: canvas.size))
    }
}

extension ClockScene: TimeTruthAware {
    /// Until the clock is synchronised it is shown as `unsynced` says; the next draw repaints.
    public func setTimeSynchronized(_ synchronized: Bool) -> Bool {
        guard synchronized != timeSynchronized else { return false }
        timeSynchronized = synchronized
        guard unsynced != .ignore else { return false }
        needsFull = true
        return true
    }
}

extension ClockScene: PixelShiftable {
    /// The time, the label and the mark, where they were drawn last.
    public var shiftContentBoxes: [Rect] { [timeRect, labelRect, markRect].filter { !$0.isEmpty } }
    public var shiftBackground: Color { backgroundColor }
}

extension ClockScene: FullFrameDrawing {
    /// With the time's colour as background every tick repaints the whole screen, so the
    /// scene manager draws it straight into the display's buffer.
    public var nextDrawRepaintsEverything: Bool { backgroundMode == .time && (needsFull || dirty) }
}
