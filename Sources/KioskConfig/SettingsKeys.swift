import KioskCore

/// Which config keys the settings layer may set, and how a dotted key is read
/// (`scene.score.counter[0].label`; a name that is not bare is quoted: `scene."a.b".digits`).
public enum SettingsKeys {
    /// One part of a dotted key: a name, and an index when it is an element of an array of tables.
    public struct Segment: Equatable, Sendable {
        public var name: String
        public var index: Int?
        public init(name: String, index: Int?) { self.name = name; self.index = index }
    }

    /// The keys that may be set, as patterns: `*` any name, `[]` any index.
    public static let settable: [String] = [
        "theme",
        "scenes.order", "scenes.rotate_seconds",
        "scene.*.counter[].label", "scene.*.counter[].color", "scene.*.digits", "scene.*.min",
        "scene.*.hour_format", "scene.*.time_zone", "scene.*.show_label",
        "scene.*.idle_reset_seconds",
        "display.brightness.schedule", "display.brightness.fade_seconds",
        "display.blank.schedule", "display.blank.wake_seconds", "display.blank.idle_seconds",
        "output[].scenes", "output[].theme",
        "output[].blank.schedule", "output[].blank.wake_seconds", "output[].blank.idle_seconds",
        "homeassistant.name",
    ]

    /// Tables and keys only the config file sets: network, MQTT and its credentials, listen
    /// addresses, devices, paths.
    static let fileOnly: [String] = [
        "mqtt", "web", "control", "fleet", "audio", "input", "state_dir", "state", "theme_dir",
        "display.device", "display.output", "display.mode", "display.backend", "display.api", "display.cec",
        "display.backlight", "display.ambient", "output[].connector", "output[].device", "output[].cec",
    ]

    /// Reads a dotted key; errors say what is wrong with it.
    public static func parse(_ key: String) throws -> [Segment] {
        var out: [Segment] = []
        var s = Substring(key)
        func fail(_ why: String) -> KioskError { .config("key '\(ConfigTable.printable(key))': \(why)") }
        if s.isEmpty { throw fail("empty key") }
        while true {
            var name = ""
            if s.first == "\"" {
                s = s.dropFirst()
                guard let end = s.firstIndex(of: "\"") else { throw fail("a quoted name is not closed") }
                name = String(s[..<end])
                s = s[s.index(after: end)...]
            } else {
                let end = s.firstIndex { !($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") } ?? s.endIndex
                name = String(s[..<end])
                s = s[end...]
            }
            if name.isEmpty { throw fail("expected a name at '\(ConfigTable.printable(String(s)))'") }
            var index: Int?
            if s.first == "[" {
                guard let close = s.firstIndex(of: "]"), let i = Int(s[s.index(after: s.startIndex)..<close]), i >= 0, i < 10_000 else {
                    throw fail("expected an index like [0]")
                }
                index = i
                s = s[s.index(after: close)...]
            }
            out.append(Segment(name: name, index: index))
            if s.isEmpty { break }
            guard s.first == "." else { throw fail("expected '.' or the end at '\(ConfigTable.printable(String(s)))'") }
            s = s.dropFirst()
        }
        if out.count > 8 { throw fail("more than 8 parts") }
        return out
    }

    /// `path` written back as a dotted key (names quoted where they are not bare).
    public static func join(_ path: [Segment]) -> String {
        path.map { seg -> String in
            let bare = !seg.name.isEmpty && seg.name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
            return (bare ? seg.name : "\"\(seg.name)\"") + (seg.index.map { "[\($0)]" } ?? "")
        }.joined(separator: ".")
    }

    /// The key written one way (`scene.score.counter[0].label`); unchanged when it does not parse.
    public static func canonical(_ key: String) -> String { (try? parse(key)).map { join($0) } ?? key }

    /// Whether `path` is `pattern` (`*` any name, `[]` any index) or, with `prefix`, lies below it.
    static func matches(_ path: [Segment], _ pattern: String, prefix: Bool) -> Bool {
        let pat = pattern.split(separator: ".").map(String.init)
        guard prefix ? pat.count <= path.count : pat.count == path.count else { return false }
        for (p, seg) in zip(pat, path) {
            let indexed = p.hasSuffix("[]")
            let name = indexed ? String(p.dropLast(2)) : p
            if name != "*" && name != seg.name { return false }
            if indexed != (seg.index != nil) { return false }
        }
        return true
    }

    /// Nil when `key` may be set from the layer; otherwise why not.
    public static func refusal(_ key: String) -> String? {
        let path: [Segment]
        do { path = try parse(key) } catch let e as KioskError { return e.message } catch { return "\(error)" }
        let shown = join(path)
        if fileOnly.contains(where: { matches(path, $0, prefix: true) }) {
            return "key '\(shown)': set only in the config file (network, MQTT and its credentials, listen addresses, devices and paths are the administrator's; edit the file and reload)"
        }
        if settable.contains(where: { matches(path, $0, prefix: false) }) { return nil }
        return "key '\(shown)': not a setting (keys that can be set: \(settable.joined(separator: ", ")); others only in the config file)"
    }
}
