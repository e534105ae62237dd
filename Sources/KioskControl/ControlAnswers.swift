import FoundationEssentials

// The JSON answers of the control interface (docs/control.md, "HTTP API"). Property names are
// the wire keys in camel case (`sceneKind` is "scene_kind"); `nil` optionals are left out,
// except where a key is always present with `null` (`OutputInfo.logicalSize`).

/// `GET /status`.
public struct StatusAnswer: Codable, Sendable, Equatable {
    public struct FrameTimes: Codable, Sendable, Equatable {
        public var p50, p90, p99, max: Double
        public init(p50: Double, p90: Double, p99: Double, max: Double) { self.p50 = p50; self.p90 = p90; self.p99 = p99; self.max = max }
    }
    public struct InputDevice: Codable, Sendable, Equatable {
        public var name: String
        public var sysname: String
        public var capabilities: [String]
        public init(name: String, sysname: String, capabilities: [String]) { self.name = name; self.sysname = sysname; self.capabilities = capabilities }
    }
    /// Whether and where values are saved.
    public struct State: Codable, Sendable, Equatable {
        public var directory: String
        /// "durable", "volatile" or "not saved".
        public var mode: String
        public var durable: Bool
        public var reason: String?
        public init(directory: String, mode: String, durable: Bool, reason: String? = nil) {
            self.directory = directory; self.mode = mode; self.durable = durable; self.reason = reason
        }
    }
    public var scene: String
    public var sceneKind: String
    public var sceneSummary: String
    public var scenes: [String]
    /// The theme on screen.
    public var theme: String
    /// The theme chosen (config or `kioskctl theme`); differs from `theme` during a scheduled period.
    public var chosenTheme: String
    public var output: String
    /// "WIDTHxHEIGHT" or "none".
    public var mode: String
    public var rotation: Int
    public var blanked: Bool
    public var fps: Double
    public var frames: UInt64
    public var frameMs: FrameTimes
    /// The render heartbeat: the longest time between two presented frames, in milliseconds.
    public struct FrameGap: Codable, Sendable, Equatable {
        public var lastMinute: Double
        public var sinceStart: Double
        public init(lastMinute: Double, sinceStart: Double) { self.lastMinute = lastMinute; self.sinceStart = sinceStart }
    }
    public var frameGapMs: FrameGap?
    /// The command pipeline's figures: changes on disk, refused, batches committed (one fsync
    /// round each) and the largest batch (nil when changes are saved on the render loop).
    public struct Commits: Codable, Sendable, Equatable {
        public var changes, refused, batches, largestBatch: Int
        public init(changes: Int, refused: Int, batches: Int, largestBatch: Int) {
            self.changes = changes; self.refused = refused; self.batches = batches; self.largestBatch = largestBatch
        }
    }
    public var commits: Commits?
    /// kioskd's version (`kioskd --version`); absent from versions before it was reported.
    public var version: String?
    public var uptimeSeconds: Double
    public var inputDevices: [InputDevice]
    public var config: String
    public var state: State
    /// Problems the kiosk shows and logs: another primary in its fleet group, another MQTT client
    /// with its client id. Absent when there is none.
    public var warnings: [String]?
    /// Every output with its scene (the fields above describe the first).
    public var outputs: [OutputsAnswer.Output]?

    /// Whether the system clock is synchronised, and who says so.
    public struct TimeSync: Codable, Sendable, Equatable {
        public var synchronized: Bool
        /// "kernel", "timesyncd", "kernel, timesyncd", "none" (not synchronised).
        public var source: String
        /// Why a source cannot be read (the kernel's state refused by a sandbox), with the fix.
        public var note: String?
        public init(synchronized: Bool, source: String, note: String? = nil) {
            self.synchronized = synchronized; self.source = source; self.note = note
        }
    }
    /// The panel's backlight: how it is written ("logind", "sysfs" or "none") and its level.
    public struct Backlight: Codable, Sendable, Equatable {
        public var method: String
        public var device: String?
        /// What the device is set to.
        public var percent: Double?
        public var raw: Int?
        public var maxBrightness: Int?
        /// The level the panel is lit at (schedule, `kioskctl brightness`, sensor); nil while blanked.
        public var level: Double?
        public var schedule: String?
        /// The last write error.
        public var error: String?
        /// The ambient light sensor's last reading (lux), when one is followed.
        public var lux: Double?
        public init(method: String, device: String?, percent: Double?, raw: Int?, maxBrightness: Int?, level: Double?,
                    schedule: String?, error: String?) {
            self.method = method; self.device = device; self.percent = percent; self.raw = raw
            self.maxBrightness = maxBrightness; self.level = level; self.schedule = schedule; self.error = error
        }
    }
    public var timeSync: TimeSync?
    /// "Europe/Berlin (+01:00)".
    public var timeZone: String?
    public var backlight: Backlight?
    /// What happened to the pairing codes since the last `kioskctl pair` (absent without `[web]`).
    public var pairing: PairingReport?
    /// First boot: whether the screen offers an owner code until an owner pairs (absent without `[web]`).
    public var setup: SetupStatus?
    /// `[audio]`: the horn's device, whether it can sound, the last horn's figures (HornAnswers.swift).
    public var audio: AudioStatus?
    /// Every counter scene with a game clock, and its clock now (absent when none has one).
    public var clocks: [ClockAnswer]?

