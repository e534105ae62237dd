import ArgumentParser
import FoundationEssentials
import Glibc
import KioskControl
import KioskPosix

/// Options every subcommand shares.
struct Connection: ParsableArguments {
    @Option(name: .long, help: "The control socket (default: $KIOSKD_SOCKET or /run/kioskd/control.sock).")
    var socket: String = ProcessInfo.processInfo.environment["KIOSKD_SOCKET"] ?? "/run/kioskd/control.sock"

    @Option(name: .long, help: "Seconds to wait for kioskd's answer (more than 0, at most 3600).")
    var timeout: Double = 10

    @Flag(name: .long, help: "Print the raw JSON answer.")
    var json = false

    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= ControlClient.maxTimeout else {
            throw ValidationError("--timeout must be a number of seconds above 0 and at most \(Int(ControlClient.maxTimeout)); got \(timeout)")
        }
    }

    /// Writes `kioskctl: message` to stderr.
    static func complain(_ message: String) {
        Posix.writeStandardError("kioskctl: \(message)\n")
    }

    /// At most `limit` characters of an answer's body, for messages.
    static func excerpt(_ body: [UInt8], limit: Int = 2000) -> String {
        let text = String(decoding: body, as: UTF8.self).trimmingWhitespace()
        return text.count <= limit ? text : "\(text.prefix(limit))… (\(body.count) bytes)"
    }

    /// Sends `command` expecting a JSON answer of type `T`; prints it (with `show`, or as it came
    /// with --json); exits 1 on an error status, 2 when kioskd did not answer or its answer is not
    /// the expected JSON, 3 on a timeout.
    func call<T: Decodable>(_ command: ControlCommand, as type: T.Type, show: (T) -> String) throws {
        let client = ControlClient(socketPath: socket, timeout: timeout)
        let r: ControlResponse
        do {
            r = try client.send(command)
        } catch let e as ControlClientError {
            Self.complain(e.description)
            throw ExitCode(e.kind == .timeout ? 3 : 2)
        }
        guard r.status < 400 else {
            if let msg = r.errorMessage {
                Self.complain("\(msg) (HTTP \(r.status))")
            } else if r.body.isEmpty {
                Self.complain("kioskd refused the request with HTTP \(r.status) and no explanation")
            } else {
                Self.complain("kioskd refused the request with HTTP \(r.status) (\(r.contentType)): \(Self.excerpt(r.body))")
            }
            throw ExitCode(1)
        }
        guard r.jsonObject != nil else {
            let what = r.body.isEmpty ? "an empty body" : "non-JSON (\(r.contentType)): \(Self.excerpt(r.body))"
            Self.complain("kioskd answered HTTP \(r.status) with \(what)")
            throw ExitCode(2)
        }
        if r.status == 202 { // a shared counter's change queued, not yet confirmed by the fleet's primary
            if json { print(String(decoding: r.body, as: UTF8.self).trimmingWhitespace()) }
            Self.complain("pending: \((r.jsonObject?["message"] as? String) ?? Self.excerpt(r.body)) (HTTP 202)")
            throw ExitCode(4)
        }
        if json {
            print(String(decoding: r.body, as: UTF8.self).trimmingWhitespace())
            return
        }
        let answer: T
        do { answer = try r.decode(T.self) } catch {
            Self.complain("kioskd answered HTTP \(r.status) with JSON that is not a \(command.request.method) \(command.request.path) answer (\(Self.decodingProblem(error))): \(Self.excerpt(r.body))")
            throw ExitCode(2)
        }
        print(show(answer))
    }

    /// What is wrong with an answer, in a few words ("missing key 'scene'").
    static func decodingProblem(_ error: Error) -> String {
        guard let e = error as? DecodingError else { return "\(error)" }
        switch e {
        case .keyNotFound(let k, _): return "missing key '\(k.stringValue)'"
        case .typeMismatch(_, let c), .valueNotFound(_, let c), .dataCorrupted(let c):
            return "unexpected value at '\(c.codingPath.map(\.stringValue).joined(separator: "."))'"
        @unknown default: return "\(e)"
        }
    }

    /// A JSON number as JSON writes it: 60, not 60.0.
    static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? "\(Int64(v))" : "\(v)"
    }
}

