/// Maps a touch from the panel's native coordinates to the scene's logical coordinates.
///
/// Two steps, both on normalised coordinates (0…1 across the panel's native scan-out, origin
/// top-left):
/// 1. the calibration matrix `[a b c; d e f]` — the same 6-number form as udev's
///    `LIBINPUT_CALIBRATION_MATRIX` — gives `x' = a·x + b·y + c`, `y' = d·x + e·y + f`;
/// 2. the display rotation's inverse (`Rotation.physicalToLogical`), so the point is where the
///    user sees it on the upright picture.
///
/// Garbage handling: a non-finite coordinate (NaN, ±infinity) is dropped (`map` returns nil);
/// a finite point outside 0…1 (a touch on the bezel, a calibration that overshoots) is clamped
/// to the nearest edge, so a stroke that leaves the screen follows its border.
public struct InputTransform: Sendable, Equatable {
    /// The identity calibration: `1 0 0 0 1 0`.
    public static let identity: [Double] = [1, 0, 0, 0, 1, 0]

    /// Six numbers `a b c d e f`, already validated.
    public private(set) var calibration: [Double]
    /// How the picture is turned on the panel (from the display).
    public var rotation: Rotation

    /// A transform; throws a `.config` error naming what is wrong with `calibration`.
    public init(calibration: [Double] = InputTransform.identity, rotation: Rotation = .r0) throws {
        try InputTransform.validate(calibration: calibration)
        self.calibration = calibration
        self.rotation = rotation
    }

    /// Checks a calibration matrix: six finite numbers whose linear part is invertible
    /// (otherwise the whole panel would collapse onto a line or a point).
    public static func validate(calibration m: [Double]) throws {
        guard m.count == 6 else {
            throw KioskError.config("calibration matrix needs 6 numbers (a b c d e f, as in LIBINPUT_CALIBRATION_MATRIX), got \(m.count)")
        }
        let names = ["a", "b", "c", "d", "e", "f"]
        for (i, v) in m.enumerated() where !v.isFinite {
            throw KioskError.config("calibration matrix number \(i + 1) (\(names[i])) is \(v), expected a finite number")
        }
        let det = m[0] * m[4] - m[1] * m[3]
        if abs(det) < 1e-6 {
            throw KioskError.config("calibration matrix is singular (a·e − b·d = \(det)): it maps the whole panel onto a line or a point")
        }
    }

    /// The calibrated point, before rotation and clamping.
    public func calibrated(_ p: Point) -> Point {
        let m = calibration
        return Point(x: m[0] * p.x + m[1] * p.y + m[2], y: m[3] * p.x + m[4] * p.y + m[5])
    }

    /// A normalised physical point to the normalised logical point; nil when a coordinate is not finite.
    public func map(physical p: Point) -> Point? {
        guard p.x.isFinite, p.y.isFinite else { return nil }
        let c = calibrated(p)
        guard c.x.isFinite, c.y.isFinite else { return nil }
        let clamped = Point(x: min(max(c.x, 0), 1), y: min(max(c.y, 0), 1))
        return rotation.physicalToLogical(clamped)
    }
}
