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
}
