import FoundationEssentials
import KioskConfig
import KioskControl
import KioskCore
import KioskState
import Logging

/// The settings layer of a running daemon (SettingsLayer.swift, docs/config.md): laid over the
/// config file at start and at every reload, changed by `PATCH /settings` (the phone page,
/// `kioskctl config set|reset`), one change at a time.
struct DaemonSettings {
    var layer = SettingsLayer()
    /// Why changes are refused (a layer kept by a later version, or damaged); nil: they are taken.
    var refusal: String?
    /// A change is being checked and kept; the next ones wait here, each made over the one before.
    var busy = false
    var waiting: [() -> Void] = []
    /// Values of the layer kept but not applied, by key: why the config does not accept them
    /// here (a fleet-wide value this kiosk's file does not take; a value the file no longer
    /// takes at start). Reported in the status; checked again at the next start or fleet change.
    var leftOut: [String: String] = [:]

    /// The layer as laid over the file: without the values left out.
    var applied: SettingsLayer { SettingsLayer(entries: layer.entries.filter { leftOut[$0.key] == nil }) }
}

extension DaemonRunner {
    /// `config` with the settings layer kept in `state` laid over it, and the daemon's settings.
    /// A layer value the file no longer accepts (its counter was removed, the file's rules
    /// changed) is left out, logged with the key and how to drop it; the others still apply.
    static func layered(_ config: DaemonConfig, state: StateStore, registry: SceneRegistry,
                        logger: Logger) -> (DaemonConfig, DaemonSettings) {
        var settings = DaemonSettings()
        switch SettingsLayer.decode(state.load(SettingsLayer.stateKey)) {
        case .newer(let v):
            settings.refusal = "the settings kept in \(config.stateDirectory) are of format version \(v), newer than this kioskd's (\(SettingsLayer.version)); they are not applied and cannot be changed by this version"
            logger.error("\(settings.refusal!)")
            return (config, settings)
        case .damaged(let why):
            settings.refusal = "the settings kept in \(config.stateDirectory) cannot be read (\(why)); they are not applied; `kioskctl config reset KEY` cannot drop single values, remove the state key \(SettingsLayer.stateKey) to start again"
            logger.error("\(settings.refusal!)")
            return (config, settings)
        case .layer(let layer):
            guard !layer.isEmpty else { return (config, settings) }
            settings.layer = layer
            let fit = Daemon.fit(layer, file: config.file, environment: ProcessInfo.processInfo.environment, registry: registry, logger: logger)
            settings.leftOut = fit.leftOut
            var c = fit.config ?? config
            c.settings = layer
            c.display.backend = config.display.backend // as kioskd --backend or a snapshot chose it
            return (c, settings)
        }
    }
}

extension Daemon {
    /// The file with as much of `layer` over it as it accepts: the whole layer when it checks,
    /// else one value at a time, each kept when the config accepts it with the ones before; the
    /// others are left out (key → why), each logged with the key and how to drop it. `config`:
    /// nil when every value was left out (the file alone applies).
    static func fit(_ layer: SettingsLayer, file: String, environment: [String: String], registry: SceneRegistry,
                    logger: Logger) -> (config: DaemonConfig?, leftOut: [String: String]) {
        if let c = try? checkSettings(file: file, environment: environment, registry: registry, layer: layer, logger: logger) { return (c, [:]) }
        var applied = SettingsLayer(), best: DaemonConfig?
        var leftOut: [String: String] = [:]
        for e in layer.entries {
            let trial = SettingsLayer(entries: applied.entries + [e])
            do {
                best = try checkSettings(file: file, environment: environment, registry: registry, layer: trial, logger: logger)
                applied = trial
            } catch {
                leftOut[e.key] = "\(error)"
                let drop = e.source.fleet == nil ? "`kioskctl config reset \(e.key)` drops it" : "`kioskctl config reset --fleet \(e.key)` on the primary drops it"
                logger.error("the setting '\(e.key)' (\(e.source)) is not applied: \(error); \(drop)", metadata: ["settings.key": "\(e.key)"])
            }
        }
        best?.settings = layer
        return (best, leftOut)
    }
}

extension Daemon {
    /// The config file with `layer` over it, checked as a reload checks it: every key, and the
    /// scenes made (in memory; nothing is kept or shown).
    static func checkSettings(file: String, environment: [String: String], registry: SceneRegistry, layer: SettingsLayer,
                              logger: Logger) throws -> DaemonConfig {
        let c = try DaemonConfig.load(path: file, environment: environment, kinds: registry.kinds, settings: layer)
        var quiet = logger
        quiet.logLevel = .critical
        _ = try makeOutputScenes(c, registry: registry, state: MemoryStateStore(), intents: { _ in }, logger: quiet)
        return c
    }

    /// `PATCH /settings`: checks `change` over the layer as the config file is checked, keeps the
    /// new layer through the command pipeline, reloads, and answers with the effective values —
    /// or the error naming the key, and nothing changed.
    func changeSettings(_ change: SettingsChange, reply: @escaping (ControlResponse) -> Void) {
        settingsTurn { [unowned self] finished in
            changeSettingsNow(change) { r in
                reply(r)
                finished()
            }
        }
    }

