import KioskCore
import KioskRender

/// A display that only takes copies: a `HeadlessDisplay` without `DirectFrameDisplay`, so every
/// frame is drawn into the scene manager's canvas and its damage copied (the path partial frames
/// take, and every frame took before frames were drawn in place).
public final class CopyingDisplay: DisplayOutput {
    public let inner: HeadlessDisplay
    public init(_ inner: HeadlessDisplay) { self.inner = inner }
    public var displayDescription: String { "copying " + inner.displayDescription }
    public var logicalSize: Size? { inner.logicalSize }
    public var rotation: Rotation { inner.rotation }
    public var canPresent: Bool { inner.canPresent }
    public var onEvent: ((DisplayEvent) -> Void)? {
        get { inner.onEvent }
        set { inner.onEvent = newValue }
    }
    public func present(_ frame: PixelBuffer, damage: Damage) throws { try inner.present(frame, damage: damage) }
    public func setBlanked(_ blanked: Bool) throws { try inner.setBlanked(blanked) }
    public var isBlanked: Bool { inner.isBlanked }
    public func shutdown() { inner.shutdown() }
}
