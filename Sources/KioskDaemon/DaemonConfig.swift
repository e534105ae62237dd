import Foundation
import KioskCore
import KioskScenes

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
    /// A DRM device path (`/dev/dri/card0`); nil: the seat's boot GPU.
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
    public var themeName: String
    public var theme: Theme
    public var themeDirectory: String
    /// Themes shown in daily periods instead of `theme` (the first matching period wins).
    public var themeSchedule: [ScheduledTheme] = []
    public var display = DisplaySettings()
    public var input = InputSettings()
    public var gestures = GestureThresholds()
    public var switching = SceneSwitching()
    /// Scene definitions in the order they are shown.
    public var scenes: [SceneDefinition] = []
    public var control: ControlSettings
    public var stateDirectory: String
    /// `state = "volatile"`: keep values in memory only (nothing is written).
    public var stateMode = StateMode.durable

    /// Longest control socket path (SwiftNIO's portable limit for `sun_path`).
    public static let maxSocketPath = 103

    /// Default config path.
    public static let defaultPath = "/etc/kioskd/kioskd.toml"

    /// Reads and checks the config file at `path`.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment,
                            kinds: [String] = SceneRegistry.standard.kinds) throws -> DaemonConfig {
        let root = try ConfigFile.load(path: path)
        return try DaemonConfig(root: root, file: path, environment: environment, kinds: kinds)
    }

    /// Checks a parsed config (`root`) from `file`.
    public init(root: ConfigTable, file: String, environment: [String: String] = [:],
                kinds: [String] = SceneRegistry.standard.kinds) throws {
        self.file = file
        let configDir = (file as NSString).deletingLastPathComponent
        func resolve(_ p: String) -> String {
            p.hasPrefix("/") || configDir.isEmpty ? p : (configDir as NSString).appendingPathComponent(p)
        }

        // Directories.
        let defaultThemeDir = environment["CONFIGURATION_DIRECTORY"].map { "\($0.split(separator: ":").first ?? "")/themes" }
            ?? (configDir.isEmpty ? "themes" : "\(configDir)/themes")
        // A configured theme_dir is relative to the config file; the default already is.
        themeDirectory = try root.string("theme_dir").map(resolve) ?? defaultThemeDir
        let defaultState = environment["STATE_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) } ?? "/var/lib/kioskd"
        stateDirectory = resolve(try root.string("state_dir", default: defaultState))
        if stateDirectory.isEmpty { throw root.error("state_dir", "expected a directory path, got an empty string") }
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
        if let t = try root.table("display") {
            display.backend = try t.choice("backend", default: DisplayBackend.drm)
            display.device = try t.string("device")
            display.output = try t.string("output")
            if let m = try t.string("mode") {
                guard DaemonConfig.parseMode(m) != nil else {
                    throw t.error("mode", "expected a mode like \"1920x1080\" or \"1920x1080@60\", got \"\(m)\"")
                }
                display.mode = m
            }
            let r = try t.int("rotation", default: 0)
            guard let rot = Rotation(degrees: r) else { throw t.error("rotation", "expected 0, 90, 180 or 270, got \(r)") }
            display.rotation = rot
            display.buffers = try t.int("buffers", default: 2, range: 2...3)
            display.api = try t.choice("api", default: DisplayAPIChoice.auto)
            if let s = try t.string("headless_size") {
                guard let size = DaemonConfig.parseSize(s), (16...8192).contains(size.width), (16...8192).contains(size.height) else {
                    throw t.error("headless_size", "expected WIDTHxHEIGHT with each side 16…8192, like \"1920x1080\", got \"\(s)\"")
                }
                display.headlessSize = size
            }
            if let b = try t.table("blank") {
                let sched = try b.stringArray("schedule") ?? []
                for (i, p) in sched.enumerated() {
                    do { _ = try BlankSchedule(parsing: p) } catch let e as KioskError {
                        let n = try b.array("schedule")?[i]
                        throw KioskError.config("\(n?.location ?? b.location): key '\(b.fullKey("schedule"))[\(i)]': expected a period \"HH:MM-HH:MM\" (24 h, e.g. \"23:00-07:00\"): \(e.message)")
                    }
                }
                display.blankSchedule = sched
                display.wakeSeconds = try b.double("wake_seconds", default: 60, range: 0...86400)
                display.idleBlankSeconds = try b.double("idle_seconds", default: 0, range: 0...604800)
                try b.finish()
            }
            try t.finish()
        }

        // [input]
        if let t = try root.table("input") {
            input.seat = try t.string("seat", default: "seat0")
            if let m = try t.doubleArray("calibration") {
                do { try InputTransform.validate(calibration: m) } catch let e as KioskError {
                    throw t.error("calibration", e.message)
                }
                input.calibration = m
            }
            input.mapToOutput = try t.string("map_to_output")
            input.pointerAsTouch = try t.bool("pointer_as_touch", default: true)
            input.cursor = try t.bool("cursor", default: false)
            try t.finish()
        }

        // [gestures]
        if let t = try root.table("gestures") {
            var g = GestureThresholds()
            g.tapMaxDuration = UInt64(try t.int("tap_max_ms", default: Int(g.tapMaxDuration / 1000), range: 1...10_000)) * 1000
            g.tapMaxMovement = try t.double("tap_max_movement", default: g.tapMaxMovement, range: 0.001...0.5)
            g.longPressDuration = UInt64(try t.int("long_press_ms", default: Int(g.longPressDuration / 1000), range: 1...60_000)) * 1000
            g.swipeMinDistance = try t.double("swipe_min_distance", default: g.swipeMinDistance, range: 0.01...1)
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

        // [control]
        let runtime = environment["RUNTIME_DIRECTORY"].flatMap { $0.split(separator: ":").first.map(String.init) } ?? "/run/kioskd"
        control = ControlSettings(socketPath: "\(runtime)/control.sock")
        if let t = try root.table("control") {
            control.socketPath = resolve(try t.string("socket", default: control.socketPath))
            if control.socketPath.utf8.count > DaemonConfig.maxSocketPath {
                throw t.error("socket", "path is \(control.socketPath.utf8.count) bytes long; the control socket path must be at most \(DaemonConfig.maxSocketPath) bytes")
            }
            control.mode = try t.int("mode", default: 0o660, range: 0...0o777)
            control.group = try t.string("group")
            try t.finish()
        }
        try root.finish()
    }

    /// The `[scene.NAME]` factories' keys are checked by making the scenes; see `SceneRegistry.make`.

    /// "1920x1080" → Size.
    public static func parseSize(_ s: String) -> Size? {
        let p = s.lowercased().split(separator: "x")
        guard p.count == 2, let w = Int(p[0]), let h = Int(p[1]), w > 0, h > 0 else { return nil }
        return Size(width: w, height: h)
    }

    /// "1920x1080" or "1920x1080@60" → (size, refresh or nil).
    public static func parseMode(_ s: String) -> (Size, Int?)? {
        let parts = s.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count <= 2, let size = parseSize(String(parts[0])) else { return nil }
        if parts.count == 2 {
            guard let r = Int(parts[1]), r > 0, r < 1000 else { return nil }
            return (size, r)
        }
        return (size, nil)
    }

    /// A key name or a list of key names → evdev codes.
    static func keys(_ t: ConfigTable, _ key: String) throws -> [UInt16] {
        guard let n = t.node(key) else { return [] }
        let names: [(String, SourceLocation, String)]
        switch n.value {
        case .string(let s): names = [(s, n.location, t.fullKey(key))]
        case .array(let a):
            names = try a.enumerated().map { i, e in
                guard case .string(let s) = e.value else {
                    throw KioskError.config("\(e.location): key '\(t.fullKey(key))[\(i)]': expected a key name like \"KEY_RIGHT\", got \(e.value.typeName)")
                }
                return (s, e.location, "\(t.fullKey(key))[\(i)]")
            }
        default:
            throw t.error(key, "expected a key name like \"KEY_RIGHT\" or a list of them, got \(n.value.typeName)")
        }
        return try names.map { name, loc, full in
            guard let c = KeyCode.code(named: name) else {
                throw KioskError.config("\(loc): key '\(full)': unknown key name \"\(name)\" (evdev names like KEY_RIGHT, KEY_SPACE, KEY_KP_PLUS)")
            }
            return c
        }
    }
}