    public init(scene: String, sceneKind: String, sceneSummary: String, scenes: [String], theme: String, chosenTheme: String,
                output: String, mode: String, rotation: Int, blanked: Bool, fps: Double, frames: UInt64, frameMs: FrameTimes,
                uptimeSeconds: Double, inputDevices: [InputDevice], config: String, state: State) {
        self.scene = scene; self.sceneKind = sceneKind; self.sceneSummary = sceneSummary; self.scenes = scenes
        self.theme = theme; self.chosenTheme = chosenTheme; self.output = output; self.mode = mode
        self.rotation = rotation; self.blanked = blanked; self.fps = fps; self.frames = frames; self.frameMs = frameMs
        self.uptimeSeconds = uptimeSeconds; self.inputDevices = inputDevices; self.config = config; self.state = state
    }
}

/// `GET /outputs`.
public struct OutputsAnswer: Codable, Sendable, Equatable {
    public struct Output: Codable, Sendable, Equatable {
        public var description: String
        /// "WIDTHxHEIGHT"; `null` on the wire when the output has no mode.
        public var logicalSize: String?
        public var rotation: Int
        public var blanked: Bool
        /// How commands name the output (`--output NAME`): its config connector, else `output-N`.
        public var name: String?
        /// The scene on screen there, and the scenes it shows in turn.
        public var scene: String?
        public var scenes: [String]?
        /// The theme on screen there.
        public var theme: String?
        /// Frames presented there, and its frame rate over the last five seconds.
        public var frames: UInt64?
        public var fps: Double?
        /// What reached the panel (DRM outputs): when the kernel last completed a frame there
        /// (UTC, "2026-11-28T10:39:00Z"; `null` on the wire: none yet), how many it completed in
        /// the last minute, and a flip that never completed (until a frame completes again).
        public var lastFrameShown: String?
        public var framesShownLastMinute: Int?
        public var error: String?
        /// Its TV over HDMI-CEC (`[output.cec]`); absent without one.
        public var cec: CEC?
        /// The truth about its screen: a display connected, the mode driven ("1920x1080"), the
        /// backlight's level (percent; the first output's backlight), and whether it shows frames
        /// (false when blanked, disconnected, or a frame has waited 3 s for the kernel), with why not.
        public var connected: Bool?
        public var mode: String?
        public var backlightPercent: Int?
        public var showing: Bool?
        public var notShowing: String?
        public struct CEC: Codable, Sendable, Equatable {
            /// The adapter's path, or "none" (`"auto"` found none linked to the output).
            public var adapter: String
            /// The TV's power status as it last reported it: "on", "standby", "to-on",
            /// "to-standby" or "unknown".
            public var power: String
            /// Why the TV's state is unknown or a command did not reach it ("cec: no answer from the TV (…)").
            public var error: String?
            public init(adapter: String, power: String, error: String? = nil) { self.adapter = adapter; self.power = power; self.error = error }
        }
        public init(description: String, logicalSize: String?, rotation: Int, blanked: Bool, name: String? = nil,
                    scene: String? = nil, scenes: [String]? = nil, theme: String? = nil, frames: UInt64? = nil, fps: Double? = nil,
                    lastFrameShown: String? = nil, framesShownLastMinute: Int? = nil, error: String? = nil) {
            self.description = description; self.logicalSize = logicalSize; self.rotation = rotation; self.blanked = blanked
            self.name = name; self.scene = scene; self.scenes = scenes; self.theme = theme; self.frames = frames; self.fps = fps
            self.lastFrameShown = lastFrameShown; self.framesShownLastMinute = framesShownLastMinute; self.error = error
        }
        enum CodingKeys: String, CodingKey {
            case description, logicalSize, rotation, blanked, name, scene, scenes, theme, frames, fps, lastFrameShown, framesShownLastMinute, error, cec
            case connected, mode, backlightPercent, showing, notShowing
        }
        public func encode(to encoder: Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(name, forKey: .name)
            try c.encode(description, forKey: .description)
            try c.encode(logicalSize, forKey: .logicalSize) // null, not left out
            try c.encode(rotation, forKey: .rotation)
            try c.encode(blanked, forKey: .blanked)
            try c.encodeIfPresent(scene, forKey: .scene)
            try c.encodeIfPresent(scenes, forKey: .scenes)
            try c.encodeIfPresent(theme, forKey: .theme)
            try c.encodeIfPresent(frames, forKey: .frames)
            try c.encodeIfPresent(fps, forKey: .fps)
            if let framesShownLastMinute {
                try c.encode(lastFrameShown, forKey: .lastFrameShown) // null: nothing shown yet
                try c.encode(framesShownLastMinute, forKey: .framesShownLastMinute)
            }
            try c.encodeIfPresent(error, forKey: .error)
            try c.encodeIfPresent(cec, forKey: .cec)
            try c.encodeIfPresent(connected, forKey: .connected)
            try c.encodeIfPresent(mode, forKey: .mode)
            try c.encodeIfPresent(backlightPercent, forKey: .backlightPercent)
            try c.encodeIfPresent(showing, forKey: .showing)
            try c.encodeIfPresent(notShowing, forKey: .notShowing)
        }
    }
    public var outputs: [Output]
    public init(outputs: [Output]) { self.outputs = outputs }
}

