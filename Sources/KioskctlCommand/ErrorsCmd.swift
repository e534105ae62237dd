import ArgumentParser
import KioskControl

struct Errors: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the log's recent warnings and errors (the last 100, kept in memory; the journal has them all).")
    @OptionGroup var c: Connection
    func run() throws {
        try c.call(.recentErrors, as: RecentErrorsAnswer.self) { o in
            if o.errors.isEmpty { return "no warning or error since kioskd started" }
            let lines = o.errors.map { "\($0.time)\t\($0.level)\t\($0.message)" }
            return (o.dropped > 0 ? "(\(o.dropped) older ones no longer kept)\n" : "") + lines.joined(separator: "\n")
        }
    }

    /// `kioskctl status`'s setup line.
    static func setupLine(_ s: SetupStatus) -> String {
        switch s.state {
        case "off": return "off ([web] setup = false)"
        case "done": return "done" + (s.owner.map { ": owner \($0) paired \(s.ownerPaired ?? "")" } ?? "")
        default:
            guard s.shown, let code = s.code else { return "waiting for an owner; another pairing code is open, the setup code returns after it" }
            return "waiting for an owner; code \(code) on the screen (\(s.url ?? ""))"
        }
    }
}
