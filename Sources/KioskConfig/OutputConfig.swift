import KioskCEC
import KioskCore

/// One output kioskd drives: an `[[output]]` table, or the single `[display]` form (one output).
/// Each has its connector, mode and rotation, the scenes it shows in order, its theme and its
/// blanking; the device, API, buffers and backend of `[display]` are shared by all.
public struct OutputSettings: Sendable, Equatable {
    /// The connector (`HDMI-A-1`); nil (`"*"` or none written): the first connected one no
    /// other output names or has taken.
    public var connector: String?
    /// The DRM device: a path (`/dev/dri/by-path/…`), or a driver name (`"vc4"`); nil:
    /// `[display] device`, else the device that has `connector` (`DRMDeviceChoice`).
    public var device: String?
    /// `WxH` or `WxH@Hz`; nil: the preferred mode (headless: `[display] headless_size`).
    public var mode: String?
    public var rotation: Rotation = .r0
    /// The calibration matrix of the touch screens on this output (as `[input] calibration`);
    /// nil: `[input] calibration`.
    public var calibration: [Double]?
    /// The `[scene.NAME]` tables shown here, in order.
    public var scenes: [String] = []
    /// The theme shown here; nil: the config's `theme` (and `theme_schedule`).
    public var themeName: String?
    public var theme: Theme?
    /// `blank` (like `[display.blank]`); nil: `[display.blank]`'s.
    public var blankSchedule: [String]?
    public var wakeSeconds: Double?
    public var idleBlankSeconds: Double?
    /// `[output.cec] adapter`; nil: `[display.cec]`'s.
    public var cec: CECAdapterChoice?
    /// `[output.cec] remote_keys` and `keys`; nil: `[display.cec]`'s.
    public var cecRemoteKeys: CECRemoteKeyMap?
    /// Where it was written (errors naming an output point there).
    public var location: String = ""
    /// Its place among the outputs (0 = the first).
    public var index: Int = 0

    public init(connector: String? = nil, scenes: [String] = []) {
        self.connector = connector
        self.scenes = scenes
    }

    /// How commands and status name it: the connector written, else `output-N` (1-based).
    public var name: String { connector ?? "output-\(index + 1)" }

    /// The blanking settings of this output: `[display]`'s with this output's `blank` keys.
    public func blankSettings(_ display: DisplaySettings) -> DisplaySettings {
        var d = display
        if let s = blankSchedule { d.blankSchedule = s }
        if let w = wakeSeconds { d.wakeSeconds = w }
        if let i = idleBlankSeconds { d.idleBlankSeconds = i }
        return d
    }

    /// At most this many outputs (more CRTCs than any board kioskd runs on has).
    public static let maxOutputs = 8
}

extension DaemonConfig {
    /// What a connector name may be. With DRM it must be a connector of the card (checked at
    /// start, `kioskd --list-outputs`); the headless backend takes any name. Either way it names
    /// the output in commands, status, logs and MQTT topics: one line of printable text.
    static let connectorRule = "a connector name like \"HDMI-A-1\" (1…64 characters, no control characters or line breaks; "
        + "kioskd --list-outputs shows them)"

    /// Whether `s` can name a connector: 1…64 characters, none of them a control character
    /// (C0 with tab and line breaks, DEL, C1) or a Unicode line or paragraph separator.
    static func isConnectorName(_ s: String) -> Bool {
        (1...64).contains(s.unicodeScalars.count) && isPrintable(s)
    }

    /// Whether `s` has no control character (C0 with tab and line breaks, DEL, C1) and no
    /// Unicode line or paragraph separator.
    static func isPrintable(_ s: String) -> Bool {
        s.unicodeScalars.allSatisfy { c in
            !(c.value < 0x20 || (0x7F...0x9F).contains(c.value) || c.value == 0x2028 || c.value == 0x2029)
        }
    }

    /// What a device may be: a path, or a driver's name.
    static let deviceRule = "a DRM device: a driver name like \"vc4\" (1…64 characters) or a path like "
        + "\"/dev/dri/by-path/platform-1f00130000.dsi-card\" (no control characters; kioskd --list-outputs shows them)"

