import KioskConfig
import KioskCore
import Logging

/// What `kioskd` runs with, from its command line.
struct DaemonArguments: Equatable, Sendable {
    var config: String = DaemonConfig.defaultPath
    var backend: String?
    var snapshot: String?
    var stroke: [String] = []
    var snapshotAfter: Double = 0
    var listOutputs = false
    var checkConfig = false
    var logLevel: String = "info"

    /// The arguments (without the program's name) when they are only what a daemon's start
    /// usually has — `--config`, `--backend` and `--log-level`, each at most once, with its value
    /// after a space or `=` — and `Kioskd`'s checks would accept them; nil for anything else, which
    /// ArgumentParser parses (so `--help`, `--version`, every other option and every error text are
    /// its own). Parsing without it saves its reflection of the options at every start
    /// (BENCHMARKS.md, "Start-up, the next cuts").
    static func quick(_ arguments: [String]) -> DaemonArguments? {
        var out = DaemonArguments()
        var seen: Set<String> = []
        var i = 0
        while i < arguments.count {
            let token = arguments[i]
            guard token.hasPrefix("--") else { return nil }
            let name: String
            let value: String
            if let eq = token.firstIndex(of: "=") {
                name = String(token[..<eq])
                value = String(token[token.index(after: eq)...])
                i += 1
            } else {
                guard i + 1 < arguments.count else { return nil }
                name = token
                value = arguments[i + 1]
                // ArgumentParser would not take an option's name as its value.
                if value.hasPrefix("-") { return nil }
                i += 2
            }
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "--config": out.config = value
            case "--backend":
                guard DisplayBackend(rawValue: value) != nil else { return nil }
                out.backend = value
            case "--log-level":
                guard Logger.Level(rawValue: value) != nil else { return nil }
                out.logLevel = value
            default: return nil
            }
        }
        return out
    }
}
