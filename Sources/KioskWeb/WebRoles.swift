import KioskControl

/// What each role may do on the page. Every check of a role is here, so that a route cannot
/// forget one: viewers read, operators also change the kiosk, owners also manage devices, read
/// the log's recent errors and change settings.
extension WebRole {
    /// viewer 0 < operator 1 < owner 2.
    public var rank: Int {
        switch self {
        case .viewer: return 0
        case .operator: return 1
        case .owner: return 2
        }
    }

    /// Operates the kiosk: counters, scene, theme, blanking, paint, reload.
    public var mayOperate: Bool { rank >= WebRole.operator.rank }
    /// Pairs new devices, lists and revokes paired ones.
    public var mayManageDevices: Bool { self == .owner }
    /// Reads the log's recent warnings and errors.
    public var mayReadLog: Bool { self == .owner }
    /// Changes the kiosk's settings (the settings layer, `PATCH /api/settings`).
    public var mayChangeSettings: Bool { self == .owner }
}

/// The refusals of the page's routes by role (403, naming the device, its role and what it
/// would need).
public enum WebPermission {
    /// Why `device` may not carry out `command` (nil: it may).
    public static func refusal(_ command: ControlCommand, _ device: WebDevice) -> ControlResponse? {
        switch command {
        case .pair, .devices, .revokeDevice:
            guard device.role.mayManageDevices else { return ownerOnly(device, "pair and revoke devices") }
            return nil
        case .recentErrors:
            guard device.role.mayReadLog else { return ownerOnly(device, "read the log's recent errors") }
            return nil
        case .screenshot:
            return nil
        default:
            guard device.role.mayOperate || command.request.method == "GET" else {
                return .error(403, "device '\(device.name)' is a viewer: it may read but not change anything (pair it as operator to change)")
            }
            return nil
        }
    }

    /// The refusal of a settings change by `device` (nil: it may change settings): only owners may.
    public static func settingsRefusal(_ device: WebDevice) -> ControlResponse? {
        device.role.mayChangeSettings ? nil : ownerOnly(device, "change settings")
    }

    static func ownerOnly(_ device: WebDevice, _ what: String) -> ControlResponse {
        .error(403, "device '\(device.name)' is \(device.role == .operator ? "an" : "a") \(device.role.rawValue): only an owner may \(what) (kioskctl pair --role owner on the kiosk makes an owner code)")
    }
}