/// `POST /scene` and `POST /theme`: what is shown now; `saved: false` and a note when the
/// choice is not kept across restarts.
public struct ChoiceAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var scene: String?
    public var theme: String?
    public var saved: Bool?
    public var note: String?
    public init(ok: Bool? = true, scene: String? = nil, theme: String? = nil, saved: Bool? = nil, note: String? = nil) {
        self.ok = ok; self.scene = scene; self.theme = theme; self.saved = saved; self.note = note
    }
}

/// `POST /clock/mode`: the clock scenes changed and their mode. `saved` and `note` as for a
/// scene choice (false and why when the choice lasts only until kioskd stops).
public struct ClockModeAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var mode: String
    public var scenes: [String]
    public var saved: Bool?
    public var note: String?
    public init(ok: Bool? = true, mode: String, scenes: [String], saved: Bool? = nil, note: String? = nil) {
        self.ok = ok; self.mode = mode; self.scenes = scenes; self.saved = saved; self.note = note
    }
}

/// `GET /counter/{name}` (no `ok`) and `POST /counter/{name}/…`.
public struct CounterAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var counter: String
    public var value: Int
    public init(ok: Bool? = true, counter: String, value: Int) { self.ok = ok; self.counter = counter; self.value = value }
}

/// `POST /paint/…`: strokes left; `changed` for undo and redo, `path` for save.
public struct PaintAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var strokes: Int
    public var changed: Bool?
    public var path: String?
    public init(ok: Bool? = true, strokes: Int, changed: Bool? = nil, path: String? = nil) {
        self.ok = ok; self.strokes = strokes; self.changed = changed; self.path = path
    }
}

/// `POST /blank`.
public struct BlankAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var blanked: Bool
    public init(ok: Bool? = true, blanked: Bool) { self.ok = ok; self.blanked = blanked }
}

/// `GET /brightness` (no `ok`) and `POST /brightness`.
public struct BrightnessAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var percent: Double
    public var raw: Int?
    public var method: String
    public var device: String
    public var blanked: Bool?
    public var saved: Bool?
    public var note: String?
    public init(ok: Bool? = true, percent: Double, method: String, device: String) {
        self.ok = ok; self.percent = percent; self.method = method; self.device = device
    }
}

/// `POST /reload`.
public struct ReloadAnswer: Codable, Sendable, Equatable {
    public var ok: Bool?
    public var message: String
    public init(ok: Bool? = true, message: String) { self.ok = ok; self.message = message }
}

/// Every refusal: what went wrong, and the request field at fault when there is one.
public struct ErrorAnswer: Codable, Sendable, Equatable {
    public var error: String
    public var field: String?
    public init(error: String, field: String? = nil) { self.error = error; self.field = field }
}

/// The one JSON encoding and decoding of the control interface: keys sorted, snake case on
/// the wire, slashes not escaped.
public enum ControlJSON {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        e.keyEncodingStrategy = .convertToSnakeCase
        return [UInt8](try e.encode(value))
    }

    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        let d = JSONDecoder()
        d.keyDecodingStrategy = .convertFromSnakeCase
        return try d.decode(type, from: Data(bytes))
    }
}
