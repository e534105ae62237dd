import KioskCore

/// A scene whose content stands still on a plain background (the clock, the counter), so that
/// the pixel orbit may move it against burn-in. The scene draws as always, at offset zero; the
/// scene manager moves the result (a painting is not such a scene: it must not move under the
/// finger).
public protocol PixelShiftable: Scene {
    /// Where the scene's content is after its last draw (logical pixels, at offset zero), as a
    /// few boxes; outside them the frame is only `shiftBackground`.
    var shiftContentBoxes: [Rect] { get }
    /// The plain colour around the content; it also fills the place the content moved away from.
    var shiftBackground: Color { get }
}
