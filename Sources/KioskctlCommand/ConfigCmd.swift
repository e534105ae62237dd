import ArgumentParser
import FoundationEssentials
import Glibc
import KioskControl
import KioskCore

/// `kioskctl config show|set|reset`: the effective config and the settings layer kept beside the
/// config file (docs/control.md, docs/config.md).
struct ConfigCmd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Show the effective config, or set and reset values of the settings layer kept beside the config file.",
        discussion: "kioskctl config show; kioskctl config set scene.score.counter[0].label LIONS; kioskctl config reset scene.score.counter[0].label; on a fleet's primary, kioskctl config set --fleet KEY VALUE sets it on every kiosk of the group. The file under /etc is never written.",
        subcommands: [Show.self, Set.self, Reset.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the effective config: each value with where it comes from (file:line, default, or who set it and when).")
        @OptionGroup var c: Connection
        @Argument(help: "Only keys starting with this (e.g. scene.score).") var prefix: String?
        func run() throws {
            try c.call(.settings, as: SettingsAnswer.self) { a in ConfigCmd.text(a, prefix: prefix) }
        }
    }

    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set KEY to VALUE in the settings layer; checked as the config file is, kept, then applied with a reload.",
            discussion: "VALUE is read as TOML writes it (3, 1.5, true, \"LIONS\", [\"score\", \"clock\"]); anything else is taken as text.")
        @OptionGroup var c: Connection
        @Argument(help: "The config's dotted key, as its errors name it (scene.score.counter[0].label).") var key: String
        @Argument(help: "The value.") var value: String
        @Flag(help: "For every kiosk of the [fleet] group: run on its primary, which publishes it to the followers.") var fleet = false
        func run() throws {
            let change = SettingsChange(set: [(key, SettingValue.argument(value))], source: .kioskctl(at: Int64(time(nil))), fleet: fleet)
            try c.call(.changeSettings(change), as: SettingsAnswer.self) { a in ConfigCmd.text(a, prefix: key, exact: true) }
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Drop KEY from the settings layer: the config file's value (or the default) applies again.")
        @OptionGroup var c: Connection
        @Argument(help: "The config's dotted key.") var keys: [String]
        @Flag(help: "Drop a value set for the whole [fleet] group, on every kiosk of it (run on its primary).") var fleet = false
        func validate() throws { if keys.isEmpty { throw ValidationError("name at least one key") } }
        func run() throws {
            let change = SettingsChange(reset: keys, source: .kioskctl(at: Int64(time(nil))), fleet: fleet)
            try c.call(.changeSettings(change), as: SettingsAnswer.self) { a in
                keys.map { ConfigCmd.text(a, prefix: $0, exact: true) }.joined(separator: "\n")
            }
        }
    }

    /// `key = value  # source` lines, those of the layer marked.
    static func text(_ a: SettingsAnswer, prefix: String?, exact: Bool = false) -> String {
        let shown = a.values.filter { v in
            guard let p = prefix else { return true }
            return exact ? v.key == p : v.key.hasPrefix(p)
        }
        if shown.isEmpty, let p = prefix { return exact ? "\(p): not read by the config (no value)" : "no key starts with \(p)" }
        return shown.map { "\($0.key) = \($0.toml)  # \($0.source)" }.joined(separator: "\n")
    }
}
