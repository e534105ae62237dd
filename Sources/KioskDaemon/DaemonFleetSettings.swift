import FoundationEssentials
import KioskConfig
import KioskControl
import KioskCore
import KioskFleet
import Logging

/// Settings for every kiosk of the `[fleet]` group (docs/mqtt.md, "Settings for the whole
/// fleet"): a fleet-wide change is made on the primary — checked as its file is, kept in its
/// settings layer with the group's seq in one commit, then published — and each follower keeps
/// the group's values in its own layer, checked as its own file is, and applies them with a reload.
extension Daemon {
    /// The fleet-wide values of `layer`, as the primary publishes them.
    static func fleetEntries(_ layer: SettingsLayer) -> [FleetSetting] {
        layer.entries.filter { $0.source.fleet != nil }.map { FleetSetting(key: $0.key, value: $0.value, source: $0.source) }
    }

    /// Connects the group's settings to the layer (at `startFleet`): the primary publishes the
    /// fleet-wide values of its layer; a follower takes the primary's.
    func joinFleetSettings(_ engine: FleetEngine) {
        if engine.isPrimary {
            engine.currentSettings = { [weak self] in self.map { Self.fleetEntries($0.settings.layer) } ?? [] }
        } else {
            engine.receiveSettings = { [weak self] s, record, done in
                guard let self else { return "kioskd is stopping" }
                return receiveFleetSettings(s, record: record, done: done)
            }
        }
    }

    /// Marks a fleet-wide change as the primary's, or refuses it (a follower, no fleet, two
    /// primaries); refuses a change of this kiosk only that touches a key set fleet-wide.
    func fleetScope(_ change: inout SettingsChange) -> ControlResponse? {
        if change.fleet {
            guard let fleet else {
                return .error(409, "this kiosk is in no [fleet] group: a setting for the whole fleet needs one (docs/mqtt.md, \"Settings for the whole fleet\"); without --fleet it is set on this kiosk")
            }
            if let why = fleet.settingsRefusal { return .error(409, why) }
            change.source.fleet = fleet.kioskID
            return nil
        }
        for key in change.set.map(\.key) + change.reset {
            let k = SettingsKeys.canonical(key)
            guard let e = settings.layer.entry(k), e.source.fleet != nil else { continue }
            return .error(409, "key '\(k)' is set for the whole fleet (\(e.source)); change it for the fleet on its primary "
                + "(kioskctl config set --fleet, or reset --fleet); nothing changed", field: key)
        }
        return nil
    }

    /// (Follower) a newer state of the group's settings: its values replace the fleet-wide ones
    /// of the layer (and this kiosk's own value of a key it sets); kept with `record` in one
    /// commit, applied with a reload. A value this kiosk's file does not accept is kept but left
    /// out (logged, in the status). Returns why the state is refused (a key no primary sends).
    func receiveFleetSettings(_ s: FleetSettingsState, record: (key: String, value: String), done: @escaping (Bool) -> Void) -> String? {
        let primary = s.primary ?? "the primary"
        var seen = Set<String>()
        var entries: [SettingsLayer.Entry] = []
        for v in s.settings {
            if let why = SettingsKeys.refusal(v.key) { return "it sets \(why)" }
            let key = SettingsKeys.canonical(v.key)
            guard seen.insert(key).inserted else { return "it sets key '\(key)' twice" }
            var source = v.source
            source.fleet = primary
            entries.append(SettingsLayer.Entry(key: key, value: v.value, source: source))
        }
        if let r = settings.refusal { return r }
        settingsTurn { [unowned self] finished in
            let own = settings.layer.entries.filter { $0.source.fleet == nil && !seen.contains($0.key) }
            let new = SettingsLayer(entries: own + entries)
            let fit = Self.fit(new, file: config.file, environment: reloadEnvironment, registry: registry, logger: logger)
            commitThroughPipeline([(SettingsLayer.stateKey, new.encoded()), record]) { [unowned self] error in
                defer { finished() }
                if let error {
                    logger.error("the fleet's settings were not kept (\(error)); they are taken when the primary's message comes again",
                                 metadata: ["seq": "\(s.seq)"])
                    return done(false)
                }
                settings.layer = new
                settings.leftOut = fit.leftOut
                logger.notice("fleet settings taken from \(primary) (seq \(s.seq)): \(entries.count) value(s), \(fit.leftOut.count) not applied here")
                done(true)
                if case .failure(let e) = reload() {
                    logger.error("the fleet's settings were kept but the reload failed: \(e.message); the running config stays")
                }
            }
        }
        return nil
    }

    /// The layer's values left out, for the status (`warnings`).
    var settingsWarnings: [String] {
        settings.layer.entries.compactMap { e in
            settings.leftOut[e.key].map { "the setting '\(e.key)' (\(e.source)) is not applied on this kiosk: \($0)" }
        }
    }
}
