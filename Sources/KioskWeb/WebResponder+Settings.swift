import FoundationEssentials
import Glibc
import KioskControl
import KioskCore

extension WebResponder {
    /// `PATCH /api/settings` from a paired device: refused unless its role may change settings
    /// (`WebPermission.settingsRefusal`, `WebRole.mayChangeSettings`); otherwise the change,
    /// named as the device's ("set from the phone by DEVICE"), whatever the body says. Nil for
    /// other commands.
    static func settingsChange(_ command: ControlCommand, _ device: WebDevice) -> SettingsDecision? {
        guard case .changeSettings(var change) = command else { return nil }
        if let refusal = WebPermission.settingsRefusal(device) { return .refuse(refusal) }
        change.source = .phone(device.name, at: Int64(time(nil)))
        return .run(.changeSettings(change))
    }

    enum SettingsDecision: Equatable {
        case run(ControlCommand)
        case refuse(ControlResponse)
    }
}