/// `kioskctl`: its own executable, and kioskd's when called by that name (the package's
/// /usr/bin/kioskctl is a link to kioskd: one copy of the static Swift runtime, not two).
public struct Kioskctl: ParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "kioskctl",
        abstract: "Controls a running kioskd through its control socket.",
        discussion: """
            Exit status: 0 done, 1 kioskd refused the request, 2 kioskd is not running or unreachable, or its \
            answer was not understood (cut off, not JSON, larger than 64 MiB), 3 no answer in time, 4 a fleet change \
            is pending (queued, not yet confirmed by the group's primary), 64 usage error \
            (unknown subcommand or option, bad --timeout, missing value).
            """,
        subcommands: [Status.self, SceneCmd.self, ThemeCmd.self, CounterCmd.self, PaintCmd.self, Screenshot.self,
                      Blank.self, Reload.self, Outputs.self, BrightnessCmd.self, Pair.self, Devices.self, ClockCmd.self, Horn.self, Errors.self,
                      ConfigCmd.self])
}

struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the scene, theme, output, frame statistics and input devices.")
    @OptionGroup var c: Connection
    func run() throws {
        try c.call(.status, as: StatusAnswer.self) { o in
            let n = Connection.number
            var lines: [String] = []
            lines.append("scene:   \(o.scene) (\(o.sceneKind)): \(o.sceneSummary)")
            lines.append("scenes:  \(o.scenes.joined(separator: ", "))")
            lines.append("theme:   \(o.theme)")
            lines.append("output:  \(o.output), mode \(o.mode), rotation \(o.rotation)\(o.blanked ? ", blanked" : "")")
            let f = o.frameMs
            lines.append("frames:  \(o.frames), \(n(o.fps)) fps, frame ms p50 \(n(f.p50)) p90 \(n(f.p90)) p99 \(n(f.p99)) max \(n(f.max))")
            if let g = o.frameGapMs {
                lines.append("frame gap: longest \(n(g.lastMinute)) ms over the last minute, \(n(g.sinceStart)) ms since start")
            }
            if let c = o.commits {
                lines.append("commits: \(c.changes) changes on disk in \(c.batches) batches (largest \(c.largestBatch)), \(c.refused) refused")
            }
            lines.append("uptime:  \(n(o.uptimeSeconds)) s")
            if let v = o.version { lines.append("version: kioskd \(v)") }
            let devs = o.inputDevices
            if let t = o.timeSync {
                lines.append("time:    " + (t.synchronized ? "synchronised (\(t.source))" : "NOT synchronised (enable systemd-timesyncd or chrony)")
                             + (o.timeZone.map { ", zone \($0)" } ?? "") + (t.note.map { "\n         \($0)" } ?? ""))
            }
            if let b = o.backlight {
                lines.append("backlight: " + (b.method == "none" ? "none" : "\(b.device ?? "?") \(b.percent.map(n) ?? "?") % (raw \(b.raw ?? 0) of \(b.maxBrightness ?? 0)) via \(b.method)")
                             + (b.schedule.map { ", schedule \($0)" } ?? "") + (b.lux.map { ", room \(n($0)) lx" } ?? "") + (b.error.map { ", error: \($0)" } ?? ""))
            }
            for out in o.outputs ?? [] {
                if let cec = out.cec { lines.append("cec:     \(out.name.map { "\($0): " } ?? "")\(cec.text)") }
            }
            if let a = o.audio { lines.append("audio:   \(a.text)") }
            if let p = o.pairing { lines.append("pairing: \(p.open ? "a code is open" : "no code open"); \(p.summary)") }
            if let s = o.setup { lines.append("setup: " + Errors.setupLine(s)) }
            lines.append("input:   " + (devs.isEmpty ? "none" : devs.map { "\($0.name) (\($0.sysname): \($0.capabilities.joined(separator: "+")))" }.joined(separator: ", ")))
            return lines.joined(separator: "\n")
        }
    }
}

