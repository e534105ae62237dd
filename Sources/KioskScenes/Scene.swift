import KioskCore
import KioskRender
import Logging

/// What a scene is given when it is made, besides its config table: the values kept for it,
/// where its counter changes go, a logger and the folder for its files. A scene holds no
/// `StateStore`: it reads what was kept once, here, and shows what it is told.
public struct SceneContext {
    public var name: String
    /// The value kept under a state key, read when the scene is made (its starting values).
    public var stored: (String) -> String?
    /// The one entrance of counter changes: a touch or key on a counter becomes an intent
    /// handed here; the value reaches the screen later, as a shown value (`showCommitted`).
    public var counterIntents: (CounterIntent) -> Void
    public var logger: Logger
    /// The directory for files the scene writes (saved paintings).
    public var dataDirectory: String
    public init(name: String, stored: @escaping (String) -> String?, counterIntents: @escaping (CounterIntent) -> Void,
                logger: Logger, dataDirectory: String) {
        self.name = name; self.stored = stored; self.counterIntents = counterIntents
        self.logger = logger; self.dataDirectory = dataDirectory
    }
}

/// A change of a counter asked for on the screen (a touch or a key): which scene, which
/// counter, what edit. Decided elsewhere (the daemon's one entrance), never by the scene.
public struct CounterIntent: Sendable, Equatable {
    public var scene: String
    public var counter: String
    public var edit: CounterEdit
    public init(scene: String, counter: String, edit: CounterEdit) {
        self.scene = scene; self.counter = counter; self.edit = edit
    }
}

/// A scene: updated from time and input, drawn into a canvas with a theme, reporting damage.
///
/// The canvas keeps the previous frame: after `layout`, `apply(theme:)` or `didAppear`, the
/// next `draw` must repaint everything (and return full damage); otherwise only what changed.
public protocol Scene: AnyObject {
    /// The instance name from the config (`[scene.NAME]`).
    var name: String { get }
    /// The kind: "clock", "counter" or "paint".
    var kind: String { get }
    /// Lays out for the logical screen size.
    func layout(size: Size)
    /// Switches to a theme (colours and fonts).
    func apply(theme: Theme)
    /// The scene comes on screen at `now`.
    func didAppear(now: WallTime)
    /// Brings the scene up to `now`; true when something visible changed.
    func update(now: WallTime) -> Bool
    /// Handles one input event; true when something visible changed.
    func handle(_ event: InputEvent, now: WallTime) -> Bool
    /// Draws what changed since the previous draw; returns the rectangles that changed.
    func draw(into canvas: Canvas) -> Damage
    /// When `update(now:)` must run next without input (the clock's next second, an animation frame); nil: only on input.
    func nextDeadline(now: WallTime) -> Deadline?
    /// A short line for status ("13:35:16", "HOME 3 AWAY 1", "12 strokes").
    var statusSummary: String { get }
}

public extension Scene {
    func didAppear(now: WallTime) {}
    var statusSummary: String { kind }
}

/// Scenes that show counters (status, the fleet and the pipeline's shown values reach them
/// through this). Nothing here changes a value: changes are decided and kept by the daemon's
/// one entrance, and shown here afterwards.
public protocol CounterControl: AnyObject {
    var counterNames: [String] { get }
    /// Every counter with its label, value and range, in the scene's order (for remote pages,
    /// Home Assistant entities and status).
    var counterInfo: [CounterInfo] { get }
    /// The value shown. Unknown counter: `KioskError.notFound` naming the counters there are.
    func value(of counter: String) throws -> Int
    /// The rules a change of `counter` is judged by (digits, minimum).
    func rules(of counter: String) throws -> CounterRules
    /// The state key of `counter`'s value.
    func stateKey(_ counter: String) -> String
    /// Shows a value made durable elsewhere (nothing is saved).
    func showCommitted(_ counter: String, value: Int, up: Bool, now: WallTime)
}

/// One counter as seen from outside its scene.
public struct CounterInfo: Sendable, Equatable, Codable {
    public var name: String
    public var label: String
    public var value: Int
    /// The lowest value (`minimum`, also the reset value).
    public var minimum: Int
    /// The highest value the digits can show (10^digits − 1).
    public var maximum: Int
    public init(name: String, label: String, value: Int, minimum: Int, maximum: Int) {
        self.name = name; self.label = label; self.value = value; self.minimum = minimum; self.maximum = maximum
    }
}

/// Scenes that hold a painting.
public protocol PaintControl: AnyObject {
    func clear()
    /// False when there was nothing to undo.
    @discardableResult func undo() -> Bool
    @discardableResult func redo() -> Bool
    /// Writes the painting as a new PNG file in the paintings folder (a chosen name or
    /// `painting-YYYYMMDD-HHMMSS[-N].png`); returns the path written.
    func save(name: String?) throws -> String
    /// Like `save(name:)` without holding the loop: the painting is copied now, encoded and
    /// written elsewhere; `done` runs on the loop once the file is on disk (its path) or failed.
    func save(name: String?, done: @escaping (Result<String, Error>) -> Void)
    var strokeCount: Int { get }
}

/// Makes a scene of one kind from its config table (`[scene.NAME]`, `kind = "…"`).
/// Factories read every key they support with the table's getters and call `table.finish()`
/// so misspelt keys are reported with file:line.
public typealias SceneFactory = (ConfigTable, SceneContext) throws -> Scene
