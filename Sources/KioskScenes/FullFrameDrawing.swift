import KioskCore
import KioskRender

/// A scene that knows before drawing that its next `draw` repaints every pixel without reading
/// what the canvas held (a clock whose background changes every second). The scene manager
/// then lets it draw straight into the buffer the display shows next (`DirectFrameDisplay`),
/// with no frame canvas and no copy.
public protocol FullFrameDrawing: Scene {
    /// True when the next `draw(into:)` covers the whole canvas.
    var nextDrawRepaintsEverything: Bool { get }
}
