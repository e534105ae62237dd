import KioskCore
import Logging

/// A scan-out buffer: a framebuffer the kernel can show, mapped for the CPU. It is freed when the
/// last holder lets go, so whoever may still need it on screen keeps a reference.
public protocol ScanoutBuffer: AnyObject {
    /// The framebuffer id (`drmModeAddFB2`).
    var fbID: UInt32 { get }
    /// Physical size in pixels.
    var size: Size { get }
    /// The mapping, XRGB8888.
    var pixels: PixelBuffer { get }
}

/// The connector → CRTC → primary plane chain an output is driven through, and its mode.
public struct KMSOutput: Sendable, Equatable {
    public var connector: DRMConnector
    public var crtc: DRMCrtc
    public var mode: DRMMode
    public var plane: DRMPlane?
    public init(connector: DRMConnector, crtc: DRMCrtc, mode: DRMMode, plane: DRMPlane?) {
        self.connector = connector; self.crtc = crtc; self.mode = mode; self.plane = plane
    }
    /// "HDMI-A-1 1920x1080@60".
    public var name: String { "\(connector.name) \(mode)" }
}

/// What a CRTC showed before kioskd set its mode, to give it back at the end.
public struct SavedCrtc: Sendable, Equatable {
    public var crtc: UInt32
    /// The framebuffer it scanned out (0: none, the CRTC was off).
    public var fb: UInt32
    public var x: UInt32
    public var y: UInt32
    public var mode: DRMMode?
    public var connector: UInt32
    public init(crtc: UInt32, fb: UInt32, x: UInt32, y: UInt32, mode: DRMMode?, connector: UInt32) {
        self.crtc = crtc; self.fb = fb; self.x = x; self.y = y; self.mode = mode; self.connector = connector
    }
}

/// The outcome of waiting for device events.
public enum KMSWait: Sendable, Equatable {
    /// Events are waiting: call `dispatchEvents()`.
    case ready
    /// The time ran out.
    case timedOut
    /// A signal interrupted the wait (EINTR) before anything happened.
    case interrupted
}

/// The kernel side of one DRM device, as the display policy sees it: a snapshot of its KMS
/// objects, scan-out buffers, a mode set, a page flip with an event, active/blank, and giving
/// the CRTC found at start back. Two implementations talk to the kernel — `AtomicKMS` (atomic
/// commits) and `LegacyKMS` (SetCrtc, PageFlip, DPMS) — and tests use a fake.
///
/// Errors are `KioskError`s naming the call, the device and output, and keeping errno (EBUSY
/// from `flip` means a previous flip is still pending in the kernel; EACCES/EPERM that the
/// device is no longer ours). All calls happen on the event loop's thread.
public protocol KMSDevice: AnyObject {
    /// The device node, e.g. "/dev/dri/card0".
    var path: String { get }
    /// "atomic" or "legacy", for logs.
    var apiName: String { get }
    /// Whether this client is DRM master.
    var isMaster: Bool { get }
    /// Becomes DRM master; throws naming the device when another client holds it.
    func setMaster() throws
    /// Gives DRM master up so another client can set modes.
    func dropMaster()

    /// The device's connectors, encoders, CRTCs and planes now.
    func snapshot() throws -> DRMResources
    /// The connectors as the kernel last probed them, without probing again (cheap enough to
    /// poll); by default those of `snapshot()`.
    func currentConnectors() throws -> [DRMConnector]
    /// Checks that `output` can be driven by this interface (atomic: the properties it commits
    /// exist) before anything is shown on it.
    func prepare(_ output: KMSOutput) throws
    /// A new XRGB8888 scan-out buffer of `size`; `what` names device and output in errors.
    func makeBuffer(size: Size, what: String) throws -> any ScanoutBuffer

    /// Shows `buffer` on `output` with a full mode set, lit (`active`) or blanked.
    func modeset(_ output: KMSOutput, buffer: any ScanoutBuffer, active: Bool) throws
    /// Queues a flip of `output` to `buffer` at the next vertical blank, with a completion event
    /// (delivered by `dispatchEvents`).
    func flip(_ output: KMSOutput, to buffer: any ScanoutBuffer) throws
    /// Lights (true) or blanks (false) `output`, keeping its mode and buffer.
    func setActive(_ output: KMSOutput, _ active: Bool) throws
    /// Gives `saved` back: the CRTC shows the framebuffer, mode and connector it had, or is off.
    func restore(_ saved: SavedCrtc) throws

    /// Calls `handler` on the event loop whenever events wait (then `dispatchEvents()` reads them).
    func watchEvents(_ handler: @escaping () -> Void) throws
    func unwatchEvents()
    /// Reads the events that wait; returns the CRTC id of each page flip that completed, oldest
    /// first (the event of a flip queued on that CRTC by `flip`).
    func dispatchEvents() throws -> [UInt32]
    /// Waits up to `timeoutMs` for events (a `poll(2)` of the device); throws on failures other
    /// than EINTR, which is reported as `.interrupted`.
    func waitForEvents(timeoutMs: Int32) throws -> KMSWait

    /// The open file's descriptor, for systemd's store (`DRMHandover`); nil for devices that are
    /// not a kernel file.
    var descriptor: Int32? { get }
    /// From now on buffers freed leave their framebuffers on the file, so the picture stays
    /// once the process is gone and systemd holds the file.
    func keepFramebuffersOnClose()
}

extension KMSDevice {
    public func currentConnectors() throws -> [DRMConnector] { try snapshot().connectors }
    public var descriptor: Int32? { nil }
    public func keepFramebuffersOnClose() {}
}

/// How a `DRMDisplay` finds and opens devices: the kernel's (udev, /dev/dri) or a test's.
public struct KMSBackend {
    /// Opens the device node at `path` with the API asked for.
    public var open: (_ path: String, _ api: DRMOptions.API) throws -> any KMSDevice
    /// The device to use when none is configured (nil: none yet).
    public var pickDevice: () -> String?
    /// Starts following hotplug; `handler(action, node)` runs on the loop for each event.
    /// Returns what must stay alive while following (nil: no hotplug, said in `logger`).
    public var followHotplug: (_ logger: Logger, _ handler: @escaping (_ action: String, _ node: String) -> Void) -> AnyObject?
    /// Every device there is now, with its driver and connectors (`DRMDeviceChoice`).
    public var devices: () -> [DRMDeviceSummary]
    /// Takes a descriptor open on the device node (one systemd kept over a restart) with the API
    /// asked for; nil: this backend opens nodes only.
    public var adopt: ((_ fd: Int32, _ path: String, _ api: DRMOptions.API) throws -> any KMSDevice)?
    /// Where opened devices are stored over a restart and kept ones are taken from (nil: none).
    public var handover: DRMHandover?

    public init(open: @escaping (String, DRMOptions.API) throws -> any KMSDevice,
                pickDevice: @escaping () -> String? = { nil },
                followHotplug: @escaping (Logger, @escaping (String, String) -> Void) -> AnyObject? = { _, _ in nil },
                devices: @escaping () -> [DRMDeviceSummary] = { [] }) {
        self.open = open
        self.pickDevice = pickDevice
        self.followHotplug = followHotplug
        self.devices = devices
    }
}
