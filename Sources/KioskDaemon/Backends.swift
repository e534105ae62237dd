import KioskConfig
import KioskCore
import KioskDRM
import KioskInput
import KioskRender
import Logging
import KioskPosix

/// Makes the display and input for a config: DRM/KMS + libinput, or the headless backend (no input).
public enum Backends {
    /// The displays of the outputs, in order, and what they need kept alive while used (the
    /// DRM card several outputs share; it owns its heads, which only point back to it).
    public struct Displays {
        public var outputs: [DisplayOutput]
        public var owner: AnyObject?
    }

    /// The display for `settings` (`DRMDisplay` or `HeadlessDisplay`), living on `loop`.
    /// `kms`: how DRM devices are found and opened (nil: the kernel's; tests give a fake).
    public static func makeDisplay(_ settings: DisplaySettings, loop: any KioskLoop, logger: Logger, kms: KMSBackend? = nil) throws -> DisplayOutput {
        switch settings.backend {
        case .headless:
            return try HeadlessDisplay(size: settings.headlessSize, rotation: settings.rotation)
        case .drm:
            let options = DRMOptions(device: settings.device, output: settings.output, mode: settings.mode,
                                     rotation: settings.rotation, buffers: settings.buffers, api: api(settings.api))
            return try DRMDisplay(options: options, scheduler: loop, backend: kms ?? .kernel(loop: loop), logger: logger)
        }
    }

    /// One display per output of `config`, in order. Headless: a framebuffer per output (its
    /// `mode` as the size, else `headless_size`). DRM: each output's device is found
    /// (`devicePaths`); the outputs of one device share a card (`DRMCard`), which assigns each a
    /// CRTC; outputs on several devices get a card a device.
    /// A connector or mode the card does not have is a config error (exit status 78) naming
    /// where it was written.
    public static func makeDisplays(_ config: DaemonConfig, loop: any KioskLoop, logger: Logger, kms: KMSBackend? = nil) throws -> Displays {
        do {
            let made = try makeEachDisplay(config, loop: loop, logger: logger, kms: kms)
            // A card systemd kept over a restart that no display took now (another card configured).
            if kms == nil { DRMHandover.process.releaseUntaken(logger: logger) }
            return made
        } catch let e as MissingOutputPart {
            // The output whose connector or mode the card lacks, and the key that asked for it.
            let single = config.outputTables == nil
            let outputs = Array(config.outputs.enumerated())
            let asking: (index: Int, key: String)?
            switch e.asked {
            case .connector(let name):
                asking = outputs.first { $0.element.connector?.lowercased() == name.lowercased() }
                    .map { ($0.offset, single ? "display.output" : "output[\($0.offset)].connector") }
            case .mode(let request, let connector):
                let asked = outputs.filter { o in o.element.mode.flatMap { try? ModeRequest(parsing: $0) } == request }
                asking = (asked.first { $0.element.connector?.lowercased() == connector.lowercased() } ?? asked.first)
                    .map { ($0.offset, single ? "display.mode" : "output[\($0.offset)].mode") }
            }
            guard let asking else { throw KioskError.config("\(config.file): [display]: \(e)") }
            let location = single ? config.keyLocations[asking.key].map { "\($0)" } ?? "" : outputs[asking.index].element.location
            throw KioskError.config("\(location.isEmpty ? config.file : location): key '\(asking.key)': \(e)")
        }
    }

    private static func makeEachDisplay(_ config: DaemonConfig, loop: any KioskLoop, logger: Logger, kms: KMSBackend?) throws -> Displays {
        let outputs = config.outputs
        guard config.display.backend == .drm else {
            if outputs.count == 1 { return Displays(outputs: [try makeDisplay(singleOutput(config), loop: loop, logger: logger, kms: kms)]) }
            return Displays(outputs: try outputs.map { o in
                let size = o.mode.flatMap { DaemonConfig.parseMode($0)?.0 } ?? config.display.headlessSize
                return try HeadlessDisplay(size: size, rotation: o.rotation)
            })
        }
        let backend = kms ?? .kernel(loop: loop)
        let paths = try devicePaths(config, backend: backend)
        var devices: [String?] = []
        for p in paths where !devices.contains(p) { devices.append(p) }
        if outputs.count == 1 {
            var settings = singleOutput(config)
            settings.device = paths[0]
            let display = try makeDisplay(settings, loop: loop, logger: logger, kms: backend)
            (display as? DRMDisplay)?.takesDevice = follower(of: outputs[0], config: config, backend: backend)
            return Displays(outputs: [display])
        }
        // One card a device, each with its own DRM master, hotplug and flip events on the loop.
        var cards: [DRMCard] = []
        var displays = [DisplayOutput?](repeating: nil, count: outputs.count)
        for device in devices {
            let mine = outputs.indices.filter { paths[$0] == device }
            let path = devices.count > 1 ? device ?? backend.pickDevice() : device
            let card = try DRMCard(device: path, api: api(config.display.api), buffers: config.display.buffers,
                                   heads: mine.map { DRMHeadOptions(output: outputs[$0].connector, mode: outputs[$0].mode, rotation: outputs[$0].rotation) },
                                   scheduler: loop, backend: backend, logger: logger)
            for (i, head) in zip(mine, card.heads) { displays[i] = head }
            card.takes = follower(of: outputs[mine[0]], config: config, backend: backend)
            cards.append(card)
        }
        return Displays(outputs: displays.compactMap { $0 }, owner: cards.count == 1 ? cards[0] : DRMCards(cards))
    }

