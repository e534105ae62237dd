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

/// A display whose frame on screen sits in ordinary (cached) memory that is not turned, so the
/// scene manager can draw every frame in place, partial ones included, and keeps no frame canvas
/// of its own (a frame-sized buffer less). The headless display is one; DRM/KMS outputs are not:
/// their scan-out buffers are slow to read on most boards (write-combined) and there are two of
/// them, so partial frames are drawn into the canvas and their damage copied.
/// All calls happen on the event loop's thread.
public protocol InPlaceFrameDisplay: DisplayOutput {
    /// The buffer holding exactly the frame on screen (logical size, XRGB8888); nil when there
    /// is none that can be drawn into in place now (nothing connected, a turned output).
    var shownFrame: PixelBuffer? { get }
    /// Shows what was drawn into `shownFrame`: only `damage` changed since the previous present.
    func presentInPlace(damage: Damage) throws
}
