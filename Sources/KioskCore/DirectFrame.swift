/// A display that lends the buffer its next frame is shown from, so that a frame repainting
/// every pixel is drawn there directly instead of being drawn into the scene manager's canvas
/// and copied (half the cost of a full frame, and a frame-sized buffer less).
///
/// The lent buffer may be scan-out memory that is slow to read (write-combined on most
/// boards): what is drawn into it should be written once, front to back, with blending done
/// in small cached surfaces. All calls happen on the event loop's thread.
public protocol DirectFrameDisplay: DisplayOutput {
    /// The buffer the next frame goes out from (logical size, XRGB8888, not turned), to be
    /// repainted completely; nil when it cannot be lent now (a turned output, nothing
    /// connected, a flip pending). Each buffer handed out must be given back by
    /// `presentFullFrame()` before the next present.
    func beginFullFrame() -> PixelBuffer?
    /// Shows the buffer lent by `beginFullFrame()`: every pixel of it is new (the damage is the
    /// whole screen).
    func presentFullFrame() throws
}