    /// The cards of outputs on several DRM devices, kept alive together.
    final class DRMCards {
        let cards: [DRMCard]
        init(_ cards: [DRMCard]) { self.cards = cards }
    }

    /// For an output whose device was named by driver or by-path name, or found by its connector:
    /// whether a node that appears is that device again (under another card number).
    private static func follower(of o: OutputSettings, config: DaemonConfig, backend: KMSBackend) -> ((String) -> Bool)? {
        let device = o.device ?? config.display.device
        guard device.map({ !$0.hasPrefix("/dev/dri/card") }) ?? (o.connector != nil) else { return nil }
        return { node in (try? DRMDeviceChoice.resolve(device: device, connector: o.connector, among: backend.devices())) == node }
    }

    /// `[display]` with the one output's connector, mode and rotation.
    private static func singleOutput(_ config: DaemonConfig) -> DisplaySettings {
        var settings = config.display
        settings.output = config.outputs[0].connector
        settings.mode = config.outputs[0].mode
        settings.rotation = config.outputs[0].rotation
        return settings
    }

    /// The device node of each output (nil: udev's seat0 pick), from its `device` (else `[display]
    /// device`), else the device that has its connector (`DRMDeviceChoice`). A device that no
    /// device or several fit is a config error naming where it was written.
    static func devicePaths(_ config: DaemonConfig, backend: KMSBackend) throws -> [String?] {
        let outputs = config.outputs
        let searched = outputs.contains { $0.device ?? config.display.device == nil && $0.connector != nil }
        let named = outputs.contains { o in (o.device ?? config.display.device).map { !$0.hasPrefix("/dev/dri/card") } ?? false }
        let found = searched || named ? backend.devices() : []
        let single = config.outputTables == nil
        return try outputs.enumerated().map { i, o in
            let device = o.device ?? config.display.device
            do {
                return try DRMDeviceChoice.resolve(device: device, connector: o.connector, among: found)
            } catch let e as DRMDeviceChoice.Failure {
                let key = o.device != nil ? "output[\(i)].device" : device != nil ? "display.device" : single ? "display.output" : "output[\(i)].connector"
                let at = key.hasPrefix("display.") ? config.keyLocations[key].map { "\($0)" } ?? config.file
                    : !o.location.isEmpty ? o.location : config.file
                throw KioskError.config("\(at): key '\(key)': \(e)")
            }
        }
    }

    static func api(_ choice: DisplayAPIChoice) -> DRMOptions.API {
        switch choice {
        case .auto: return .auto
        case .atomic: return .atomic
        case .legacy: return .legacy
        }
    }

    /// The input for `config` (libinput on the seat for the DRM backend; nil for headless).
    public static func makeInput(_ config: DaemonConfig, rotation: Rotation, loop: any KioskLoop, logger: Logger) throws -> InputSource? {
        guard config.display.backend == .drm else { return nil }
        var options = InputOptions(seat: config.input.seat, calibration: config.input.calibration, rotation: rotation,
                                   mapToOutput: config.input.mapToOutput, pointerAsTouch: config.input.pointerAsTouch)
        if config.outputs.count > 1 {
            options.outputs = config.outputs.map { ($0.name, $0.rotation, $0.calibration) }
            options.deviceRules = config.input.devices.map { ($0.match, $0.output) }
        }
        return try LibInputSource(options: options, loop: loop, logger: logger)
    }

    /// Lets another program take the displays (DRM master dropped, nothing presented) — SIGUSR1.
    /// No-op for the headless backend. Heads of one card release it together (once).
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
