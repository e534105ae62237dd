import KioskCEC
import KioskConfig
import KioskCore
import KioskScenes
import KioskState
import Logging

/// One output the daemon drives: its display, the scene manager showing its scenes on it, its
/// blanking and its theme. All on the render loop's thread.
public final class OutputHead {
    public internal(set) var settings: OutputSettings
    public let display: DisplayOutput
    public let manager: SceneManager
    public let blanking: BlankController
    let themes: ThemeController
    /// Its TV over HDMI-CEC (`[output.cec]`); nil: none.
    var cec: CECLink?
    /// Its display went away (`.inactive`) since the status was last told: the next frame
    /// shown here tells it again.
    var statusAwaitsFrame = false
    /// When the screen's "showing" may change by itself (a frame waiting for the kernel), and the
    /// timer that tells observers then (`Daemon.outputTruths`).
    var showingRecheck: (atNs: Int64, timer: TimerID)?

    init(settings: OutputSettings, display: DisplayOutput, manager: SceneManager, blanking: BlankController, themes: ThemeController) {
        self.settings = settings
        self.display = display
        self.manager = manager
        self.blanking = blanking
        self.themes = themes
    }

    /// How commands and status name it (the connector written in the config, else `output-N`).
    public var name: String { settings.name }

    /// The state key of the scene on screen here (`Daemon.sceneKey(output:name:)`).
    var sceneKey: String { Daemon.sceneKey(output: settings.index, name: name) }

    /// Whether `name` addresses this output: the name written in the config, or the connector
    /// the display actually drives (either case-insensitively).
    func answers(to name: String) -> Bool {
        let n = name.lowercased()
        if self.name.lowercased() == n { return true }
        return display.connectorName?.lowercased() == n
    }
}

extension Daemon {
    /// The state key of the scene on screen on output `index` (the first output keeps the key
    /// of a single-output kioskd, so its choice survives the move to several outputs).
    static func sceneKey(output index: Int, name: String) -> String {
        index == 0 ? sceneKey : "\(sceneKey).output.\(name)"
    }

    /// The scenes each output shows, in its order: one instance per output per scene. The first
    /// output to show a scene gets the instance `makeScenes` made (counters are checked and
    /// migrated there); a later output showing it too gets an instance of its own, its counters
    /// kept in step with the first's (`CounterScene.siblings`): a counter's value is one value,
    /// shown and changed from both.
    static func makeOutputScenes(_ config: DaemonConfig, registry: SceneRegistry, state: StateStore,
                                 intents: @escaping (CounterIntent) -> Void, logger: Logger) throws -> [[Scene]] {
        let primary = try makeScenes(config, registry: registry, state: state, intents: intents, logger: logger)
        var used = Set<String>()
        var perOutput: [[Scene]] = []
        var instances: [String: [Scene]] = [:]
        for output in config.outputs {
            let names = output.scenes.isEmpty ? config.scenes.map(\.name) : output.scenes
            var list: [Scene] = []
            for name in names {
                guard let first = primary.first(where: { $0.name == name }) else { continue }
                if used.insert(name).inserted {
                    list.append(first)
                } else {
                    guard let d = config.scenes.first(where: { $0.name == name }),
                          let again = try registry.make([d], state: state, intents: intents, logger: logger, dataDirectory: dataDirectory(config)).first else { continue }
                    if let c = again as? ClockScene, let p = first as? ClockScene { c.setColorMode(p.colorMode) }
                    list.append(again)
                }
                instances[name, default: []].append(list[list.count - 1])
            }
            perOutput.append(list)
        }
        for (_, all) in instances where all.count > 1 {
            let counters = all.compactMap { $0 as? CounterScene }
            for c in counters { c.siblings = counters.filter { $0 !== c } }
        }
        return perOutput
    }

    /// The output named `name` (config name or connector); nil: the first. Unknown names throw, listing the outputs.
    func head(named name: String?) throws -> OutputHead {
        guard let name else { return heads[0] }
        if let h = heads.first(where: { $0.answers(to: name) }) { return h }
        throw KioskError.notFound("no output named '\(name)'; outputs: \(heads.map(\.name).joined(separator: ", "))")
    }

    /// Every scene instance of every output: the first instance of each name first (the one
    /// commands address), in the order outputs show them.
    var allScenes: [Scene] {
        var seen = Set<String>()
        return heads.flatMap(\.manager.scenes).filter { seen.insert($0.name).inserted }
    }

    /// Every scene (one per name) implementing `type`, in order: what commands address.
    func scenes<T>(as type: T.Type) -> [T] { allScenes.compactMap { $0 as? T } }

    /// Tells every output's scene manager that its scene may have changed outside input and time.
    func scenesDidChange() {
        for h in heads { h.manager.sceneDidChange() }
    }
}
