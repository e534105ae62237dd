import KioskComponent
import KioskControl
import KioskCore
import KioskMQTT

/// The counter scenes' game clocks on MQTT (docs/mqtt.md): `kioskd/ID/clock/LEVEL/set` takes
/// the words of `kioskctl clock`, and `…/remaining`, `…/running` and `…/period` are retained,
/// computed on the MQTT thread from the kept clock ("running since T with R left").
extension MQTTBridge {
    /// `clock/LEVEL/set` with a payload such as `start`, `stop`, `toggle`, `set 5:00`,
    /// `adjust -10`, `period 2`, `period next`, `reset`, `reset shot` or `reset shot 14` (`shot`
    /// stands for `--shot`): the clock command of the scene in `clocks` whose level is `level`.
    static func clockCommand(level: String, text: String, clocks: [String]) -> Result<ControlCommand?, CommandError> {
        let topic = "clock/\(level.prefix(64))/set"
        guard let scene = clocks.first(where: { KioskTopics.outputLevel($0) == level }) else {
            let known = clocks.map(KioskTopics.outputLevel).joined(separator: ", ")
            return .failure(CommandError(message: "\(topic): no game clock on a scene '\(level.prefix(64))'; "
                + (known.isEmpty ? "no scene has a game clock" : "scenes with a clock: \(known)")))
        }
        var words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        if words.count >= 2, words[0] == "reset", words[1] == "shot" { words[1] = "--shot" }
        do {
            return .success(.clock(intent: try ClockIntent.parse(words), scene: scene))
        } catch {
            return .failure(CommandError(message: "\(topic): payload \"\(text.prefix(64))\": \(error)"))
        }
    }
}

extension KioskState.GameClock {
    /// The time left at `ns` as `M:SS`, whole seconds rounded up (`0:00` only when time is up).
    public func remainingText(atMonotonicNs ns: Int64) -> String {
        let s = (remainingMs(atMonotonicNs: ns) + 999) / 1000
        return "\(s / 60):" + (s % 60 < 10 ? "0" : "") + "\(s % 60)"
    }

    /// Whether it runs at `ns` (a running clock whose time ran out has stopped).
    public func running(atMonotonicNs ns: Int64) -> Bool { running && remainingMs(atMonotonicNs: ns) > 0 }

    /// The next monotonic instant after `ns` at which `remainingText` (or `running`) changes;
    /// nil when stopped or out of time.
    public func nextChangeNs(after ns: Int64) -> Int64? {
        guard let since = sinceMonotonicNs else { return nil }
        let left = Int64(remainingMs) * 1_000_000 - (ns - since)
        guard left > 0 else { return nil }
        let shown = (left + 999_999_999) / 1_000_000_000
        return ns + left - (shown - 1) * 1_000_000_000
    }
}

extension KioskState.GameClock {
    /// Its retained topics at the monotonic instant `ns`: `…/remaining` (`M:SS`), `…/running`
    /// (`ON`/`OFF`) and `…/period`.
    func publications(_ topics: KioskTopics, atMonotonicNs ns: Int64) -> [(topic: String, payload: [UInt8])] {
        let t = topics.clock(scene)
        return [("\(t)/remaining", Array(remainingText(atMonotonicNs: ns).utf8)),
                ("\(t)/running", Array((running(atMonotonicNs: ns) ? "ON" : "OFF").utf8)),
                ("\(t)/period", Array(String(period).utf8))]
    }
}
