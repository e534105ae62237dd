import KioskCore
import KioskLogind
import KioskPosix
import Logging

/// The panel's backlight as the daemon drives it: the device, the writer (logind or sysfs), and
/// a fader that moves through the raw values in between. Runs on the event loop.
public final class PanelBacklight {
    public let backlight: Backlight
    /// Why this writer was chosen (for the log and `status`).
    public let note: String
    private var fader: BacklightFader
    private let logger: Logger
    /// The last write error (cleared by a good write; a logind refusal arrives later), for `status`.
    public internal(set) var lastError: String?

    init(backlight: Backlight, note: String, scheduler: any Scheduler, logger: Logger) {
        self.backlight = backlight
        self.note = note
        self.logger = logger
        let initial = (try? backlight.actualRaw()) ?? backlight.device.maxBrightness
        // A plain fader first, so that `self` is complete; then the one that reports errors.
        fader = BacklightFader(scheduler: scheduler, initial: initial, apply: { raw in try backlight.set(raw: raw) })
        fader = BacklightFader(scheduler: scheduler, initial: initial, apply: { [weak self] raw in
            do {
                try backlight.set(raw: raw)
                self?.failed(nil)
            } catch {
                self?.failed(error)
                throw error
            }
        })
    }

    private var reported = false
    private func failed(_ error: (any Error)?) {
        lastError = error.map { "\($0)" }
        guard let error else { reported = false; return }
        // One log line per run of failures: a fade would repeat it for every step.
        if !reported { logger.error("cannot set the backlight", metadata: ["error": "\(error)"]) }
        reported = true
    }

    public var device: BacklightDevice { backlight.device }
    public var method: String { backlight.writer.method }
    /// The raw value last written (or read at start).
    public var raw: Int { fader.current }
    public var percent: Double { BacklightLevel.percent(raw: raw, max: device.maxBrightness) }

    /// Moves to `percent` over `fadeNanos` (0: at once). `allowOff`: 0 % writes 0.
    public func set(percent: Double, fadeNanos: Int64, allowOff: Bool = false) {
        let target = BacklightLevel.raw(percent: percent, max: device.maxBrightness, allowOff: allowOff)
        if target == fader.current && !fader.isFading && lastError == nil { return }
        fader.fade(to: target, durationNanos: fadeNanos)
    }

    /// Writes `percent` at once and reports a failure to the caller (a control request).
    public func setNow(percent: Double, allowOff: Bool) throws {
        let target = BacklightLevel.raw(percent: percent, max: device.maxBrightness, allowOff: allowOff)
        fader.stop()
        do { try backlight.set(raw: target) } catch {
            lastError = "\(error)"
            throw error
        }
        lastError = nil
        fader.fade(to: target, durationNanos: 0) // records the value; nothing is written again
    }

    public func stop() { fader.stop() }

    /// Opens the backlight `choice` names with the writer kioskd can use (logind when it has a
    /// session and drives the real sysfs, else sysfs). nil with a log line when there is none.
    public static func open(_ choice: BacklightChoice, loop: any KioskLoop, sysfsRoot: String, hasSession: Bool?,
                     logger: Logger) -> PanelBacklight? {
        if choice == .none { return nil }
        do {
            // A test tree (KIOSK_SYSFS_ROOT) is never behind logind: logind writes the real sysfs.
            let session = sysfsRoot.isEmpty ? (hasSession ?? LogindBacklightWriter.hasSession()) : false
            guard let r = try BacklightSetup.open(choice, loop: loop, root: sysfsRoot, hasSession: session) else { return nil }
            logger.notice("\(r.note)")
            let panel = PanelBacklight(backlight: r.backlight, note: r.note, scheduler: loop, logger: logger)
            if let w = r.backlight.writer as? LogindBacklightWriter {
                // The reply comes later, on the loop: logged and kept for `status`.
                w.onError = { [weak panel] e in
                    panel?.lastError = e.message
                    logger.error("logind refused the backlight change", metadata: ["error": "\(e.message)"])
                }
            }
            return panel
        } catch {
            if choice == .auto {
                logger.info("no backlight control", metadata: ["reason": "\(error)"])
            } else {
                logger.error("no backlight control", metadata: ["error": "\(error)"])
            }
            return nil
        }
    }
}
