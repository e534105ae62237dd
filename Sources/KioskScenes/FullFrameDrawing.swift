import KioskCore
import KioskRender

/// A scene that knows before drawing that its next `draw` repaints every pixel without reading
/// what the canvas held (a clock whose background changes every second). The scene manager
/// then asks the display to lend the buffer it shows next (`DisplayOutput.lendFrame` with
/// `repaintsEverything`), so the frame is drawn there with no frame canvas and no copy.
public protocol FullFrameDrawing: Scene {
    /// True when the next `draw(into:)` covers the whole canvas.
    var nextDrawRepaintsEverything: Bool { get }
}
