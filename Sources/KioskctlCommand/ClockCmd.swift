import ArgumentParser
import KioskControl
import KioskCore

/// `kioskctl clock`: a counter scene's game clock (start, stop, set, adjust, period, reset;
/// docs/scoreboard.md), or a clock scene's colour mode (`clock mode scaled|literal`).
struct ClockCmd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock", abstract: "Run the game clock (\(ClockIntent.usage)), or switch a clock scene's colour mode (mode scaled|literal).",
        discussion: "kioskctl clock start; kioskctl clock set 7:30; kioskctl clock adjust -1; kioskctl clock reset --shot. Each answer is given once the clock is kept.")
    @OptionGroup var c: Connection
    @Option(help: "The scene: a counter scene with a game clock (default: the first), or for mode a clock scene (default: every clock scene).")
    var scene: String?
    /// Captures `-60` and `--shot` too, which the parser would otherwise take for options.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("An action and its value: \(ClockIntent.usage), or mode NAME.", valueName: "action"))
    var words: [String] = []

    /// The words without a `--` that ends the options.
    var action: [String] { words.first == "--" ? Array(words.dropFirst()) : words }

    func validate() throws {
        if action.first == "mode" {
            guard action.count == 2 else { throw ValidationError("expected: mode NAME (scaled or literal); got \(action.joined(separator: " "))") }
            return
        }
        do { _ = try ClockIntent.parse(action) } catch let e as KioskError { throw ValidationError(e.message) }
    }

    func run() throws {
        if action.first == "mode" {
            return try c.call(.clockMode(mode: action[1], scene: scene), as: ClockModeAnswer.self) { o in
                "clock mode: \(o.mode) (\(o.scenes.joined(separator: ", ")))" + (o.note.map { "\nnote: \($0)" } ?? "")
            }
        }
        let intent = try ClockIntent.parse(action)
        try c.call(.clock(intent: intent, scene: scene), as: ClockAnswer.self) { o in o.line + (o.note.map { "\nnote: \($0)" } ?? "") }
    }
}
