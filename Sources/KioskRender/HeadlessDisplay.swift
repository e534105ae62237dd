import KioskCore

/// A display that keeps frames in memory: the physical framebuffer (rotated like a panel's),
/// with every present recorded. `kioskd --backend headless` shows scenes with it, and tests
/// assert on its pixels.
public final class HeadlessDisplay: DisplayOutput {
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
        // Not cleared: fresh anonymous pages are zero, which is black in XRGB8888 (the X byte
        // is not read). A clear would write all 8 MB of a 1080p frame (and take its page faults)
        // while the daemon is built, only for the first frame to write it again.
        self.framebuffer = try Canvas(wrapping: memory.buffer, owner: memory)
    }

    public var displayDescription: String { "headless \(modeSize) rotation \(rotation)" }
    public var logicalSize: Size? { connected ? rotation.logicalSize(physical: modeSize) : nil }
    public var canPresent: Bool { connected && !isBlanked && !flipPending }

    /// Copies `damage` of `frame` (logical size) into the framebuffer, turned by `rotation`.
    public func present(_ frame: PixelBuffer, damage: Damage) throws {
        guard connected else { throw KioskError.display("headless output is disconnected") }
        guard let logical = logicalSize, frame.size == logical else {
            throw KioskError.display("frame size \(frame.size) does not match the output's \(logicalSize.map { "\($0)" } ?? "none")")
        }
        let fb = framebuffer.pixels
        for r in damage.rects { blit(frame, into: fb, rect: r, rotation: rotation) }
        recordPresent(damage)
    }

    /// The framebuffer itself when it is not turned: it always holds the frame on screen and is
    /// ordinary memory, so every frame, partial ones too, is drawn in place (nothing missed, no
    /// frame-sized canvas besides it). A turned output lends a logical-size copy instead.
    public func lendFrame(repaintsEverything: Bool) throws -> FrameTarget? {
        guard canPresent, let logical = logicalSize else { return nil }
        guard rotation == .r0 else {
            lent = .copy
            return try copied.lend(size: logical)
        }
        lent = .framebuffer
        return FrameTarget(pixels: framebuffer.pixels, missed: Damage(), slowToRead: false, isCopy: false)
    }

    public func presentLent(damage: Damage) throws {
        guard let was = lent else { throw KioskError.display("headless output: presentLent(damage:) without lendFrame(repaintsEverything:)") }
        lent = nil
        guard !damage.isEmpty else { return }
        switch was {
        case .framebuffer:
            guard connected else { throw KioskError.display("headless output is disconnected") }
            recordPresent(damage)
        case .copy:
            guard let frame = copied.memory?.buffer else { throw KioskError.display("headless output: the lent copy of the frame is gone") }
            try present(frame, damage: damage)
        }
    }

    /// What the latest `lendFrame` lent, until it is presented.
    private var lent: Lent?
    private enum Lent { case framebuffer, copy }
    /// The logical-size frame lent when the output is turned.
    private let copied = CopiedFrame()

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
