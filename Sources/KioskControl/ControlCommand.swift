import KioskCore
/// A request to the daemon, checked: every field present and of the right type. The server gets
/// one from `ControlRouter.parse`; a client turns one into its HTTP request with `request`.
public enum ControlCommand: Sendable, Equatable {
    case status
    case outputs
    /// The scene shown on output `output` (the config's connector name; nil: the first output).
    case scene(name: String, output: String? = nil)
    case theme(name: String)
    case counter(name: String, op: CounterOp, value: Int?)
    /// `name`: with save, the painting's file name in the paintings folder (nil: kioskd picks one).
    case paint(op: PaintOp, name: String?)
    /// Answers what the screen shows as PNG bytes; the client writes the file.
    case screenshot(output: String? = nil)
    case blank(on: Bool, output: String? = nil)
    case reload
    /// The backlight in percent: nil reads it, a value 0…100 sets it.
    case brightness(percent: Double?)
    /// A clock's colour mode (`color_mode`): of the clock scene `scene`, or of every clock scene when nil.
    case clockMode(mode: String, scene: String?)
    /// A change of a game clock (`kioskctl clock start|stop|set …`): of the counter scene
    /// `scene`, or of the first scene with a game clock when nil (docs/scoreboard.md).
    case clock(intent: ClockIntent, scene: String?)
    // The phone page's access and the data it shows (docs/web.md).
    /// A one-time pairing code for a phone with `role` ("owner", "operator" or "viewer"), shown on the
    /// kiosk's screen when `show`.
    case pair(role: String, show: Bool)
    /// Paired devices.
    case devices
    /// Revokes a paired device at once (its open live streams are closed).
    case revokeDevice(name: String)
    /// The log's recent warnings and errors (a bounded ring kept in memory).
    case recentErrors
    /// Theme names.
    case themes
    /// The colours of the theme on screen.
    case palette
    /// Saved paintings.
    case paintings
    /// One saved painting's PNG bytes.
    case painting(name: String)
    /// Sounds the horn (`[audio]`) now.
    case horn
    /// The effective config with each value's source (`GET /settings`).
    case settings
    /// A change of the settings layer (`PATCH /settings`): checked as the config file is,
    /// kept, then applied with a reload.
    case changeSettings(SettingsChange)

    public enum CounterOp: String, Sendable, Equatable, CaseIterable { case get, set, inc, dec, reset }
    public enum PaintOp: String, Sendable, Equatable, CaseIterable { case clear, undo, redo, save }
}

// MARK: request bodies (what a client sends; decoded and checked field by field in ControlBodies.swift)

/// `POST /scene`, `POST /theme`.
public struct NameRequest: Codable, Sendable, Equatable {
    public var name: String
    public init(name: String) { self.name = name }
}

/// `POST /counter/{name}/set`.
public struct CounterSetRequest: Codable, Sendable, Equatable {
    public var value: Int
    public init(value: Int) { self.value = value }
}

/// `POST /paint/save` with a file name.
public struct PaintSaveRequest: Codable, Sendable, Equatable {
    public var name: String?
    public init(name: String?) { self.name = name }
}

/// `POST /clock/mode`.
public struct ClockModeRequest: Codable, Sendable, Equatable {
    public var mode: String
    public var scene: String?
    public init(mode: String, scene: String? = nil) { self.mode = mode; self.scene = scene }
}

/// `POST /clock`: the words of `kioskctl clock` (`["set", "7:30"]`), read by `ClockIntent.parse`.
public struct ClockRequest: Codable, Sendable, Equatable {
    public var words: [String]
    public var scene: String?
    public init(words: [String], scene: String? = nil) { self.words = words; self.scene = scene }
}

/// `POST /blank`.
public struct BlankRequest: Codable, Sendable, Equatable {
    public var on: Bool
    public var output: String?
    public init(on: Bool, output: String? = nil) { self.on = on; self.output = output }
}

/// `POST /scene`: the scene, and the output it is shown on (nil: the first).
public struct SceneRequest: Codable, Sendable, Equatable {
    public var name: String
    public var output: String?
    public init(name: String, output: String? = nil) { self.name = name; self.output = output }
}

/// `POST /screenshot`: the output captured (nil: the first).
public struct OutputRequest: Codable, Sendable, Equatable {
    public var output: String?
    public init(output: String? = nil) { self.output = output }
}

/// `POST /brightness`.
public struct BrightnessRequest: Codable, Sendable, Equatable {
    public var percent: Double
    public init(percent: Double) { self.percent = percent }
}
