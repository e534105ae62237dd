import FoundationEssentials
import Glibc
import KioskAudio
import KioskCEC
import KioskCore
import KioskDRM
import KioskFleet
import KioskMQTT
import KioskScenes
import KioskWeb

/// Which display backend shows the frames.
public enum DisplayBackend: String, Sendable, Equatable, CaseIterable {
    case drm, headless
}

/// Which DRM API to use.
public enum DisplayAPIChoice: String, Sendable, Equatable, CaseIterable {
    case auto, atomic, legacy
}

/// `[display]` and `[display.blank]`.
public struct DisplaySettings: Sendable, Equatable {
    public var backend: DisplayBackend = .drm
    /// The DRM device: a path (`/dev/dri/by-path/…`) or a driver name (`"vc4"`); nil: the
    /// seat's device with a connected output.
    public var device: String?
    /// A connector name (`HDMI-A-1`); nil: the first connected one.
    public var output: String?
    /// A mode like `1920x1080` or `1920x1080@60`; nil: the preferred mode.
    public var mode: String?
    public var rotation: Rotation = .r0
    /// Scan-out buffers (2 = double buffering, 3 = triple).
    public var buffers: Int = 2
    public var api: DisplayAPIChoice = .auto
    /// The headless backend's framebuffer size.
    public var headlessSize = Size(width: 1920, height: 1080)
    /// Blanking periods "HH:MM-HH:MM" (local time); empty: never blank on a schedule.
    public var blankSchedule: [String] = []
    /// How long a touch wakes a scheduled-blank screen, in seconds.
    public var wakeSeconds: Double = 60
    /// Blank after this many seconds without input; 0: never.
    public var idleBlankSeconds: Double = 0
    /// `[display.cec] adapter`: the TV follows the blanking over HDMI-CEC.
    public var cec: CECAdapterChoice = .none
    /// `[display.cec] remote_keys` and `keys`: what the TV remote's keys stand for.
    public var cecRemoteKeys = CECRemoteKeyMap()
    public init() {}
}

/// Top-level `state`: whether changes are saved in the state directory or kept in memory only.
public enum StateMode: String, Sendable, Equatable, CaseIterable {
    case durable, volatile
}

/// `[input]`.
public struct InputSettings: Sendable, Equatable {
    public var seat = "seat0"
    public var calibration: [Double]?
    public var mapToOutput: String?
    public var pointerAsTouch = true
    public var cursor = false
    /// `[[input.device]]`: which output a touch device belongs to.
    public var devices: [InputDeviceRule] = []
    /// The output keys and mice act on; nil: the first.
    public var keysOutput: String?
    public init() {}
}

/// `[control]`.
public struct ControlSettings: Sendable, Equatable {
    public var socketPath: String
    /// Permission bits of the socket file.
    public var mode: Int = 0o660
    /// Group owning the socket file; nil: the daemon's group.
    public var group: String?
    public init(socketPath: String) { self.socketPath = socketPath }
}

/// A theme shown during a daily period (`theme_schedule`), e.g. "night" from 22:00 to 07:00.
public struct ScheduledTheme: Equatable {
    public var name: String
    public var period: BlankSchedule
    public var theme: Theme
}

/// One `[scene.NAME]` table with its kind; its other keys are read by the kind's factory.
public struct SceneDefinition {
    public var name: String
    public var kind: String
    public var table: ConfigTable
}