struct SceneCmd: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "scene", abstract: "Show the scene with this name.")
    @OptionGroup var c: Connection
    @Argument(help: "Scene name (a [scene.NAME] of the config).") var name: String
    @Option(help: "The output to show it on (its connector, as `kioskctl outputs` names it); default: the first.") var output: String?
    func run() throws { try c.call(.scene(name: name, output: output), as: ChoiceAnswer.self) { "scene: \($0.scene ?? name)" } }
}

struct ThemeCmd: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "theme", abstract: "Switch to this theme (built-in or a file in theme_dir).")
    @OptionGroup var c: Connection
    @Argument(help: "Theme name.") var name: String
    func run() throws { try c.call(.theme(name: name), as: ChoiceAnswer.self) { "theme: \($0.theme ?? name)" } }
}

struct CounterCmd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "counter", abstract: "Show (get) or change a counter: set N, inc, dec or reset.",
        discussion: "A negative value is written as is: kioskctl counter HOME set -5 (or after --: set -- -5).")
    @OptionGroup var c: Connection
    @Argument(help: "Counter name.") var name: String
    @Argument(help: "get, set, inc, dec or reset.") var operation: String
    /// Captures `-5` too, which the parser would otherwise take for an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The value for set (an integer, may be negative).", valueName: "value"))
    var values: [String] = []

    /// The words after the operation, without a `--` that ends the options.
    var words: [String] { values.first == "--" ? Array(values.dropFirst()) : values }

    /// The value for `set` (checked by `validate`).
    var value: Int? { words.first.flatMap { Int($0) } }

    func validate() throws {
        guard ["get", "set", "inc", "dec", "reset"].contains(operation) else {
            throw ValidationError("operation must be get, set, inc, dec or reset; got '\(operation)'")
        }
        if operation == "set" {
            guard let v = words.first else { throw ValidationError("'set' needs a value: kioskctl counter \(name) set 42") }
            guard words.count == 1 else { throw ValidationError("'set' takes one value; got \(words.joined(separator: " "))") }
            guard Int(v) != nil else { throw ValidationError("'set' needs an integer value; got '\(v)'") }
        } else if !words.isEmpty {
            throw ValidationError("'\(operation)' takes no value; got \(words.joined(separator: " "))")
        }
    }

    func run() throws {
        guard let op = ControlCommand.CounterOp(rawValue: operation) else { return } // checked by validate
        if op == .get {
            try c.call(.counter(name: name, op: .get, value: nil), as: CounterAnswer.self) { "\($0.value)" }
        } else {
            try c.call(.counter(name: name, op: op, value: value), as: CounterAnswer.self) { "\($0.counter) = \($0.value)" }
        }
    }
}

struct PaintCmd: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "paint", abstract: "clear, undo, redo, or save [NAME] the painting.")
    @OptionGroup var c: Connection
    @Argument(help: "clear, undo, redo or save.") var operation: String
    @Argument(help: ArgumentHelp("With save: the file name in kioskd's paintings folder, such as drawing-1.png (default: painting-YYYYMMDD-HHMMSS.png). An existing file is never overwritten.", valueName: "name")) var name: String?
    func validate() throws {
        guard ["clear", "undo", "redo", "save"].contains(operation) else {
            throw ValidationError("operation must be clear, undo, redo or save; got '\(operation)'")
        }
        if name != nil && operation != "save" { throw ValidationError("only 'save' takes a name") }
    }
    func run() throws {
        guard let op = ControlCommand.PaintOp(rawValue: operation) else { return } // checked by validate
        try c.call(.paint(op: op, name: name), as: PaintAnswer.self) { o in
            var s = "\(operation): \(o.strokes) strokes"
            if let p = o.path { s += ", saved \(p)" }
            if let ch = o.changed, !ch { s += " (nothing to \(operation))" }
            return s
        }
    }
}

