import KioskCore
import KioskRender
import Logging

extension SceneManager {
    /// Draws the scene on screen once into a canvas of `size` that is never shown, while no
    /// display is connected: the fonts, the text shaping and the drawing code are loaded then,
    /// not when a display appears (the first frame of a fresh process costs far more than the
    /// next ones, seconds on a slow board). The scene is then told to repaint everything
    /// (`apply(theme:)`), and is laid out for the real size when the display comes.
    public func warmUp(size: Size) {
        guard frameSize == nil else { return }
        let scene = current
        do {
            let canvas = try Canvas(size: size)
            scene.layout(size: size)
            _ = scene.draw(into: canvas)
        } catch {
            logger.debug("no warm-up frame", metadata: ["size": "\(size)", "error": "\(error)"])
        }
        scene.apply(theme: theme)
    }
}
