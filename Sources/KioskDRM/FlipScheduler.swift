import KioskCore

/// The page-flip state (Slint's PageFlipState): nothing on screen yet, a buffer on screen, or a
/// flip queued to a buffer that must not be touched until its event arrives.
public enum FlipState: Sendable, Equatable {
    /// Nothing shown by us yet (or the output was (re)configured): the next frame sets the mode.
    case needsModeset
    /// `front` is being scanned out; any other buffer may be drawn.
    case shown(front: Int)
    /// A flip to `to` is queued; `front` stays on screen until the event.
    case pending(front: Int?, to: Int)
}

/// Which scan-out buffer the next frame goes into and what must be copied into it: the page-flip
/// state plus buffer age (each buffer remembers the logical-space damage it missed), as plain values.
/// It never hands out the buffer on screen or the one a flip is queued to.
public struct FlipScheduler: Sendable, Equatable {
    public let count: Int
    public let logicalSize: Size
    public private(set) var state: FlipState = .needsModeset
    /// Damage each buffer has not received yet.
    public private(set) var missed: [Damage]
    /// The buffer the kernel scans out as far as known (last mode set or completed flip), kept
    /// when a mode set is needed: the CRTC still shows it then, so the next frame goes elsewhere.
    public private(set) var scannedOut: Int?
    /// The buffer a queued flip goes to, also while a mode set is needed.
    private var flipTarget: Int?

    /// `count` buffers that all miss the whole picture.
    public init(count: Int, logicalSize: Size) {
        precondition(count >= 2, "page flipping needs at least two buffers")
        self.count = count
        self.logicalSize = logicalSize
        self.missed = Array(repeating: Damage.full(logicalSize), count: count)
    }

    /// A new frame may be started (no flip is queued).
    public var canBegin: Bool {
        if case .pending = state { return false }
        return true
    }

    /// The buffer being scanned out, if any.
    public var front: Int? {
        switch state {
        case .needsModeset: return nil
        case .shown(let f): return f
        case .pending(let f, _): return f
        }
    }

    /// Damage that changed while no frame could be started: every buffer misses it.
    public mutating func remember(_ damage: Damage) {
        let d = damage.clipped(to: Rect(size: logicalSize))
        for i in missed.indices { missed[i].formUnion(d) }
    }

    /// Starts a frame with `damage`: the back buffer (the one after the front), what to copy into
    /// it (its missed damage, `damage` included), and whether it goes out by mode set. nil while a
    /// flip is queued (the damage is remembered). A mode set's frame does not go into the buffer
    /// the CRTC still scans out: drawing there would show on screen at once (or, on virtio-gpu,
    /// not until a flush), and a mode set that keeps the framebuffer shows nothing on virtio-gpu.
    public mutating func beginFrame(_ damage: Damage) -> (index: Int, copy: Damage, modeset: Bool)? {
        remember(damage)
        guard canBegin else { return nil }
        let index = (front ?? scannedOut).map { ($0 + 1) % count } ?? 0
        let copy = missed[index]
        missed[index] = Damage()
        return (index, copy, state == .needsModeset)
    }

    /// The frame in `index` went out by mode set and is on screen now.
    public mutating func shownByModeset(_ index: Int) {
        state = .shown(front: index)
        scannedOut = index
        flipTarget = nil
    }

    /// A flip to `index` was queued with an event.
    public mutating func flipQueued(_ index: Int) {
        state = .pending(front: front, to: index)
        flipTarget = index
    }

    /// The queued flip's event arrived: its buffer is the front now.
    public mutating func flipCompleted() {
        if case .pending(_, let to) = state { state = .shown(front: to) }
        if let t = flipTarget { scannedOut = t }
        flipTarget = nil
    }

    /// The queued flip's event will not come (timeout, device gone): keep the old front.
    public mutating func abandonFlip() {
        if case .pending(let f, _) = state { state = f.map { .shown(front: $0) } ?? .needsModeset }
        flipTarget = nil
    }

    /// The frame drawn into `index` was not shown: that buffer must get everything again.
    public mutating func frameFailed(_ index: Int) {
        missed[index] = Damage.full(logicalSize)
    }

    /// The next frame sets the mode again (hotplug, VT return, refused flip); with `full`, every
    /// buffer is repainted completely.
    public mutating func needModeset(full: Bool) {
        state = .needsModeset
        if full { missed = Array(repeating: Damage.full(logicalSize), count: count) }
    }
}
