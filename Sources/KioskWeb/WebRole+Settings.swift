import Foundation
import KioskControl
import KioskCore

extension WebRole {
    /// Whether a device of this role may change the settings layer (`PATCH /api/settings`).
    /// Every settings permission is decided here, and only here.
    public var mayChangeSettings: Bool { self == .operator }
}

extension WebResponder {
    /// `PATCH /api/settings` from a paired device: refused unless its role may change settings
    /// (`WebRole.mayChangeSettings`); otherwise the change, named as the device's ("set from the
    /// phone by DEVICE"), whatever the body says.
    static func settingsChange(_ command: ControlCommand, _ device: WebDevice) -> SettingsDecision? {
        guard case .changeSettings(var change) = command else { return nil }
        guard device.role.mayChangeSettings else {
            return .refuse(.error(403, "device '\(device.name)' is a \(device.role.rawValue): it may not change settings"))
        }
        change.source = .phone(device.name, at: Int64(time(nil)))
        return .run(.changeSettings(change))
    }

    enum SettingsDecision: Equatable {
        case run(ControlCommand)
        case refuse(ControlResponse)
    }
}
