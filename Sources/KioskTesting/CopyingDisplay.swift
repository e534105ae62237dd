import KioskCore
import KioskRender

/// A display that only takes copies: a `HeadlessDisplay` that lends a frame of its own (a
/// `CopiedFrame`) for every frame, never its framebuffer, and copies the frame's damage into the
/// framebuffer (the path partial frames take on a DRM output, and every frame took before frames
/// were drawn in place).
public final class CopyingDisplay: DisplayOutput {
    public let inner: HeadlessDisplay
    private let copied = CopiedFrame()
    public init(_ inner: HeadlessDisplay) { self.inner = inner }
    public var displayDescription: String { "copying " + inner.displayDescription }
    public var connectorName: String? { inner.connectorName }
    public var logicalSize: Size? { inner.logicalSize }
    public var rotation: Rotation { inner.rotation }
    public var canPresent: Bool { inner.canPresent }
    public var onEvent: ((DisplayEvent) -> Void)? {
        get { inner.onEvent }
        set { inner.onEvent = newValue }
    }
    public func lendFrame(repaintsEverything: Bool) throws -> FrameTarget? {
        guard canPresent, let size = logicalSize else { return nil }
        return try copied.lend(size: size)
    }
    public func presentLent(damage: Damage) throws {
        guard !damage.isEmpty else { return }
        guard let frame = copied.memory?.buffer else { throw KioskError.display("\(displayDescription): presentLent(damage:) without a lent frame") }
        try inner.present(frame, damage: damage)
    }
    public func setBlanked(_ blanked: Bool) throws { try inner.setBlanked(blanked) }
    public var isBlanked: Bool { inner.isBlanked }
    public func shutdown() { inner.shutdown() }
}