struct Screenshot: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Write what the screen shows as PNG.")
    @OptionGroup var c: Connection
    @Argument(help: "Output file (.png), written by kioskctl.") var file: String
    @Option(help: "The output to capture (its connector, as `kioskctl outputs` names it); default: the first.") var output: String?
    func run() throws {
        let client = ControlClient(socketPath: c.socket, timeout: c.timeout)
        let r: ControlResponse
        do { r = try client.send(.screenshot(output: output)) } catch let e as ControlClientError {
            Posix.writeStandardError("kioskctl: \(e.description)\n")
            throw ExitCode(e.kind == .timeout ? 3 : 2)
        }
        guard r.status == 200, r.contentType == "image/png" else {
            let msg = r.errorMessage ?? String(decoding: r.body, as: UTF8.self)
            Posix.writeStandardError("kioskctl: \(msg) (HTTP \(r.status))\n")
            throw ExitCode(1)
        }
        do { try Self.write(r.body, to: file) } catch {
            Posix.writeStandardError("kioskctl: cannot write the screenshot: \(error)\n")
            throw ExitCode(1)
        }
        print("wrote \(file) (\(r.body.count) bytes)")
    }

    /// Writes `bytes` to `path` (created or truncated, mode 0644); errors name the call, the path and errno.
    static func write(_ bytes: [UInt8], to path: String) throws {
        let fd = try Posix.call("open", path: path) { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        var done = 0
        do {
            while done < bytes.count {
                done += try Posix.call("write", path: path) { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + done, $0.count - done) } }
            }
        } catch {
            close(fd)
            throw error
        }
        // Not retried on EINTR: the descriptor is gone either way.
        if close(fd) != 0 { throw Posix.error("close", path: path, errno: errno) }
    }
}

struct Blank: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Turn the screen off (on) or back on (off).")
    @OptionGroup var c: Connection
    @Argument(help: "on or off.") var state: String
    @Option(help: "The output to blank (its connector, as `kioskctl outputs` names it); default: the first.") var output: String?
    func validate() throws { guard ["on", "off"].contains(state) else { throw ValidationError("expected on or off, got '\(state)'") } }
    func run() throws { try c.call(.blank(on: state == "on", output: output), as: BlankAnswer.self) { "screen: \($0.blanked ? "blanked" : "on")" } }
}

struct BrightnessCmd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "brightness", abstract: "Show the backlight's brightness, or set it in percent (0…100; kept across restarts).",
        discussion: "With a brightness schedule the level holds until the schedule's next period.")
    @OptionGroup var c: Connection
    /// Captures `-1` too (the parser would take it for an option) so it gets the range error.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("Percent, 0…100 (0: backlight off). Without it: show the brightness.", valueName: "percent"))
    var values: [String] = []

    /// The words given, without a `--` that ends the options.
    var words: [String] { values.first == "--" ? Array(values.dropFirst()) : values }

    /// A percentage as people write it: decimal digits, at most two decimals, an optional `%`
    /// (no hexadecimal, exponents, signs or spaces); nil for anything else.
    static func decimalPercent(_ text: String) -> Double? {
        let t = text.hasSuffix("%") ? String(text.dropLast()) : text
        let parts = t.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].count <= 3,
              parts.allSatisfy({ $0.allSatisfy { ("0"..."9").contains($0) } }),
              parts.count == 1 || (1...2).contains(parts[1].count) else { return nil }
        return Double(t)
    }

    func validate() throws {
        guard words.count <= 1 else { throw ValidationError("brightness takes one percentage; got \(words.joined(separator: " "))") }
        guard let p = words.first else { return }
        guard let v = Self.decimalPercent(p), (0...100).contains(v) else {
            throw ValidationError("expected a percentage 0…100 with at most two decimals (like 40 or 12.5), got '\(p)'")
        }
    }
    func run() throws {
        let value = words.first.flatMap(Self.decimalPercent)
        try c.call(.brightness(percent: value), as: BrightnessAnswer.self) { o in
            var s = "brightness: \(Connection.number(o.percent)) % (\(o.device) via \(o.method)\(o.raw.map { ", raw \($0)" } ?? ""))"
            if o.blanked == true { s += ", screen blanked" }
            if let n = o.note { s += "\n\(n)" }
            return s
        }
    }
}

struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Reload the config file (a bad config is reported and the running one kept).")
    @OptionGroup var c: Connection
    func run() throws { try c.call(.reload, as: ReloadAnswer.self) { $0.message } }
}

struct Outputs: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the display output kioskd drives.")
    @OptionGroup var c: Connection
    func run() throws {
        try c.call(.outputs, as: OutputsAnswer.self) { o in
            o.outputs.map { o in
                let scene = o.scene.map { ", scene \($0)" } ?? ""
                let shown = o.framesShownLastMinute.map { n in
                    ", last frame shown \(o.lastFrameShown ?? "never"), \(n) frame\(n == 1 ? "" : "s") shown in the last minute"
                } ?? ""
                let error = o.error.map { "\n  error: \($0)" } ?? ""
                let cec = o.cec.map { "\n  cec: \($0.text)" } ?? ""
                return "\(o.name.map { "\($0): " } ?? "")\(o.description): logical \(o.logicalSize ?? "none"), rotation \(o.rotation)\(o.blanked ? ", blanked" : "")\(scene)\(shown)\(error)\(cec)\(o.truthText)"
            }.joined(separator: "\n")
        }
    }
}

struct Pair: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a one-time code that pairs a phone with the web page (shown on the kiosk's screen as a QR code).",
        discussion: "The code is valid once, for [web] pair_minutes (default 5). --print prints it without showing it on the screen. A code that takes 8 wrong guesses from the network is replaced by a 12-character one on the screen; status and the next pair report it.")
    @OptionGroup var c: Connection
    @Option(help: "owner (also pairs and revokes devices, reads recent errors, changes settings), operator (reads and changes) or viewer (reads only).") var role: String = "operator"
    @Flag(help: "Print the code and the page's address only; do not show them on the kiosk's screen.") var print = false
    func validate() throws {
        guard ["owner", "operator", "viewer"].contains(role) else { throw ValidationError("--role must be owner, operator or viewer; got '\(role)'") }
    }
    func run() throws {
        try c.call(.pair(role: role, show: !print), as: PairAnswer.self) { o in
            "code: \(o.code)\nurl:  \(o.url)\nrole: \(o.role)\nexpires: \(o.expires) (in \(o.expiresInSeconds) s)"
                + (o.previous.map { "\nprevious code: \($0.summary) (someone on the network guessed at it)" } ?? "")
        }
    }
}

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the paired devices, or revoke one at once: devices revoke NAME.")
    @OptionGroup var c: Connection
    @Argument(help: "revoke, followed by the device's name.") var words: [String] = []
    func validate() throws {
        guard words.isEmpty || (words.count == 2 && words[0] == "revoke") else {
            throw ValidationError("expected no argument (list) or: revoke NAME; got \(words.joined(separator: " "))")
        }
    }
    func run() throws {
        if words.count == 2 {
            try c.call(.revokeDevice(name: words[1]), as: RevokeAnswer.self) { "revoked: \($0.revoked)" }
            return
        }
        try c.call(.devices, as: DevicesAnswer.self) { o in
            if o.devices.isEmpty { return "no paired device" }
            return o.devices.map { "\($0.name)\t\($0.role)\tpaired \($0.created)\tlast use \($0.lastUse ?? "never")" }.joined(separator: "\n")
        }
    }
}
