import KioskCore
import KioskRender

/// A fleet follower's game clock (docs/scoreboard.md, "One clock on every screen"): the
/// primary's record ("running since realtime T with R left") is placed on this kiosk's
/// monotonic clock by the realtime clock, and placed again on the first frame after this
/// kiosk's realtime clock moved against its monotonic clock (set, stepped or slewed by more
/// than `wallStepNs`): what a frame shows is the primary's T seen from this kiosk's realtime
/// clock at that frame. One subtraction and a compare per frame.
extension CounterScene {
    /// A realtime clock that moved by more than this against the monotonic one places the
    /// follower's clock again.
    static let wallStepNs: Int64 = 1_000_000

    /// Shows the primary's `record` (a fleet follower): placed at `now` by the realtime clock.
    /// What happened on it before `now` (a period that ended before the record arrived) sounds
    /// no horn here. `warning` non-nil: shown in place of the time. False when the scene has no
    /// clock or the record cannot be placed (its error is then thrown).
    @discardableResult
    public func showFleetClock(_ record: GameClockRecord, now: WallTime, warning: String?) throws -> Bool {
        guard let p = clockPanel else { return false }
        _ = p.clock(at: now)
        let placed = try record.clockByWallTime(rules: p.rules, now: now).advanced(to: now).0
        p.set(placed)
        p.wall = record
        p.wallOffsetNs = now.realtimeNs - now.monotonicNs
        setClockWarning(warning)
        frameNs = now.monotonicNs
        return true
    }

    /// Shows `warning` in place of the game clock (nil: the time again).
    public func setClockWarning(_ warning: String?) {
        guard let p = clockPanel, p.warning != warning else { return }
        p.warning = warning
        p.needsFull = true
    }

    /// What is shown in place of the time (nil: the time is shown).
    public var clockWarning: String? { clockPanel?.warning }

    /// Whether the clock shown is placed from a fleet primary's record.
    public var clockFollowsFleet: Bool { clockPanel?.wall != nil }

    /// Places the follower's clock again when the realtime clock moved against the monotonic one
    /// since it was placed.
    func followWallClock(_ p: ClockPanel, now: WallTime) {
        guard let record = p.wall else { return }
        let offset = now.realtimeNs - now.monotonicNs
        guard abs(offset - p.wallOffsetNs) > Self.wallStepNs,
              let placed = try? record.clockByWallTime(rules: p.rules, now: now).advanced(to: now).0 else { return }
        p.set(placed)
        p.wallOffsetNs = offset
    }

    /// The warning in the clock's band: a dimmed `--:--` where the time would be and the
    /// warning's text under it, in the highlight colour.
    func drawClockWarning(_ canvas: Canvas, _ warning: String, damage: inout Damage) {
        guard let p = clockPanel else { return }
        let bg = theme.palette.background
        canvas.fill(p.band, bg)
        damage.add(p.band)
        let time = p.gameBox.isEmpty ? p.shotBox : p.gameBox
        if !time.isEmpty {
            _ = canvas.drawText(p.rules.showsGameClock ? "--:--" : "--", theme.fonts.heading, px: Double(time.height) * 0.7,
                                color: UnsyncedClockDrawing.dimmed(labelColor, on: bg),
                                in: (Double(time.x), Double(time.y), Double(time.width), Double(time.height)))
        }
        let b = p.periodBox.isEmpty ? p.band : p.periodBox
        _ = canvas.drawText(warning, theme.fonts.body, px: Double(b.height) * 0.6, color: UnsyncedClockDrawing.markColor(theme, on: bg),
                            in: (Double(b.x), Double(b.y), Double(b.width), Double(b.height)))
        p.drawnWarning = warning
        p.drawnGame = nil; p.drawnShot = nil; p.drawnPeriod = nil
        p.gameWindows = []; p.shotWindows = []
        p.needsFull = false
    }
}
