#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore
import Logging

extension DRMCard {
    /// The device of node `path`: the file systemd kept over a restart when it is that device
    /// and still DRM master (the picture on it stays until the first mode set), else the node
    /// opened through the backend. Either is handed to systemd's store for the next start.
    func openOrTakeKept(_ path: String) throws -> any KMSDevice {
        guard let handover = backend.handover else { return try backend.open(path, api) }
        var taken: (any KMSDevice)?
        if let adopt = backend.adopt, let fd = handover.take(devicePath: path, logger: logger) {
            do {
                let dev = try adopt(fd, path, api)
                if !dev.isMaster { try? dev.setMaster() }
                if dev.isMaster {
                    taken = dev
                } else {
                    logger.warning("the DRM device kept by systemd is no longer DRM master; opening the card", metadata: ["drm.device": "\(path)"])
                    handover.discard(fd: fd)
                }
            } catch {
                logger.warning("cannot use the DRM device kept by systemd: \(error); opening the card", metadata: ["drm.device": "\(path)"])
            }
        }
        let dev = try taken ?? backend.open(path, api)
        if let fd = dev.descriptor { handover.store(fd: fd, logger: logger) }
        return dev
    }
}

extension DRMDeviceHandle {
    /// Removes the framebuffers a previous process left on this file (kept by systemd over a
    /// restart): every one not made here and not scanned out by a CRTC. Returns how many were
    /// removed; once none is left, later calls do nothing.
    @discardableResult
    func removeForeignFramebuffers() -> Int {
        guard adopted, let res = drmModeGetResources(fd) else { return 0 }
        defer { drmModeFreeResources(res) }
        let r = res.pointee
        let fbs = (0..<Int(r.count_fbs)).map { r.fbs[$0] }
        var shown = Set<UInt32>()
        for i in 0..<Int(r.count_crtcs) {
            guard let c = drmModeGetCrtc(fd, r.crtcs[i]) else { continue }
            shown.insert(c.pointee.buffer_id)
            drmModeFreeCrtc(c)
        }
        let foreign = fbs.filter { !framebuffers.contains($0) }
        var removed = 0
        for fb in foreign where !shown.contains(fb) {
            if drmModeRmFB(fd, fb) == 0 { removed += 1 }
        }
        if removed == foreign.count { adopted = false }
        return removed
    }

    /// Reads and drops the events waiting on a kept file (a flip the previous process queued
    /// completes within a frame): their user data points into that process.
    func discardPendingEvents() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<20 {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0, read(fd, &buffer, buffer.count) > 0 else { return }
        }
    }
}
