import KioskCore
import KioskPosix

/// What a remote observer (a phone page, an MQTT broker) sees of the kiosk: the scene, the
/// theme, the panel and every counter. Compared as a whole, so an observer learns of every
/// change whatever made it (touch, keys, `kioskctl`, a web page, MQTT, a schedule).
public struct KioskState: Sendable, Equatable, Codable {
    public struct Counter: Sendable, Equatable, Codable {
        public var scene: String
        public var name: String
        public var label: String
        public var value: Int
        public var minimum: Int
        public var maximum: Int
        public init(scene: String, name: String, label: String, value: Int, minimum: Int, maximum: Int) {
            (self.scene, self.name, self.label, self.value, self.minimum, self.maximum) = (scene, name, label, value, minimum, maximum)
        }
    }
    public struct Painting: Sendable, Equatable, Codable {
        public var scene: String
        public var strokes: Int
        public init(scene: String, strokes: Int) { (self.scene, self.strokes) = (scene, strokes) }
    }
    /// A clock scene's colour mode and the modes it can be switched to.
    public struct Clock: Sendable, Equatable, Codable {
        public var scene: String
        public var mode: String
        public var modes: [String]
        public init(scene: String, mode: String, modes: [String]) { (self.scene, self.mode, self.modes) = (scene, mode, modes) }
    }
    /// A counter scene's game clock as kept (docs/scoreboard.md): "running since T with R left"
    /// or "stopped with R left", so it changes at a command or when time runs out, never every
    /// frame; an observer computes the time left at its own instant (`remainingMs(atMonotonicNs:)`).
    public struct GameClock: Sendable, Equatable, Codable {
        public var scene: String
        /// The clock `running` speaks of (the game clock; a sport without one: the shot clock):
        /// its time left at `sinceMonotonicNs` when running, its time left when stopped.
        public var remainingMs: Int
        /// The monotonic instant it runs since (nil: stopped).
        public var sinceMonotonicNs: Int64?
        public var period: Int
        public var periods: Int
        public init(scene: String, remainingMs: Int, sinceMonotonicNs: Int64?, period: Int, periods: Int) {
            (self.scene, self.remainingMs, self.sinceMonotonicNs, self.period, self.periods) = (scene, remainingMs, sinceMonotonicNs, period, periods)
        }
        public var running: Bool { sinceMonotonicNs != nil }
        /// The shot clock as kept (nil: none): its time left at its own `sinceMonotonicNs` when
        /// running (it may be stopped at zero while the game clock runs), its time left when stopped.
        public var shot: Run? = nil
        /// What the page needs to show the clock as the screen does: the period's length, the
        /// threshold under which it shows `SS.t` (and the low-time look), the shot clock's
        /// tenths threshold, the direction ("down" or "up") and whether the game clock is shown.
        public var face: Face? = nil
        public struct Run: Sendable, Equatable, Codable {
            public var remainingMs: Int
            public var sinceMonotonicNs: Int64?
            public init(remainingMs: Int, sinceMonotonicNs: Int64?) { (self.remainingMs, self.sinceMonotonicNs) = (remainingMs, sinceMonotonicNs) }
        }
        public struct Face: Sendable, Equatable, Codable {
            public var periodLengthMs: Int
            public var tenthsBelowMs: Int
            public var shotTenthsBelowMs: Int
            public var direction: String
            public var showsGameClock: Bool
            public init(periodLengthMs: Int, tenthsBelowMs: Int, shotTenthsBelowMs: Int, direction: String, showsGameClock: Bool) {
                (self.periodLengthMs, self.tenthsBelowMs, self.shotTenthsBelowMs) = (periodLengthMs, tenthsBelowMs, shotTenthsBelowMs)
                (self.direction, self.showsGameClock) = (direction, showsGameClock)
            }
        }
        /// The time left at the monotonic instant `ns`, in milliseconds (rounded up, never below 0).
        public func remainingMs(atMonotonicNs ns: Int64) -> Int {
            guard let since = sinceMonotonicNs else { return remainingMs }
            let left = max(0, Int64(remainingMs) * 1_000_000 - (ns - since))
            return Int((left + 999_999) / 1_000_000)
        }
    }
    public var scene: String
    public var sceneKind: String
    public var scenes: [String]
    /// The theme on screen, and the one chosen (they differ during a `theme_schedule` period).
    public var theme: String
    public var chosenTheme: String
    public var blanked: Bool
    /// Whether the system clock is synchronised (docs/wall.md).
    public var timeSynced: Bool
    public var counters: [Counter]
    public var paintings: [Painting]
    /// The clock scenes' colour modes (`clocks`) and the counter scenes' game clocks (`gameClocks`).
    public var clocks: [Clock]
    public var gameClocks: [GameClock] = []
    /// The horn (`[audio]`; nil: none): whether it can sound and whether it is muted.
    public struct Horn: Sendable, Equatable, Codable {
        public var available: Bool
        public var muted: Bool
        public init(available: Bool, muted: Bool) { (self.available, self.muted) = (available, muted) }
    }
    public var horn: Horn? = nil
    /// A fleet problem the kiosk shows (e.g. another primary in the group); absent when none.
    public var fleetWarning: String? = nil
    /// One output of several: its name (`--output NAME`), the scene on screen there, the scenes
    /// it shows and whether it is blanked.
    public struct Output: Sendable, Equatable, Codable {
        public var name: String
        public var scene: String
        public var scenes: [String]
        public var blanked: Bool
        public init(name: String, scene: String, scenes: [String], blanked: Bool) {
            (self.name, self.scene, self.scenes, self.blanked) = (name, scene, scenes, blanked)
        }
    }
    /// Every output, in the config's order, when there are several; absent with one output (the
    /// fields above then say all).
    public var outputs: [Output]? = nil
    /// Whether each output's screen shows frames (`ScreenShowing`), every output (also one alone).
    public struct Screen: Sendable, Equatable, Codable {
        public var name: String
        public var showing: Bool
        public var notShowing: String?
        public init(name: String, showing: Bool, notShowing: String?) {
            (self.name, self.showing, self.notShowing) = (name, showing, notShowing)
        }
    }
    public var screens: [Screen]? = nil