    /// The device under `key` of `t`, if written: a driver name (no `/`) as written, else a path
    /// (a relative one is taken from the config's directory, as other paths are).
    static func device(_ t: ConfigTable, _ key: String, resolve: (String) -> String = { $0 }) throws -> String? {
        guard let d = try t.string(key) else { return nil }
        guard d.contains(Character("/")) ? !d.isEmpty && d.utf8.count <= DaemonConfig.maxPath && isPrintable(d) : isConnectorName(d) else {
            throw t.error(key, "expected \(deviceRule), got \(d.isEmpty ? "an empty string" : ConfigTable.quoted(d))")
        }
        return d.contains(Character("/")) ? resolve(d) : d
    }

    /// The connector name under `key` of `t`, if written; anything else is refused naming the key.
    static func connector(_ t: ConfigTable, _ key: String) throws -> String? {
        guard let c = try t.string(key) else { return nil }
        guard isConnectorName(c) else {
            throw t.error(key, "expected \(connectorRule), got \(c.isEmpty ? "an empty string" : ConfigTable.quoted(c))")
        }
        return c
    }
}

/// A `[[input.device]]` rule: touch devices whose name or sysname matches `match` (a shell glob)
/// belong to `output`.
public struct InputDeviceRule: Sendable, Equatable {
    public var match: String
    public var output: String
    public init(match: String, output: String) { self.match = match; self.output = output }
}

extension DaemonConfig {
    /// The `[[output]]` tables of `root` (nil: none; the one output is `[display]`'s). `order`
    /// is the `[scenes] order` (the scenes an output without a `scenes` key shows); every defined
    /// scene must be shown by some output.
    static func parseOutputs(_ root: ConfigTable, displayTable: ConfigTable?, order: [String],
                             defined: [SceneDefinition], themeDirectory: String, headless: Bool) throws -> [OutputSettings]? {
        guard let tables = try root.tableArray("output") else { return nil }
        if let d = displayTable {
            for key in ["output", "mode", "rotation"] where d.has(key) {
                throw d.error(key, "with [[output]] tables each output has its own \(key == "output" ? "connector" : key); move it into an [[output]] table")
            }
        }
        let all = root.entries["output"]?.location
        guard !tables.isEmpty else {
            throw KioskError.config("\(all.map { "\($0)" } ?? root.location.description): key 'output': expected at least one [[output]] table")
        }
        guard tables.count <= OutputSettings.maxOutputs else {
            throw KioskError.config("\(tables[OutputSettings.maxOutputs].location): table '[[output]]': at most \(OutputSettings.maxOutputs) outputs")
        }
        var outputs: [OutputSettings] = []
        var connectorAt: [Int: String] = [:]
        for (i, t) in tables.enumerated() {
            var o = OutputSettings()
            o.index = i
            o.location = "\(t.location)"
            if let c = try t.string("connector") {
                if c.isEmpty { throw t.error("connector", "expected a connector name like \"HDMI-A-1\" or \"*\", got an empty string") }
                if c != "*" {
                    _ = try DaemonConfig.connector(t, "connector")
                    connectorAt[i] = t.entries["connector"].map { "\($0.location)" }
                    if let other = outputs.first(where: { $0.connector?.lowercased() == c.lowercased() }) {
                        throw t.error("connector", "connector \"\(c)\" is already used by the output at \(other.location)")
                    }
                    o.connector = c
                }
            }
            o.device = try DaemonConfig.device(t, "device")
            (o.mode, o.rotation) = try DaemonConfig.modeAndRotation(t, headless: headless)
            o.calibration = try DaemonConfig.calibration(t)
            if let names = try t.stringArray("scenes") {
                let nodes = try t.array("scenes") ?? []
                if names.isEmpty { throw t.error("scenes", "expected at least one scene name") }
                for (j, n) in names.enumerated() {
                    guard defined.contains(where: { $0.name == n }) else {
                        let known = defined.map(\.name)
                        throw KioskError.config("\(nodes[j].location): key '\(t.fullKey("scenes"))[\(j)]': no scene named \"\(n)\"; "
                            + (known.isEmpty ? "define one as a [scene.\(n)] table" : "scenes: \(known.joined(separator: ", "))"))
                    }
                    if names[..<j].contains(n) {
                        throw KioskError.config("\(nodes[j].location): key '\(t.fullKey("scenes"))[\(j)]': scene \"\(n)\" is listed twice")
                    }
                }
                o.scenes = names
            } else {
                o.scenes = order
            }
            if let name = try t.string("theme") {
                o.theme = try ThemeLoader.load(named: name, directory: themeDirectory, table: t, key: "theme")
                o.themeName = name
            }
            if let b = try t.table("blank") {
                let parsed = try DaemonConfig.parseBlank(b)
                o.blankSchedule = parsed.schedule
                o.wakeSeconds = parsed.wake
                o.idleBlankSeconds = parsed.idle
            }
            if let c = try t.table("cec") { (o.cec, o.cecRemoteKeys) = try DaemonConfig.parseCEC(c) }
            try t.finish()
            outputs.append(o)
        }
        // Commands, status and [[input.device]] name an output by its connector or `output-N`:
        // one name, one output.
        for (i, o) in outputs.enumerated() {
            guard let other = outputs[..<i].first(where: { $0.name.lowercased() == o.name.lowercased() }) else { continue }
            let (named, unnamed) = o.connector != nil ? (o, other) : (other, o)
            throw KioskError.config("\(connectorAt[named.index] ?? named.location): key 'output[\(named.index)].connector': connector \"\(named.connector ?? "")\" "
                + "is also the name of the output without a connector at \(unnamed.location) (outputs without one are called "
                + "output-N, N counted from 1); name that output's connector or use another name")
        }
        if let unused = defined.first(where: { d in !outputs.contains { $0.scenes.contains(d.name) } }) {
            throw KioskError.config("\(unused.table.location): table '[scene.\(unused.name)]': defined but shown by no output (add it to an [[output]] table's scenes)")
        }
        return outputs
    }

