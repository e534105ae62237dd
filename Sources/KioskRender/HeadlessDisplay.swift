import KioskCore

/// A display that keeps frames in memory: the physical framebuffer (rotated like a panel's),
/// with every present recorded. `kioskd --backend headless` shows scenes with it, and tests
/// assert on its pixels.
public final class HeadlessDisplay: DirectFrameDisplay, InPlaceFrameDisplay {
    public let modeSize: Size
    public let rotation: Rotation
    /// The physical framebuffer as a panel would scan it out.
    public let framebuffer: Canvas
    public var onEvent: ((DisplayEvent) -> Void)?
    public private(set) var isBlanked = false
    /// When true, each present leaves a "flip" pending until `completeFlip()` (to test frame pacing).
    public var simulateFlips = false
    public private(set) var flipPending = false
    public private(set) var presentCount = 0
    /// Damage of each present, oldest first (bounded to the last 1000).
    public private(set) var damageHistory: [Damage] = []
    /// Monotonic time of the latest present.
    public private(set) var lastPresentNs: Int64 = 0
    public private(set) var connected = true

    public init(size: Size, rotation: Rotation = .r0) throws {
        self.modeSize = size
        self.rotation = rotation
        // Its own memory, in huge pages where the kernel gives them (`FrameMemory`).
        let memory = try FrameMemory(size: size)
        self.framebuffer = try Canvas(wrapping: memory.buffer, owner: memory)
        framebuffer.clear(.black)
    }

    public var displayDescription: String { "headless \(modeSize) rotation \(rotation)" }
    public var logicalSize: Size? { connected ? rotation.logicalSize(physical: modeSize) : nil }
    public var canPresent: Bool { connected && !isBlanked && !flipPending }

    public func present(_ frame: PixelBuffer, damage: Damage) throws {
        guard connected else { throw KioskError.display("headless output is disconnected") }
        guard let logical = logicalSize, frame.size == logical else {
            throw KioskError.display("frame size \(frame.size) does not match the output's \(logicalSize.map { "\($0)" } ?? "none")")
        }
        let fb = framebuffer.pixels
        for r in damage.rects { blit(frame, into: fb, rect: r, rotation: rotation) }
        recordPresent(damage)
    }

    /// The framebuffer itself when it is not turned: the frame is drawn straight into it.
    public func beginFullFrame() -> PixelBuffer? {
        guard canPresent, rotation == .r0, logicalSize == modeSize else { return nil }
        lent = true
        return framebuffer.pixels
    }

    public func presentFullFrame() throws {
        guard lent else { throw KioskError.display("headless output: presentFullFrame() without beginFullFrame()") }
        lent = false
        guard connected else { throw KioskError.display("headless output is disconnected") }
        recordPresent(Damage.full(modeSize))
    }

    private var lent = false

    /// The framebuffer itself when it is not turned: every frame can be drawn in place in it.
    public var shownFrame: PixelBuffer? {
        guard connected, rotation == .r0, logicalSize == modeSize else { return nil }
        return framebuffer.pixels
    }

    public func presentInPlace(damage: Damage) throws {
        guard connected else { throw KioskError.display("headless output is disconnected") }
        guard shownFrame != nil else { throw KioskError.display("headless output: a turned output takes frames by copy, not in place") }
        recordPresent(damage)
    }

    private func recordPresent(_ damage: Damage) {
        framebuffer.markDirty(Rect(size: modeSize))
        presentCount += 1
        damageHistory.append(damage)
        if damageHistory.count > 1000 { damageHistory.removeFirst() }
        lastPresentNs = nowNanos(.monotonic)
        if simulateFlips { flipPending = true }
    }

    /// Completes a pending simulated flip and tells the manager the display is ready.
    public func completeFlip() {
        guard flipPending else { return }
        flipPending = false
        onEvent?(.ready)
    }

    public func setBlanked(_ blanked: Bool) throws {
        guard blanked != isBlanked else { return }
        isBlanked = blanked
        if !blanked { onEvent?(.needsFullRedraw) }
    }

    /// Simulates unplugging (false) and plugging back (true) the output.
    public func setConnected(_ c: Bool) {
        guard c != connected else { return }
        connected = c
        onEvent?(c ? .needsFullRedraw : .inactive)
    }

    /// The colour of a physical framebuffer pixel.
    public func color(x: Int, y: Int) -> Color { framebuffer.color(x: x, y: y) }

    /// Writes the physical framebuffer as PNG.
    public func writePNG(to path: String) throws { try framebuffer.writePNG(to: path) }

    public func shutdown() { connected = false }
}
