#if canImport(Glibc)
import Glibc
#endif
import CDRM
import KioskCore
import KioskPosix

/// Legacy modesetting: `drmModeSetCrtc` for mode sets, `drmModePageFlip` for flips and the
/// connector's DPMS property for blanking.
final class LegacyKMS: KernelKMS {
    let device: DRMDeviceHandle
    let events: DRMEvents
    let loop: any KioskLoop
    var watch: WatchID?
    var apiName: String { "legacy" }

    init(device: DRMDeviceHandle, loop: any KioskLoop) {
        self.device = device
        self.events = DRMEvents(device: device, atomic: false)
        self.loop = loop
    }

    deinit { unwatchEvents() }

    func prepare(_ output: KMSOutput) throws {}

    /// `drmModeSetCrtc`, then DPMS off when the output is to stay blanked.
    func modeset(_ output: KMSOutput, buffer: any ScanoutBuffer, active: Bool) throws {
        let what = what(output)
        guard var raw = output.mode.raw else { throw KioskError.display("\(what): mode has no kernel record") }
        var conn = output.connector.id
        let fd = device.fd, fb = buffer.fbID
        try device.call("drmModeSetCrtc(mode set)", what) { drmModeSetCrtc(fd, output.crtc.id, fb, 0, 0, &conn, 1, &raw) }
        device.removeForeignFramebuffers()
        if !active, let dpms = DRMProperties.read(fd: fd, object: output.connector.id, type: .connector)["DPMS"] {
            _ = drmModeConnectorSetProperty(fd, output.connector.id, dpms.id, UInt64(DRM_MODE_DPMS_OFF))
        }
    }

    /// `drmModePageFlip` with DRM_MODE_PAGE_FLIP_EVENT.
    func flip(_ output: KMSOutput, to buffer: any ScanoutBuffer) throws {
        let fd = device.fd, fb = buffer.fbID, user = events.user(crtc: output.crtc.id)
        try device.call("drmModePageFlip", what(output)) {
            drmModePageFlip(fd, output.crtc.id, fb, UInt32(DRM_MODE_PAGE_FLIP_EVENT), user)
        }
    }

    /// The connector's DPMS property (`drmModeConnectorSetProperty`).
    func setActive(_ output: KMSOutput, _ active: Bool) throws {
        let what = what(output)
        let fd = device.fd
        guard let dpms = DRMProperties.read(fd: fd, object: output.connector.id, type: .connector)["DPMS"] else {
            throw KioskError.display("\(device.path) \(output.connector.name): the connector has no DPMS property; cannot blank")
        }
        let value = UInt64(active ? DRM_MODE_DPMS_ON : DRM_MODE_DPMS_OFF)
        try device.call("drmModeConnectorSetProperty(DPMS \(active ? "on" : "off"))", what) {
            drmModeConnectorSetProperty(fd, output.connector.id, dpms.id, value)
        }
    }

    func restore(_ saved: SavedCrtc) throws { try restoreWithSetCrtc(saved) }
}
