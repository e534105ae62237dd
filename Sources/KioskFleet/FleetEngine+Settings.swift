import FoundationEssentials
import KioskCore
import Logging

/// One value of the settings layer set for the whole group (the shape of `SettingsLayer.Entry`).
public struct FleetSetting: Codable, Sendable, Equatable {
    /// The config's dotted key (`scene.score.counter[0].label`).
    public var key: String
    public var value: SettingValue
    /// Who set it, when, and (`fleet`) on which primary.
    public var source: SettingSource
    public init(key: String, value: SettingValue, source: SettingSource) { self.key = key; self.value = value; self.source = source }
}

/// The group's settings, published by the primary on `kioskd/group/GROUP/settings` (retained,
/// QoS 1) after every fleet-wide change it kept and on every connect: the whole fleet-scoped
/// part of its settings layer, so that a follower converges from the one retained message.
/// Judged by followers as counter states are (`FleetStateRule`).
public struct FleetSettingsState: Codable, Sendable, Equatable {
    /// The kiosk id of the primary that published it.
    public var primary: String?
    /// Grows by one with every fleet-wide change kept; followers take the highest.
    public var seq: Int
    public var settings: [FleetSetting]
    public init(primary: String?, seq: Int, settings: [FleetSetting]) { self.primary = primary; self.seq = seq; self.settings = settings }
}

/// The group's settings as this kiosk knows them. On the loop.
final class FleetSettingsBook {
    /// Kept under `fleet.GROUP.settings`, with the settings layer in the same commit: the seq of
    /// the group's settings taken (primary: published), and on a follower the primary whose they
    /// are and when they were taken (realtime ns).
    struct Kept: Codable, Equatable {
        var seq = 0
        var primary: String?
        var takenNs: Int64?
    }
    var kept = Kept()
    /// (Follower) a state is being checked and kept; the newest one received meanwhile waits.
    var deciding = false
    var next: FleetSettingsState?
    var refusalLog: (atNs: Int64, suppressed: Int)?
    /// (Primary) the fleet-scoped values of the settings layer now (the daemon's).
    var current: (() -> [FleetSetting])?
    /// (Follower) takes a newer state: checks it, keeps it with `record` in one commit and calls
    /// `done(true)` once kept (`false`: not kept, the state is taken again when it comes again);
    /// returns why the state is refused instead (nothing kept).
    var receive: ((_ state: FleetSettingsState, _ record: (key: String, value: String), _ done: @escaping (Bool) -> Void) -> String?)?
}

/// Settings for every kiosk of the group (docs/mqtt.md, "Settings for the whole fleet"): the
/// primary keeps a fleet-wide change in its own settings layer, then publishes the fleet-scoped
/// part of the layer with a seq; followers judge it (`FleetStateRule`), keep it in their layer
/// and apply it with a reload.
extension FleetEngine {
    /// The largest settings message sent or taken (bytes of JSON): the MQTT client's default
    /// `max_message_bytes`.
    public static let maxSettingsBytes = 65536

    public var settingsTopic: String { "kioskd/group/\(settings.group)/settings" }
    static func settingsKeptKey(group: String) -> String { StateKey.join(["fleet", group, "settings"]) }

    /// The seq of the group's settings taken here (primary: the last published).
    public var settingsSeq: Int { settingsBook.kept.seq }

    /// (Primary) the fleet-scoped values of the settings layer, read at each publish; the
    /// group's settings are published once it is given (not before: an empty list would replace
    /// the retained one).
    public var currentSettings: (() -> [FleetSetting])? {
        get { settingsBook.current }
        set {
            settingsBook.current = newValue
            publishSettings()
        }
    }

    /// (Follower) where a newer state of the group's settings goes (see `FleetSettingsBook.receive`).
    public var receiveSettings: ((_ state: FleetSettingsState, _ record: (key: String, value: String), _ done: @escaping (Bool) -> Void) -> String?)? {
        get { settingsBook.receive }
        set {
            settingsBook.receive = newValue
            if newValue != nil, let n = settingsBook.next {
                settingsBook.next = nil
                receiveSettingsState(n)
            }
        }
    }

    /// The settings' part of `start`: the kept seq read, the topic subscribed, and (primary) the
    /// group's settings published.
    func startSettings() {
        let key = Self.settingsKeptKey(group: settings.group)
        if let raw = state.load(key) {
            if let k = try? JSONDecoder().decode(FleetSettingsBook.Kept.self, from: Data(raw.utf8)), k.seq >= 0, k.seq <= FleetStateRule.maxSeq {
                settingsBook.kept = k
            } else {
                logger.error("fleet settings record is not readable; starting from seq 0", metadata: ["state.key": "\(key)", "stored": "\(raw.prefix(200))"])
            }
        }
        if isPrimary {
            transport.subscribe(settingsTopic) { [weak self] _, payload, _ in self?.receivedPrimarySettings(payload) }
            publishSettings()
        } else {
            transport.subscribe(settingsTopic) { [weak self] _, payload, _ in self?.receivedSettings(payload) }
        }
    }

    /// Why a fleet-wide change is refused on this kiosk now (a follower, two primaries); nil on
    /// a primary alone in its group.
    public var settingsRefusal: String? {
        guard isPrimary else {
            return "this kiosk ('\(kioskID)') is a follower of fleet group '\(settings.group)': settings for the whole fleet are changed on its primary"
                + (settings.primary.map { " '\($0)'" } ?? "") + " (its page, or kioskctl config set --fleet there); nothing changed"
        }
        guard otherPrimaries.isEmpty else {
            return "group '\(settings.group)' has two primaries: kiosk \(otherPrimaries.map { "'\($0)'" }.joined(separator: ", ")) publishes the group's states too "
                + "(this kiosk is '\(kioskID)'); the fleet-wide settings change was refused; make one of them a follower (fleet.role)"
        }
        return nil
    }