/// The whole config file, checked: every key known, every value in range.
public struct DaemonConfig {
    public var file: String
    /// The file's tree, as read: each value with its file:line, and the defaults the checks took
    /// (`EffectiveConfig.values(of:)`).
    public var tree: ConfigTable
    /// The settings layer laid over the file's values (SettingsLayer.swift; empty: the file alone).
    public var settings = SettingsLayer()
    public var themeName: String
    public var theme: Theme
    public var themeDirectory: String
    /// Themes shown in daily periods instead of `theme` (the first matching period wins).
    public var themeSchedule: [ScheduledTheme] = []
    public var display = DisplaySettings()
    /// Backlight, brightness schedule, ambient sensor, pixel orbit (`[display]`, see WallConfig.swift).
    public var wall = WallDisplaySettings()
    public var input = InputSettings()
    public var gestures = GestureThresholds()
    public var switching = SceneSwitching()
    /// Scene definitions in the order they are shown (with several outputs: every scene some
    /// output shows, in the order first shown).
    public var scenes: [SceneDefinition] = []
    /// `[[output]]` tables; nil: one output, from `[display]`.
    public var outputTables: [OutputSettings]?
    /// The outputs driven: the `[[output]]` tables, or one output from `[display]`'s `output`,
    /// `mode` and `rotation` showing every scene. Never empty.
    public var outputs: [OutputSettings] {
        if let outputTables { return outputTables }
        var one = OutputSettings(connector: display.output, scenes: scenes.map(\.name))
        one.mode = display.mode
        one.rotation = display.rotation
        return [one]
    }
    public var control: ControlSettings
    /// `[web]`: the phone page's server (nil: none).
    public var web: WebSettings?
    public var stateDirectory: String
    /// `[fleet]`: counters shared with other kiosks of a group (needs `[mqtt]`).
    public var fleet: FleetSettings?
    /// Where the keys `checkSystem` and the start look at were written (the file alone for
    /// defaults): `state_dir`, `control.socket`, `control.group`, `display.device`,
    /// `display.output`, `display.mode`.
    public var keyLocations: [String: SourceLocation] = [:]
    /// `[mqtt]`: the broker and this kiosk's id; nil: MQTT is off.
    public var mqtt: MQTTConfig?
    /// `[audio]`: the horn's device and sound (AudioConfig.swift); nil: no sound.
    public var audio: AudioSettings?

    /// Longest path kioskd accepts (PATH_MAX without the terminating NUL).
    public static let maxPath = 4095
    /// The config format this kioskd reads (the optional top-level key `config_format`).
    public static let configFormat = 1
    /// `state = "volatile"`: keep values in memory only (nothing is written).
    public var stateMode = StateMode.durable

    /// Longest control socket path (SwiftNIO's portable limit for `sun_path`).
    public static let maxSocketPath = 103

    /// Default config path.
    public static let defaultPath = "/etc/kioskd/kioskd.toml"