    /// Runs `work` when no other change of the settings is being checked and kept (one at a
    /// time, in order); `work` calls its argument when it is done.
    func settingsTurn(_ work: @escaping (_ finished: @escaping () -> Void) -> Void) {
        loop.assertInLoop()
        if settings.busy {
            settings.waiting.append { [unowned self] in settingsTurn(work) }
            return
        }
        settings.busy = true
        work { [unowned self] in
            changes.noteChange()
            settings.busy = false
            if !settings.waiting.isEmpty { settings.waiting.removeFirst()() }
        }
    }

    private func changeSettingsNow(_ change: SettingsChange, done: @escaping (ControlResponse) -> Void) {
        var change = change
        if let r = settings.refusal { return done(.error(409, r)) }
        if let refusal = fleetScope(&change) { return done(refusal) }
        for (key, _) in change.set {
            if let why = SettingsKeys.refusal(key) { return done(.error(400, why, field: key)) }
        }
        for key in change.reset {
            do { _ = try SettingsKeys.parse(key) } catch { return done(.error(400, "\(error)", field: key)) }
        }
        if case .unavailable(let why) = state.durability {
            return done(.error(503, "settings cannot be kept: state is not being saved (\(why)); nothing changed"))
        }
        let new = settings.layer.applying(change)
        if new.entries.count > SettingsLayer.maxEntries {
            return done(.error(413, "the settings layer holds at most \(SettingsLayer.maxEntries) values; reset some first (kioskctl config reset KEY)"))
        }
        let keys = change.set.map { SettingsKeys.canonical($0.key) } + change.reset.map { SettingsKeys.canonical($0) }
        // Values left out stay out (they are not this change's); the changed keys are checked.
        var leftOut = settings.leftOut
        for k in keys { leftOut[k] = nil }
        // Checked on the loop, as a reload checks (the scene factories are the loop's); applied
        // with a reload once the layer is kept.
        do {
            let checked = SettingsLayer(entries: new.entries.filter { leftOut[$0.key] == nil })
            _ = try Self.checkSettings(file: config.file, environment: reloadEnvironment, registry: registry, layer: checked, logger: logger)
        } catch {
            let message = "\(error)"
            return done(.error(422, message, field: Self.settingsField(of: message, keys: keys)))
        }
        var writes = [(key: SettingsLayer.stateKey, value: new.encoded())]
        var published: Int?
        if change.fleet, let fleet {
            if let why = fleet.settingsProblem(Self.fleetEntries(new)) { return done(.error(413, why)) }
            let record = fleet.nextSettingsRecord()
            writes.append((record.key, record.value))
            published = record.seq
        }
        commitThroughPipeline(writes) { [unowned self] error in
            if let error {
                return done(ControlCommandHandler.refused(error, "the settings", logger: logger) { e in
                    "the settings were not kept (\(e)); nothing changed"
                })
            }
            settings.layer = new
            settings.leftOut = leftOut
            if let published { fleet?.settingsKept(seq: published) }
            let what = (change.set.map { "\($0.key) = \($0.value)" } + change.reset.map { "\($0) reset to the file" }).joined(separator: ", ")
            logger.notice("settings changed (\(change.source)): \(what)")
            switch reload() {
            case .success(let m):
                let sent = published.map { " Kept for fleet group '\(fleet?.settings.group ?? "")' (seq \($0)) and published to its followers; each applies it when the message reaches it (kioskctl config show there)." } ?? ""
                done(.json(200, settingsAnswer(ok: true, message: m + sent)))
            case .failure(let e):
                done(.error(422, "the settings were kept but the reload failed: \(e.message); the running config stays (kioskctl config reset KEY drops a value)"))
            }
        }
    }

    /// The key of `keys` a config error is about: the one it names (`key 'scene.score.digits'`,
    /// or an element of it: `key 'display.brightness.schedule[1]'`), else the first.
    static func settingsField(of message: String, keys: [String]) -> String? {
        keys.first { message.firstRange(of: "key '\($0)'") != nil }
            ?? keys.first { message.firstRange(of: "key '\($0)[") != nil }
            ?? keys.first
    }

    /// `GET /settings`: the effective config, each value with its source.
    func settingsAnswer(ok: Bool? = nil, message: String? = nil) -> SettingsAnswer {
        let values = EffectiveConfig.values(of: config.tree, layer: settings.applied).map { v -> SettingsAnswer.Value in
            let settable = SettingsKeys.refusal(v.key) == nil
            let layered: Bool
            if case .layer = v.source { layered = true } else { layered = false }
            let value = settable ? settingValue(of: v.key) : nil
            return SettingsAnswer.Value(key: v.key, toml: v.value, value: value, source: "\(v.source)", layer: layered, settable: settable)
        }
        return SettingsAnswer(ok: ok, file: config.file, values: values, settable: SettingsKeys.settable, message: message,
                              fleet: fleet.map { .init(group: $0.settings.group, role: $0.settings.role.rawValue) })
    }

    /// The value of the dotted `key` in the effective tree.
    private func settingValue(of key: String) -> SettingValue? {
        guard let path = try? SettingsKeys.parse(key) else { return nil }
        var table = config.tree
        for seg in path.dropLast() {
            guard let n = table.entries[seg.name] else { return nil }
            if let i = seg.index {
                guard case .array(let a) = n.value, i < a.count, case .table(let t) = a[i].value else { return nil }
                table = t
            } else {
                guard case .table(let t) = n.value else { return nil }
                table = t
            }
        }
        guard let last = path.last else { return nil }
        if let n = table.entries[last.name] { return SettingValue(n.value) }
        return table.defaults.first { $0.key == last.name }.flatMap { SettingValue($0.value) }
    }
}
