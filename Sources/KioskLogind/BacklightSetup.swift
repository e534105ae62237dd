import KioskCore
import KioskPosix

/// Opens the backlight a `[display] backlight` choice names, with the writer kioskd can use:
/// logind's SetBrightness when the process has a logind session (no privileges needed), else
/// sysfs directly (root, or the udev rule and group video). `note` says which and why, for the
/// log and `status`.
public enum BacklightSetup {
    public struct Result {
        public let backlight: Backlight
        public let note: String
    }

    /// - Parameters:
    ///   - hasSession: whether kioskd runs in a logind session (`LogindBacklightWriter.hasSession()`).
    ///   - busAddress: nil for the system bus (tests pass a private bus).
    /// - Returns: nil for `backlight = "none"`. Errors: no such device (naming what exists).
    public static func open(_ choice: BacklightChoice, loop: any KioskLoop, root: String = SysfsRoot.current(),
                            hasSession: Bool = LogindBacklightWriter.hasSession(),
                            busAddress: String? = nil) throws -> Result? {
        guard let device = try BacklightDevice.select(choice, root: root) else { return nil }
        if hasSession {
            do {
                let writer = try LogindBacklightWriter(deviceName: device.name, loop: loop, busAddress: busAddress)
                let b = Backlight(device: device, writer: writer)
                return Result(backlight: b, note: "backlight \(b.summary): through the logind session")
            } catch let e as KioskError {
                let b = Backlight(device: device, writer: SysfsBacklightWriter(device: device))
                return Result(backlight: b, note: "backlight \(b.summary): the system bus is not reachable (\(e.message)); writing \(device.brightnessPath) directly")
            }
        }
        let b = Backlight(device: device, writer: SysfsBacklightWriter(device: device))
        return Result(backlight: b, note: "backlight \(b.summary): no logind session; writing \(device.brightnessPath) directly (needs the udev rule and group video unless root)")
    }
}
