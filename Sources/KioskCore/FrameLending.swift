/// The place a display lends for the next frame (`DisplayOutput.lendFrame(repaintsEverything:)`):
/// its pixels, what they do not show of the latest frame, and how they may be written.
public struct FrameTarget {
    /// Where the frame is drawn: logical size, XRGB8888, not turned.
    public var pixels: PixelBuffer
    /// What these pixels missed of the frame on screen since they last held it: empty when they
    /// hold it exactly (the next frame draws only its changes), the whole frame after frames
    /// went elsewhere or when the buffer is new (the next frame repaints everything).
    public var missed: Damage
    /// Scan-out memory, slow to read on most boards (write-combined): write once, front to back,
    /// blend in small cached surfaces, do not read back.
    public var slowToRead: Bool
    /// The pixels are a canvas the display keeps and copies the damage of into the buffer it
    /// shows (turned, or into scan-out memory); false: they are the shown buffer itself.
    public var isCopy: Bool

    public init(pixels: PixelBuffer, missed: Damage, slowToRead: Bool, isCopy: Bool) {
        self.pixels = pixels; self.missed = missed; self.slowToRead = slowToRead; self.isCopy = isCopy
    }
}

/// A logical-size frame in ordinary memory that a display lends when it cannot lend the buffer it
/// shows (a turned output, a partial frame on scan-out memory that is slow to read), and whose
/// damage it then copies into that buffer. Made on first use; it knows when it missed frames
/// that went to the screen without passing through it. All calls happen on the event loop's thread.
public final class CopiedFrame {
    /// The frame's memory (nil until first lent).
    public private(set) var memory: FrameMemory?
    /// Frames went to the screen without passing through this one since it was last lent.
    private var missedFrames = false

    public init() {}

    /// The frame as a target at `size` (made, or made again when the size changed): the whole
    /// frame is missed when it is new or missed frames. Throws when its memory cannot be had.
    public func lend(size: Size) throws -> FrameTarget {
        var fresh = missedFrames
        if memory?.buffer.size != size {
            memory = nil
            memory = try FrameMemory(size: size)
            fresh = true
        }
        missedFrames = false
        return FrameTarget(pixels: memory!.buffer, missed: fresh ? .full(size) : Damage(), slowToRead: false, isCopy: true)
    }

    /// A frame went to the screen without passing through this one: the next lend repaints it all.
    public func missedFrame() { missedFrames = true }
}
