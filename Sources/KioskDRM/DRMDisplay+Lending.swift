import KioskCore

/// Where a DRM output's frames are drawn. A frame that repaints everything on an output that is
/// not turned goes straight into the back buffer (no copy; the buffer's age does not matter).
/// Every other frame is drawn into a logical-size frame in ordinary memory (`copied`), made on
/// first use, whose damage `present(_:damage:)` copies into the back buffer with the buffer's
/// age and turned by `rotation`: scan-out memory is slow to read on most boards, so partial
/// frames are not drawn there. After frames that went straight to the back buffer, the copy
/// lends itself as missing everything, and the next frame repaints it.
extension DRMDisplay {
    public func lendFrame(repaintsEverything: Bool) throws -> FrameTarget? {
        guard canPresent, let logical = logicalSize else { return nil }
        if repaintsEverything, let buffer = beginFullFrame() {
            copied.missedFrame()
            return FrameTarget(pixels: buffer, missed: .full(logical), slowToRead: true, isCopy: false)
        }
        return try copied.lend(size: logical)
    }

    public func presentLent(damage: Damage) throws {
        if hasLentBuffer {
            guard !damage.isEmpty else {
                takeBackLentBuffer()
                return
            }
            try presentFullFrame()
            return
        }
        guard !damage.isEmpty else { return }
        guard let frame = copied.memory?.buffer else {
            throw KioskError.display("\(displayDescription): presentLent(damage:) without a lent frame")
        }
        try present(frame, damage: damage)
    }

    /// The back buffer itself, for a frame drawn straight into it (no copy): only when the
    /// output is not turned. The frame covers the whole screen, so the buffer's age does not
    /// matter, and the other buffers will miss all of it.
    func beginFullFrame() -> PixelBuffer? {
        guard rotation == .r0, output != nil, device != nil, canPresent,
              let job = flips.beginFrame(Damage.full(flips.logicalSize)) else { return nil }
        held = .lent(onScreen: held.onScreen, index: job.index, modeset: job.modeset)
        lastCopiedPixels = 0
        return buffers[job.index].pixels
    }

    func presentFullFrame() throws {
        guard case .lent(let onScreen, let index, let modeset) = held else {
            throw KioskError.display("presentFullFrame() without beginFullFrame()")
        }
        held = .idle(onScreen: onScreen)
        let job = (index: index, modeset: modeset)
        guard output != nil, device != nil, job.index < buffers.count else {
            throw KioskError.display("the output went away while a frame was drawn into its buffer")
        }
        try submit(index: job.index, modeset: job.modeset)
    }

    /// Whether a back buffer is lent to a full frame (`beginFullFrame`).
    var hasLentBuffer: Bool {
        if case .lent = held { return true }
        return false
    }

    /// Takes a lent back buffer back unshown: it holds a frame that never went out.
    func takeBackLentBuffer() {
        guard case .lent(let onScreen, let index, _) = held else { return }
        held = .idle(onScreen: onScreen)
        flips.frameFailed(index)
    }
}

extension DRMDisplay {
    /// What the kernel holds of this head's buffers and what is in flight, as one value: a flip
    /// cannot be queued while another waits for its retry or a buffer is lent, and the timers
    /// live with the state they belong to.
    enum Held {
        /// Nothing in flight; `onScreen` is scanned out (nil: nothing of ours, e.g. the console).
        case idle(onScreen: (any ScanoutBuffer)?)
        /// Buffer `index` is lent to a full frame (`beginFullFrame`), to go out by mode set or flip.
        case lent(onScreen: (any ScanoutBuffer)?, index: Int, modeset: Bool)
        /// The flip to buffer `index` was refused with EBUSY `attempts` times; `timer` tries again.
        case retrying(onScreen: (any ScanoutBuffer)?, index: Int, timer: TimerID, attempts: Int)
        /// A flip of CRTC `crtc` to `buffer` is queued; `watchdog` gives it up when its event does not come.
        case queued(onScreen: (any ScanoutBuffer)?, buffer: any ScanoutBuffer, crtc: UInt32, watchdog: TimerID?)

        var onScreen: (any ScanoutBuffer)? {
            switch self {
            case .idle(let b), .lent(let b, _, _), .retrying(let b, _, _, _), .queued(let b, _, _, _): return b
            }
        }
        /// The buffer of the queued flip, if any.
        var queued: (any ScanoutBuffer)? {
            if case .queued(_, let b, _, _) = self { return b }
            return nil
        }
    }
}
