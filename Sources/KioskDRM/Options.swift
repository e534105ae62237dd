import KioskCore

/// How the DRM output is chosen and driven.
public struct DRMOptions: Sendable {
    /// Which KMS interface to use.
    public enum API: String, Sendable, CaseIterable {
        /// Atomic when the driver offers it, legacy otherwise.
        case auto
        case atomic
        case legacy
    }
    /// Device node, e.g. "/dev/dri/card0"; nil = the first seat0 primary node found through udev.
    public var device: String?
    /// Connector name, e.g. "HDMI-A-1", "Virtual-1"; nil = the first connected.
    public var output: String?
    /// "1920x1080@60" or "1920x1080"; nil = the connector's preferred mode.
    public var mode: String?
    public var rotation: Rotation
    /// Number of scan-out buffers, 2 or 3.
    public var buffers: Int
    public var api: API

    public init(device: String? = nil, output: String? = nil, mode: String? = nil, rotation: Rotation = .r0,
                buffers: Int = 2, api: API = .auto) {
        self.device = device; self.output = output; self.mode = mode; self.rotation = rotation
        self.buffers = buffers; self.api = api
    }
}
