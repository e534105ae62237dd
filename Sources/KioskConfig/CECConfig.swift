import KioskCEC
import KioskCore

extension DaemonConfig {
    /// A `cec` table (`[display.cec]` or an output's `[output.cec]`): `adapter = "auto" | "none" |
    /// "/dev/cecN"` (default `"none"`). Errors name file:line:key.
    static func parseCEC(_ t: ConfigTable) throws -> CECAdapterChoice {
        let s = try t.string("adapter") ?? "none"
        guard let choice = CECAdapterChoice(configValue: s) else {
            throw t.error("adapter", "expected \"auto\", \"none\" or a CEC device path like \"/dev/cec0\", got \(ConfigTable.quoted(s))")
        }
        try t.finish()
        return choice
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
}
