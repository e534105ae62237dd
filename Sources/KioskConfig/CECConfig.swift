import KioskCEC
import KioskCore

extension DaemonConfig {
    /// A `cec` table (`[display.cec]` or an output's `[output.cec]`): `adapter = "auto" | "none" |
    /// "/dev/cecN"` (default `"none"`), `remote_keys = true | false` (default true) and a `keys`
    /// table binding remote keys to keyboard keys. Errors name file:line:key.
    static func parseCEC(_ t: ConfigTable) throws -> (CECAdapterChoice, CECRemoteKeyMap) {
        let s = try t.string("adapter") ?? "none"
        guard let choice = CECAdapterChoice(configValue: s) else {
            throw t.error("adapter", "expected \"auto\", \"none\" or a CEC device path like \"/dev/cec0\", got \(ConfigTable.quoted(s))")
        }
        var keys = CECRemoteKeyMap(enabled: try t.bool("remote_keys", default: true))
        if let k = try t.table("keys") {
            for name in k.keys {
                guard let ui = CECRemoteKeyName.uiCommand(named: name) else {
                    throw k.error(name, "unknown remote key \(ConfigTable.quoted(name)) (known: \(CECRemoteKeyName.known))")
                }
                let target = try k.string(name) ?? ""
                if target.lowercased() == "none" {
                    keys.overrides[ui] = .some(nil)
                    continue
                }
                guard let code = KeyCode.code(named: target) else {
                    throw k.error(name, "unknown key name \(ConfigTable.quoted(target)) (evdev names like KEY_UP, KEY_KP_PLUS or KEY_R, or \"none\")")
                }
                keys.overrides[ui] = code
            }
            try k.finish()
        }
        try t.finish()
        return (choice, keys)
    }

    /// Refuses two outputs naming the same CEC device (one adapter reaches one TV), blaming the
    /// second output's `[output.cec]`, or `[display.cec]` when both take it from there.
    static func checkCECAdapters(_ outputs: [OutputSettings], display: DisplaySettings, displayTable: ConfigTable?) throws {
        var seen: [String: OutputSettings] = [:]
        for o in outputs {
            guard case .path(let p) = o.cecChoice(display) else { continue }
            if let other = seen[p] {
                let why = "adapter \"\(p)\" is also the adapter of the output at \(other.location); each output needs its own (or \"auto\")"
                if o.cec == nil, let t = try displayTable?.table("cec") { throw t.error("adapter", why) }
                throw KioskError.config("\(o.location): key 'output[\(o.index)].cec.adapter': \(why)")
            }
            seen[p] = o
        }
    }
}

extension OutputSettings {
    /// The CEC adapter of this output: its `[output.cec]`, else `[display.cec]`.
    package func cecChoice(_ display: DisplaySettings) -> CECAdapterChoice { cec ?? display.cec }
    /// Its TV remote's keys: its `[output.cec]`'s, else `[display.cec]`'s.
    package func cecKeys(_ display: DisplaySettings) -> CECRemoteKeyMap { cecRemoteKeys ?? display.cecRemoteKeys }
}