    /// (Primary) why `list` cannot be published (larger than `maxSettingsBytes`); nil when it can.
    public func settingsProblem(_ list: [FleetSetting]) -> String? {
        let n = (try? JSONEncoder().encode(FleetSettingsState(primary: kioskID, seq: FleetStateRule.maxSeq, settings: list)).count) ?? Int.max
        guard n > Self.maxSettingsBytes else { return nil }
        return "the fleet's settings would be \(n) bytes, more than the \(Self.maxSettingsBytes) bytes of one MQTT message; reset some fleet-wide first (kioskctl config reset --fleet KEY)"
    }

    /// (Primary) the record to keep with the next fleet-wide change: its seq one beyond the last.
    public func nextSettingsRecord() -> (key: String, value: String, seq: Int) {
        var k = settingsBook.kept
        k.seq += 1
        k.primary = kioskID
        let data = (try? JSONEncoder().encode(k)) ?? Data()
        return (Self.settingsKeptKey(group: settings.group), String(decoding: data, as: UTF8.self), k.seq)
    }

    /// (Primary) the change with `seq` (`nextSettingsRecord`) was kept: published to the group.
    public func settingsKept(seq: Int) {
        settingsBook.kept.seq = seq
        settingsBook.kept.primary = kioskID
        publishSettings()
    }

    /// (Primary) publishes the fleet-scoped settings as they are now, retained, with the seq.
    func publishSettings() {
        guard isPrimary, let current = settingsBook.current else { return }
        let s = FleetSettingsState(primary: kioskID, seq: settingsBook.kept.seq, settings: current())
        guard let data = try? JSONEncoder().encode(s) else { return }
        if let refusal = transport.publish(settingsTopic, Array(data), retain: true) {
            logger.warning("fleet settings not published", metadata: ["reason": "\(refusal)", "seq": "\(s.seq)"])
        }
    }

    /// (Primary) another primary's settings on the group's topic are a conflict.
    func receivedPrimarySettings(_ payload: [UInt8]) {
        guard payload.count <= Self.maxSettingsBytes, let s = try? JSONDecoder().decode(FleetSettingsState.self, from: Data(payload)),
              let other = s.primary, other != kioskID else { return }
        conflict.saw(other, atNs: scheduler.now(.monotonic))
        updateConflict()
    }

    // MARK: follower

    func receivedSettings(_ payload: [UInt8]) {
        guard payload.count <= Self.maxSettingsBytes else {
            return refusedSettings(nil, "it is \(payload.count) bytes, more than the \(Self.maxSettingsBytes) allowed")
        }
        let s: FleetSettingsState
        do { s = try JSONDecoder().decode(FleetSettingsState.self, from: Data(payload)) } catch {
            return refusedSettings(nil, "it is not a settings state ({\"primary\", \"seq\", \"settings\": [{\"key\", \"value\", \"source\"}]}): \(error)")
        }
        receiveSettingsState(s)
    }

    /// A state of the group's settings from the primary: taken when `FleetStateRule` says so and
    /// the daemon accepts it; one that arrives while another is being kept waits (the newest).
    public func receiveSettingsState(_ s: FleetSettingsState) {
        if settingsBook.deciding {
            if s.seq > (settingsBook.next?.seq ?? -1) { settingsBook.next = s }
            return
        }
        let at = now()
        let old = settingsBook.kept
        let shown = FleetStateRule.Shown(seq: old.seq, primary: old.primary, secondsAgo: old.takenNs.map { Double(at.realtimeNs - $0) / 1e9 })
        switch FleetStateRule.judge(seq: s.seq, primary: s.primary, expected: settings.primary, shown: shown) {
        case .refused(let why):
            return refusedSettings(s, why)
        case .older:
            if s.seq < old.seq {
                logger.info("fleet settings state ignored: its seq \(s.seq) is older than the one taken (\(old.seq))", metadata: ["primary": "\(s.primary ?? "none")"])
            }
            return
        case .show:
            break
        }
        if s.settings.count > 256 { return refusedSettings(s, "it holds \(s.settings.count) values, more than the 256 a settings layer holds") }
        guard let receive = settingsBook.receive else { settingsBook.next = s; return }
        let k = FleetSettingsBook.Kept(seq: s.seq, primary: s.primary, takenNs: at.realtimeNs)
        let record = (key: Self.settingsKeptKey(group: settings.group), value: String(decoding: (try? JSONEncoder().encode(k)) ?? Data(), as: UTF8.self))
        settingsBook.deciding = true
        let refusal = receive(s, record) { [weak self] kept in
            guard let self else { return }
            if kept { settingsBook.kept = k }
            decidedSettings()
        }
        if let refusal {
            settingsBook.deciding = false
            refusedSettings(s, refusal)
        }
    }

    func decidedSettings() {
        settingsBook.deciding = false
        if let n = settingsBook.next {
            settingsBook.next = nil
            receiveSettingsState(n)
        }
    }

    func refusedSettings(_ s: FleetSettingsState?, _ why: String) {
        noteRefused(&settingsBook.refusalLog, "fleet settings state ignored: \(why)", [
            "topic": "\(settingsTopic)", "seq": "\(s.map { "\($0.seq)" } ?? "?")", "primary": "\(s?.primary ?? "none")",
            "taken.seq": "\(settingsBook.kept.seq)",
        ])
    }
}