    public init(scene: String, sceneKind: String, scenes: [String], theme: String, chosenTheme: String, blanked: Bool, timeSynced: Bool,
                counters: [Counter], paintings: [Painting], clocks: [Clock], fleetWarning: String? = nil, outputs: [Output]? = nil) {
        (self.scene, self.sceneKind, self.scenes, self.theme, self.chosenTheme, self.blanked) = (scene, sceneKind, scenes, theme, chosenTheme, blanked)
        (self.timeSynced, self.counters, self.paintings, self.clocks) = (timeSynced, counters, paintings, clocks)
        (self.fleetWarning, self.outputs) = (fleetWarning, outputs)
    }
}

/// Tells observers the kiosk's `KioskState` after it changed. Changes are gathered until the
/// end of the loop iteration, so one command or one frame gives one notification; an observer
/// never hears the same state twice in a row. Runs on the loop's thread.
public final class ChangeFeed {
    public typealias Observer = (KioskState) -> Void
    private let scheduler: any Scheduler
    private let read: () -> KioskState?
    private var observers: [Int: Observer] = [:]
    private var nextID = 0
    private var pending = false
    public private(set) var last: KioskState?

    /// `read` gives the current state (nil while there is none to give).
    public init(scheduler: any Scheduler, read: @escaping () -> KioskState?) {
        self.scheduler = scheduler
        self.read = read
    }

    /// Adds an observer; returns the id to remove it with. It is called after each change (not
    /// with the current state: read `Daemon.kioskState()` for that).
    @discardableResult
    public func observe(_ observer: @escaping Observer) -> Int {
        nextID += 1
        observers[nextID] = observer
        return nextID
    }

    public func remove(_ id: Int) { observers[id] = nil }

    public var observerCount: Int { observers.count }

    /// Something may have changed: compare at the end of this iteration.
    public func noteChange() {
        guard !pending else { return }
        pending = true
        scheduler.deferToEndOfIteration { [weak self] in self?.check() }
    }

    /// Compares now and tells the observers if the state differs from the last one told.
    public func check() {
        pending = false
        guard let now = read() else { return }
        if now == last { return }
        last = now
        for id in observers.keys.sorted() { observers[id]?(now) }
    }
}
