import KioskCore
import KioskDRM
import KioskInput
import KioskRender
import Logging
import KioskPosix

/// Makes the display and input for a config: DRM/KMS + libinput, or the headless backend (no input).
public enum Backends {
    /// The display for `settings` (`DRMDisplay` or `HeadlessDisplay`), living on `loop`.
    public static func makeDisplay(_ settings: DisplaySettings, loop: EventLoop, logger: Logger) throws -> DisplayOutput {
        switch settings.backend {
        case .headless:
            return try HeadlessDisplay(size: settings.headlessSize, rotation: settings.rotation)
        case .drm:
            let api: DRMOptions.API
            switch settings.api {
            case .auto: api = .auto
            case .atomic: api = .atomic
            case .legacy: api = .legacy
            }
            let options = DRMOptions(device: settings.device, output: settings.output, mode: settings.mode,
                                     rotation: settings.rotation, buffers: settings.buffers, api: api)
            return try DRMDisplay(options: options, loop: loop, logger: logger)
        }
    }

    /// The input for `config` (libinput on the seat for the DRM backend; nil for headless).
    public static func makeInput(_ config: DaemonConfig, rotation: Rotation, loop: EventLoop, logger: Logger) throws -> InputSource? {
        guard config.display.backend == .drm else { return nil }
        let options = InputOptions(seat: config.input.seat, calibration: config.input.calibration, rotation: rotation,
                                   mapToOutput: config.input.mapToOutput, pointerAsTouch: config.input.pointerAsTouch)
        return try LibInputSource(options: options, loop: loop, logger: logger)
    }

    /// Lets another program take the display (DRM master dropped, nothing presented) — SIGUSR1.
    /// No-op for the headless backend.
    public static func releaseDisplay(_ display: DisplayOutput) {
        (display as? DRMDisplay)?.releaseMaster()
    }

    /// Takes the display back (DRM master, full mode set and repaint) — SIGUSR2.
    public static func acquireDisplay(_ display: DisplayOutput) throws {
        try (display as? DRMDisplay)?.acquireMaster()
    }

    /// A text list of the DRM outputs (connectors, modes) for `kioskd --list-outputs`.
    public static func listOutputs(device: String?) throws -> String {
        try DRMDisplay.listOutputs(device: device)
    }
}