    /// Reads and checks the config file at `path`; `kinds` are the scene kinds a `[scene.NAME]`
    /// table may name (the daemon's scene registry; KioskDaemon adds overloads that pass its own).
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                            kinds: [String], settings: SettingsLayer = SettingsLayer()) throws -> DaemonConfig {
        let root = try ConfigFile.load(path: path)
        try settings.apply(to: root)
        var c = try DaemonConfig(root: root, file: path, environment: environment, kinds: kinds)
        c.settings = settings
        return c
    }

    /// Checks a parsed config (`root`) from `file`; `kinds` as for `load`.
    public init(root: ConfigTable, file: String, environment: [String: String] = [:], kinds: [String]) throws {
        self.file = file
        self.tree = root
        // The config's format: a config written for a newer format is refused by name before any
        // of its keys could be taken for unknown ones.
        let format = try root.int("config_format", default: DaemonConfig.configFormat)
        guard format >= 1, format <= DaemonConfig.configFormat else {
            throw root.error("config_format", "this config is written for config format \(format); this kioskd \(KioskVersion.current) reads config format \(DaemonConfig.configFormat)\(format > DaemonConfig.configFormat ? ": install the kioskd it was written for, or edit it for this one" : "")")
        }
        let configDir = PathText.parent(of: file)
        func resolve(_ p: String) -> String {
            p.hasPrefix("/") || configDir.isEmpty ? p : PathText.appending(p, to: configDir)
        }
        /// A path key: not empty (an empty path would silently mean the config's folder), at
        /// most `maxPath` bytes once resolved.
        func path(_ t: ConfigTable, _ key: String, what: String) throws -> String? {
            guard let p = try t.string(key) else { return nil }
            if p.isEmpty { throw t.error(key, "expected \(what), got an empty string") }
            let r = resolve(p)
            if r.utf8.count > DaemonConfig.maxPath {
                throw t.error(key, "the path is \(r.utf8.count) bytes long; paths have at most \(DaemonConfig.maxPath) bytes")
            }
            return r
        }
        /// A string key that may not be empty.
        func word(_ t: ConfigTable, _ key: String, what: String) throws -> String? {
            guard let s = try t.string(key) else { return nil }
            if s.isEmpty { throw t.error(key, "expected \(what), got an empty string") }
            return s
        }

        // Directories.
        let defaultThemeDir = environment["CONFIGURATION_DIRECTORY"].map { "\($0.split(separator: ":").first ?? "")/themes" }
            ?? (configDir.isEmpty ? "themes" : "\(configDir)/themes")
        // A configured theme_dir is relative to the config file; the default already is.
        themeDirectory = try path(root, "theme_dir", what: "a directory path") ?? defaultThemeDir
        let defaultState = environment["STATE_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) } ?? "/var/lib/kioskd"
        stateDirectory = try path(root, "state_dir", what: "a directory path") ?? defaultState
        keyLocations["state_dir"] = root.entries["state_dir"]?.location ?? root.location
        stateMode = try root.choice("state", default: StateMode.durable)

        // Theme.
        themeName = try root.string("theme", default: "default")
        theme = try ThemeLoader.load(named: themeName, directory: themeDirectory, table: root, key: "theme")
        if let entries = try root.tableArray("theme_schedule") {
            for e in entries {
                let name = try e.requiredString("theme")
                let periodText = try e.requiredString("period")
                let period: BlankSchedule
                do { period = try BlankSchedule(parsing: periodText) } catch let err as KioskError {
                    throw e.error("period", "expected a period \"HH:MM-HH:MM\" (24 h, e.g. \"22:00-07:00\"): \(err.message)")
                }
                let t = try ThemeLoader.load(named: name, directory: themeDirectory, table: e, key: "theme")
                try e.finish()
                themeSchedule.append(ScheduledTheme(name: name, period: period, theme: t))
            }
        }

        // [display]
        let displayTable = try root.table("display")
        if let t = displayTable {
            display.backend = try t.choice("backend", default: DisplayBackend.drm)
            display.device = try DaemonConfig.device(t, "device", resolve: resolve)
            display.output = try DaemonConfig.connector(t, "output")
            (display.mode, display.rotation) = try DaemonConfig.modeAndRotation(t, headless: display.backend == .headless)
            // Where the device, connector and mode found (or not) at start were asked for.
            for key in ["device", "output", "mode"] { keyLocations["display.\(key)"] = t.entries[key]?.location ?? t.location }
            display.buffers = try t.int("buffers", default: 2, range: 2...3)
            display.api = try t.choice("api", default: DisplayAPIChoice.auto)
            if let s = try t.string("headless_size") {
                guard let size = DaemonConfig.parseSize(s), DaemonConfig.headlessSides.contains(size.width),
                      DaemonConfig.headlessSides.contains(size.height) else {
                    throw t.error("headless_size", "expected WIDTHxHEIGHT with each side 16…8192, like \"1920x1080\", got \"\(s)\"")
                }
                display.headlessSize = size
            }
            if let b = try t.table("blank") {
                (display.blankSchedule, display.wakeSeconds, display.idleBlankSeconds) = try DaemonConfig.parseBlank(b)
            }
            if let c = try t.table("cec") { (display.cec, display.cecRemoteKeys) = try DaemonConfig.parseCEC(c) }
            wall = try WallDisplaySettings.parse(t)
            try t.finish()
        }

        // [input] (its device rules and keys_output are checked against the outputs below)
        let inputTable = try root.table("input")
        if let t = inputTable {
            input.seat = try word(t, "seat", what: "a seat name like \"seat0\"") ?? "seat0"
            input.calibration = try DaemonConfig.calibration(t)
            input.mapToOutput = try DaemonConfig.connector(t, "map_to_output")
            input.pointerAsTouch = try t.bool("pointer_as_touch", default: true)
            input.cursor = try t.bool("cursor", default: false)
            input.keysOutput = try word(t, "keys_output", what: "an output's connector name like \"HDMI-A-1\"")
        }

        // [gestures]
        if let t = try root.table("gestures") {
            var g = GestureThresholds()
            let tapMs = try t.int("tap_max_ms", default: Int(g.tapMaxDuration / 1000), range: 1...10_000)
            let longMs = try t.int("long_press_ms", default: Int(g.longPressDuration / 1000), range: 1...60_000)
            // The limits depend on each other: blame the key that was written.
            if longMs <= tapMs {
                if t.has("long_press_ms") {
                    throw t.error("long_press_ms", "\(longMs) ms must be longer than gestures.tap_max_ms (\(tapMs) ms)")
                }
                throw t.error("tap_max_ms", "\(tapMs) ms must be shorter than gestures.long_press_ms (\(longMs) ms)")
            }
            g.tapMaxDuration = UInt64(tapMs) * 1000
            g.longPressDuration = UInt64(longMs) * 1000
            g.tapMaxMovement = try t.double("tap_max_movement", default: g.tapMaxMovement, range: 0.001...0.5)
            g.swipeMinDistance = try t.double("swipe_min_distance", default: g.swipeMinDistance, range: 0.01...1)
            if g.swipeMinDistance <= g.tapMaxMovement {
                if t.has("swipe_min_distance") {
                    throw t.error("swipe_min_distance", "\(g.swipeMinDistance) must be larger than gestures.tap_max_movement (\(g.tapMaxMovement))")
                }
                throw t.error("tap_max_movement", "\(g.tapMaxMovement) must be smaller than gestures.swipe_min_distance (\(g.swipeMinDistance))")
            }
            do { try g.validate() } catch let e as KioskError {
                throw KioskError.config("\(t.location): table '[gestures]': \(e.message)")
            }
            gestures = g
            try t.finish()
        }

        // [scene.NAME]
        var defined: [SceneDefinition] = []
        if let t = try root.table("scene") {
            for name in t.keys {
                guard let st = try t.table(name) else { continue }
                guard ConfigTable.isName(name) else {
                    let bare = !name.isEmpty && name.utf8.allSatisfy { c in (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") }
                    let shown = bare ? name : "\"\(ConfigTable.printable(name))\""
                    throw KioskError.config("\(st.location): key 'scene.\(shown)': a scene name has \(ConfigTable.nameRule), got \(ConfigTable.quoted(name))")
                }
                let kind = try st.requiredString("kind")
                guard kinds.contains(kind) else {
                    throw st.error("kind", "unknown scene kind \"\(kind)\"; kinds: \(kinds.sorted().joined(separator: ", "))")
                }
                defined.append(SceneDefinition(name: name, kind: kind, table: st))
            }
        }

        // [scenes]
        var order = defined.map(\.name)
        if let t = try root.table("scenes") {
            if let o = try t.stringArray("order") {
                let nodes = try t.array("order") ?? []
                for (i, n) in o.enumerated() {
                    guard defined.contains(where: { $0.name == n }) else {
                        let names = defined.map(\.name)
                        throw KioskError.config("\(nodes[i].location): key 'scenes.order[\(i)]': no scene named \"\(n)\"; "
                            + (names.isEmpty ? "define one as a [scene.\(n)] table" : "scenes: \(names.joined(separator: ", "))"))
                    }
                    if o[..<i].contains(n) {
                        throw KioskError.config("\(nodes[i].location): key 'scenes.order[\(i)]': scene \"\(n)\" is listed twice")
                    }
                }
                if o.isEmpty { throw t.error("order", "expected at least one scene name") }
                if let unused = defined.first(where: { !o.contains($0.name) }) {
                    throw KioskError.config("\(unused.table.location): table '[scene.\(unused.name)]': defined but not listed in scenes.order (\(t.location))")
                }
                order = o
            }
            switching.rotateSeconds = try t.double("rotate_seconds", default: 0, range: 0...86400)
            switching.nextKeys = try DaemonConfig.keys(t, "next_key")
            switching.previousKeys = try DaemonConfig.keys(t, "previous_key")
            switching.edgeSwipe = try t.bool("switch_swipe", default: false)
            try t.finish()
        }
        if defined.isEmpty {
            throw KioskError.config("\(file): no scene: add a table like [scene.clock] with kind = \"clock\"; kinds: \(kinds.sorted().joined(separator: ", "))")
        }
        scenes = order.map { n in defined.first { $0.name == n }! }

        // [[output]] (or the one output of [display])
        if let tables = try DaemonConfig.parseOutputs(root, displayTable: displayTable, order: order, defined: defined,
                                                      themeDirectory: themeDirectory, headless: display.backend == .headless) {
            outputTables = tables
            // Every scene some output shows, in the order first shown.
            var all: [String] = []
            for o in tables { for n in o.scenes where !all.contains(n) { all.append(n) } }
            scenes = all.map { n in defined.first { $0.name == n }! }
        }
        if let t = inputTable {
            let outs = outputTables ?? [OutputSettings(connector: display.output)]
            input.devices = try DaemonConfig.parseInputDevices(t, outputs: outs)
            if let k = input.keysOutput, !outs.contains(where: { $0.name.lowercased() == k.lowercased() }) {
                throw t.error("keys_output", "no output named \"\(k)\"; outputs: \(outs.map(\.name).joined(separator: ", "))")
            }
            try t.finish()
        }
        if let tables = outputTables { try DaemonConfig.checkCECAdapters(tables, display: display, displayTable: displayTable) }

        // [control]
        let runtime = environment["RUNTIME_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) } ?? "/run/kioskd"
        control = ControlSettings(socketPath: "\(runtime)/control.sock")
        if let t = try root.table("control") {
            control.socketPath = try path(t, "socket", what: "a socket path") ?? control.socketPath
            if control.socketPath.utf8.count > DaemonConfig.maxSocketPath {
                throw t.error("socket", "path is \(control.socketPath.utf8.count) bytes long; the control socket path must be at most \(DaemonConfig.maxSocketPath) bytes")
            }
            control.mode = try t.int("mode", default: 0o660, range: 0...0o777)
            control.group = try word(t, "group", what: "a group name")
            keyLocations["control.socket"] = t.entries["socket"]?.location ?? t.location
            keyLocations["control.group"] = t.entries["group"]?.location ?? t.location
            try t.finish()
        }
        // [web]
        web = try WebSettings.parse(root.table("web"))
        // [mqtt] (paths relative to the config file's folder)
        if let t = try root.table("mqtt") {
            var entries: [String: MQTTConfig.Entry] = [:]
            for k in t.keys {
                guard let n = t.node(k) else { continue }
                let v: MQTTConfig.Entry.Value
                switch n.value {
                case .string(let s): v = .string(k.hasSuffix("_file") && !s.isEmpty ? resolve(s) : s)
                case .int(let i): v = .integer(i)
                default: v = .other(n.value.typeName)
                }
                entries[k] = MQTTConfig.Entry(v, at: "\(n.location)")
            }
            mqtt = try MQTTConfig.parse(entries)
            try t.finish()
        }
        try DaemonConfig.readHomeAssistant(root, mqtt: &mqtt)
        if let t = try root.table("fleet") { fleet = try FleetSettings.read(t, hasMQTT: root.has("mqtt")) }
        if let t = try root.table("audio") { audio = try AudioSettings.parse(t, resolve: resolve) }
        try root.finish()
    }
}
