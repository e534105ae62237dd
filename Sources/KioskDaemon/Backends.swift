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

    /// One display per output of `config`, in order. Headless: a framebuffer per output (its
    /// `mode` as the size, else `headless_size`). DRM: one output is driven as before; several
    /// share one card (`DRMCard`), which assigns each a CRTC.
    public static func makeDisplays(_ config: DaemonConfig, loop: EventLoop, logger: Logger) throws -> [DisplayOutput] {
        let outputs = config.outputs
        if outputs.count == 1 {
            var settings = config.display
            settings.output = outputs[0].connector
            settings.mode = outputs[0].mode
            settings.rotation = outputs[0].rotation
            return [try makeDisplay(settings, loop: loop, logger: logger)]
        }
        switch config.display.backend {
        case .headless:
            return try outputs.map { o in
                let size = o.mode.flatMap { DaemonConfig.parseMode($0)?.0 } ?? config.display.headlessSize
                return try HeadlessDisplay(size: size, rotation: o.rotation)
            }
        case .drm:
            throw KioskError.display("several DRM outputs are not supported yet")
        }
    }

    /// The input for `config` (libinput on the seat for the DRM backend; nil for headless).
    public static func makeInput(_ config: DaemonConfig, rotation: Rotation, loop: EventLoop, logger: Logger) throws -> InputSource? {
        guard config.display.backend == .drm else { return nil }
        var options = InputOptions(seat: config.input.seat, calibration: config.input.calibration, rotation: rotation,
                                   mapToOutput: config.input.mapToOutput, pointerAsTouch: config.input.pointerAsTouch)
        if config.outputs.count > 1 {
            options.outputs = config.outputs.map { ($0.name, $0.rotation) }
            options.deviceRules = config.input.devices.map { ($0.match, $0.output) }
        }
        return try LibInputSource(options: options, loop: loop, logger: logger)
    }

    /// Lets another program take the displays (DRM master dropped, nothing presented) — SIGUSR1.
    /// No-op for the headless backend.
    public static func releaseDisplays(_ displays: [DisplayOutput]) {
        for d in displays { (d as? DRMDisplay)?.releaseMaster() }
    }

    /// Takes the displays back (DRM master, full mode set and repaint) — SIGUSR2.
    public static func acquireDisplays(_ displays: [DisplayOutput]) throws {
        for d in displays { try (d as? DRMDisplay)?.acquireMaster() }
    }

    /// A text list of the DRM outputs (connectors, modes) for `kioskd --list-outputs`.
    public static func listOutputs(device: String?) throws -> String {
        try DRMDisplay.listOutputs(device: device)
    }
}
