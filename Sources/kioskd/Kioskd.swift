import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import KioskConfig
import KioskCore
import KioskDaemon
import KioskPosix
import KioskState
import KioskctlCommand
import Logging

/// `kioskd`: the kiosk display daemon.
@main
struct Kioskd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kioskd",
        abstract: "Kiosk display daemon: shows clock, counter and paint scenes on a DRM/KMS display.",
        discussion: """
            Run without a display: kioskd --config config/kioskd.toml --snapshot out.png
            (renders the configured scene on the headless backend and writes it as PNG).
            Exit status: 0 ok, 1 runtime failure, 78 bad config or a state directory written by a newer
            kioskd (systemd does not restart on 78).
            """,
        version: KioskVersion.current)

    @Option(name: .long, help: "Config file.")
    var config: String = DaemonConfig.defaultPath

    @Option(name: .long, help: "Display backend, overriding [display] backend: drm or headless.")
    var backend: String?

    @Option(name: .long, help: "Render on the headless backend, write the frame as PNG to this path and exit.")
    var snapshot: String?

    @Option(name: .long, help: ArgumentHelp("With --snapshot: a finger drawn along x,y:x,y[:x,y…] (0…1 of the screen) before the frame is taken; repeat for several fingers at once.", valueName: "path"))
    var stroke: [String] = []

    @Option(name: .long, help: "With --snapshot: wait this many seconds before taking the frame.")
    var snapshotAfter: Double = 0

    @Flag(name: .long, help: "List every DRM device (driver, by-path name) with its connectors and modes, and exit.")
    var listOutputs = false

    @Flag(name: .long, help: "Check the config (and the scenes' tables and the theme) and exit.")
    var checkConfig = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = "info"

    func validate() throws {
        if let b = backend, DisplayBackend(rawValue: b) == nil {
            throw ValidationError("--backend must be drm or headless, got '\(b)'")
        }
        if Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical; got '\(logLevel)'")
        }
        if snapshotAfter < 0 || !snapshotAfter.isFinite { throw ValidationError("--snapshot-after must be 0 or more seconds") }
        if !stroke.isEmpty && snapshot == nil { throw ValidationError("--stroke needs --snapshot") }
        for s in stroke {
            do { _ = try TouchScript.parsePath(s) } catch { throw ValidationError("--stroke: \(error)") }
        }
    }

    /// Entry point: moves Swift concurrency off libdispatch's worker pool before anything runs
    /// asynchronously (see `DaemonRunner.runConcurrencyOnLoopThread`), then parses and runs there
    /// while the main thread waits. Not an async `main`: on Linux that one leaves the main thread
    /// through `dispatch_main`, whose `pthread_exit` unwinds the thread's stack and so pages in
    /// about 1 MB of the executable's unwind tables (.eh_frame) at every start, for nothing.
    static func main() {
        // Called kioskctl (the package's /usr/bin/kioskctl is a link to kioskd): that tool.
        if CommandLine.arguments.first?.split(separator: "/").last == "kioskctl" {
            Kioskctl.main(Array(CommandLine.arguments.dropFirst()))
            // A command that succeeded returns here: done, not on into the daemon's arguments.
            Glibc.exit(0)
        }
        DaemonRunner.runConcurrencyOnLoopThread()
        let finished = DispatchSemaphore(value: 0)
        // Detached: a task made here would inherit the main actor, whose queue nothing drains
        // while the main thread waits.
        Task.detached {
            // A daemon's usual arguments are read without ArgumentParser (`DaemonArguments.quick`).
            if let quick = DaemonArguments.quick(Array(CommandLine.arguments.dropFirst())) {
                do { try await start(quick) } catch { exit(withError: error) }
            } else {
                await main(nil)
            }
            finished.signal()
        }
        // The main thread has nothing else to do: fontconfig's configuration is loaded here,
        // beside the arguments, the config, the state and the daemon being built, instead of on
        // the render thread before the first frame (BENCHMARKS.md, "Start-up").
        DaemonRunner.prepareFonts()
        finished.wait()
    }

    /// The parsed options, as `DaemonArguments.quick` reads them too.
    var arguments: DaemonArguments {
        DaemonArguments(config: config, backend: backend, snapshot: snapshot, stroke: stroke, snapshotAfter: snapshotAfter,
                        listOutputs: listOutputs, checkConfig: checkConfig, logLevel: logLevel)
    }

    func run() async throws {
        try await Self.start(arguments)
    }

    static func start(_ arguments: DaemonArguments) async throws {
        let (config, backend, snapshot, stroke, snapshotAfter, listOutputs, checkConfig, logLevel) = (
            arguments.config, arguments.backend, arguments.snapshot, arguments.stroke, arguments.snapshotAfter,
            arguments.listOutputs, arguments.checkConfig, arguments.logLevel)
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { JournalLogHandler(label: $0, level: level) }
        var logger = Logger(label: "kioskd")
        logger.logLevel = level

        if listOutputs {
            // Every device, whatever the config names: what a config for this board can use.
            do { print(try Backends.listOutputs(device: nil), terminator: "") } catch {
                fail("\(error)", code: 1)
            }
            return
        }

        var cfg: DaemonConfig
        do {
            cfg = try DaemonConfig.load(path: config)
            if let b = backend.flatMap(DisplayBackend.init(rawValue:)) {
                cfg.display.backend = b
                try cfg.checkHeadlessModes()
            }
            if checkConfig || snapshot == nil {
                // What the daemon needs at start (group, socket and state paths), checked without
                // creating anything: a config the check accepts does not fail there.
                for w in try cfg.checkSystem() {
                    if checkConfig { Posix.writeStandardError("kioskd: warning: \(w)\n") } else { logger.warning("\(w)") }
                }
            }
            if checkConfig {
                // Make the scenes to check their tables too (in memory: nothing is written; never shown, so no counter change comes from them).
                _ = try SceneRegistry.standard.make(cfg.scenes, state: MemoryStateStore(), intents: { _ in }, logger: logger, dataDirectory: "/nonexistent")
                let outputs = cfg.outputs.count > 1 ? ", outputs " + cfg.outputs.map { "\($0.name): \($0.scenes.joined(separator: " "))" }.joined(separator: ", ") : ""
                print("\(config): OK (theme \(cfg.themeName), scenes \(cfg.scenes.map { "\($0.name) (\($0.kind))" }.joined(separator: ", ")), backend \(cfg.display.backend.rawValue)\(outputs))")
                return
            }
        } catch let e as KioskError where e.kind == .config {
            fail(e.message, code: 78)
        }

        do {
            if let out = snapshot {
                let paths = try stroke.map { TouchScript.path(through: try TouchScript.parsePath($0)) }
                try DaemonRunner.snapshot(config: cfg, to: out, afterSeconds: snapshotAfter, strokes: paths, logger: logger)
                print("wrote \(out)")
                return
            }
            try await DaemonRunner.run(config: cfg, logger: logger)
        } catch let e as KioskError where e.kind == .config {
            fail(e.message, code: 78)
        } catch {
            logger.critical("kioskd failed", metadata: ["error": "\(error)"])
            fail("\(error)", code: 1)
        }
    }

    /// Prints `kioskd: message` to stderr and exits. Under systemd (JOURNAL_STREAM set) the line
    /// carries the error priority `<3>`, so `journalctl -p err` (or `-p warning`) shows why kioskd
    /// did not start.
    static func fail(_ message: String, code: Int32) -> Never {
        Posix.writeStandardError(Kioskd.failureLine(message, environment: ProcessInfo.processInfo.environment))
        Glibc.exit(code)
    }

    static func failureLine(_ message: String, environment: [String: String]) -> String {
        let prefix = environment["JOURNAL_STREAM"].map { $0.isEmpty ? "" : "<3>" } ?? ""
        return "\(prefix)kioskd: \(message.replacing("\n", with: " "))\n"
    }
}