    /// A `blank` table (`[display.blank]` or an output's): schedule, wake and idle seconds.
    static func parseBlank(_ b: ConfigTable) throws -> (schedule: [String], wake: Double, idle: Double) {
        let sched = try b.stringArray("schedule") ?? []
        var periods: [BlankSchedule] = []
        for (i, p) in sched.enumerated() {
            let n = try b.array("schedule")?[i]
            let period: BlankSchedule
            do { period = try BlankSchedule(parsing: p) } catch let e as KioskError {
                throw KioskError.config("\(n?.location ?? b.location): key '\(b.fullKey("schedule"))[\(i)]': expected a period \"HH:MM-HH:MM\" (24 h, e.g. \"23:00-07:00\"): \(e.message)")
            }
            // Overlapping periods are a mistake (which end was meant?), also across midnight.
            if let j = periods.firstIndex(where: { $0.overlaps(period) }) {
                let joined = periods[j].joined(with: period).map { "; join them into one, like \"\($0)\"" } ?? "; together they blank the whole day"
                throw KioskError.config("\(n?.location ?? b.location): key '\(b.fullKey("schedule"))[\(i)]': blank period \"\(p)\" overlaps \"\(sched[j])\" "
                    + "(\(b.fullKey("schedule"))[\(j)]); blank periods must not overlap\(joined)")
            }
            periods.append(period)
        }
        let wake = try b.double("wake_seconds", default: 60, range: 0...86400)
        let idle = try b.double("idle_seconds", default: 0, range: 0...604800)
        try b.finish()
        return (sched, wake, idle)
    }

    /// `[[input.device]]` tables: each rule's output must be one of `outputs`.
    static func parseInputDevices(_ input: ConfigTable, outputs: [OutputSettings]) throws -> [InputDeviceRule] {
        guard let tables = try input.tableArray("device") else { return [] }
        return try tables.map { t in
            let match = try t.requiredString("match")
            if match.isEmpty { throw t.error("match", "expected a device name or sysname glob like \"ILITEK*\", got an empty string") }
            let output = try t.requiredString("output")
            guard outputs.contains(where: { $0.name.lowercased() == output.lowercased() }) else {
                throw t.error("output", "no output named \"\(output)\"; outputs: \(outputs.map(\.name).joined(separator: ", "))")
            }
            try t.finish()
            return InputDeviceRule(match: match, output: output)
        }
    }
}
