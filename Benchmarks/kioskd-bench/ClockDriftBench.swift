#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import KioskCore
import KioskTesting

/// `kioskd-bench clock-drift`: a headless kioskd's game clock run for `--seconds` in real time
/// (default 1200: the 20 minutes of docs/scoreboard.md; 60 for CI), measured from outside against
/// CLOCK_MONOTONIC. The truth is the start: the instant T the daemon took `POST /clock start`
/// (from its first frame; checked to lie between the request's send and its answer) with the
/// period's length R left then; at instant t the truth is R − (t − T). Measured from kioskd's
/// frame log ("game clock shown", --log-level debug: each frame's CLOCK_MONOTONIC instant, its
/// face and the time left it computed):
/// - each frame's time left against the truth at its instant (no accumulated drift: 0 ns);
/// - each face change: from the instant the truth reached that face (`M:SS` appears when exactly
///   M:SS is left) to the frame showing it; never early, and in every minute the promptest within
///   one frame (17 ms) — a clock off by X has no lag below X, a frame woken late is the machine's
///   load;
/// - `GET /status` every `--status-every` seconds: `remaining_ms` against the truth over the
///   request's bracket.
/// Exits non-zero on any of those problems.
struct ClockDriftBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clock-drift",
        abstract: "A headless kioskd's game clock run in real time against CLOCK_MONOTONIC: the shown time after N minutes.")

    @Option(help: "How long the clock runs, in seconds (1200: the documented 20 minutes; 60 for CI).") var seconds: Int = 1200
    @Option(help: "Seconds between two status reads.") var statusEvery: Int = 10
    @Option(help: "The kioskd to run (default: the one next to this executable).") var kioskd: String?

    func validate() throws {
        guard (10...5_900).contains(seconds) else { throw ValidationError("--seconds must be 10…5900 (the period is one minute longer, at most 99:59)") }
        guard statusEvery >= 1 else { throw ValidationError("--status-every must be at least 1") }
    }

    func run() throws {
        guard let k = kioskd ?? Daemon.locate() else { throw ValidationError("no kioskd next to kioskd-bench: give --kioskd PATH") }
        let d = "/var/tmp/kioskd-clockdrift-\(getpid())"
        mkdir(d, 0o700)
        defer { _ = try? FileManager.default.removeItem(atPath: d) }
        let periodMinutes = seconds / 60 + 1
        let config = """
            state_dir = "\(d)/state"
            [display]
            backend = "headless"
            headless_size = "640x360"
            [scenes]
            order = ["board"]
            [scene.board]
            kind = "counter"
            [[scene.board.counter]]
            name = "home"
            [scene.board.clock]
            period_length = "\(periodMinutes):00"
            tenths_below = "0:00"
            [control]
            socket = "\(d)/c.sock"

            """
        try config.write(toFile: "\(d)/kioskd.toml", atomically: true, encoding: .utf8)
        let daemon = try Daemon.startNotified(kioskd: k, config: "\(d)/kioskd.toml", dir: d, timeoutMs: 60_000, logLevel: "debug")
        defer {
            kill(daemon.pid, SIGTERM)
            var st: Int32 = 0
            waitpid(daemon.pid, &st, 0)
        }
        let conn = try UnixHTTPConnection(path: "\(d)/c.sock", timeout: 30)
        let lengthMs = periodMinutes * 60_000
        let a0 = nowNanos(.monotonic)
        let started = try conn.request("POST", "/clock", body: #"{"words":["start"]}"#)
        let b0 = nowNanos(.monotonic)
        guard started.status == 200 else { throw ValidationError("POST /clock start: HTTP \(started.status) \(started.body)") }
        print("clock-drift: \(k)")
        print("  a \(periodMinutes):00 period started by POST /clock between \(a0) and \(b0) ns (CLOCK_MONOTONIC; \(String(format: "%.3f", Double(b0 - a0) / 1e6)) ms: the answer waits for the commit); running for \(seconds) s")
        // The daemon's start instant T, from its first frame after the start (the frame's instant
        // plus the time left it computed, less the period): it must lie inside the request.
        let logPath = "\(d)/kioskd.log"
        var firstShown: ClockTruth.Shown?
        for _ in 0..<200 where firstShown == nil {
            firstShown = ClockTruth.shown((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").first
            if firstShown == nil { usleep(10_000) }
        }
        guard let s0 = firstShown else { throw ValidationError("kioskd's log (\(logPath)) has no frame of the running clock within 2 s") }
        let since = s0.frameNs + s0.remainingNs - Int64(lengthMs) * 1_000_000
        guard (a0...b0).contains(since) else {
            throw ValidationError("the daemon's start instant \(since) is not inside the request (\(a0)…\(b0))")
        }
        print("  the daemon's start instant T is \(String(format: "%.3f", Double(since - a0) / 1e6)) ms into the request")
        let truth = ClockTruth(sinceNs: since, remainingMs: lengthMs)

        var statusErrors: [ClockTruth.Interval] = []
        let end = a0 + Int64(seconds) * 1_000_000_000
        while true {
            let left = end - nowNanos(.monotonic)
            if left <= 0 { break }
            usleep(UInt32(min(left, Int64(statusEvery) * 1_000_000_000) / 1000))
            let a = nowNanos(.monotonic)
            let r = try conn.request("GET", "/status")
            let b = nowNanos(.monotonic)
            guard let ms = Self.remainingMs(r.body) else { throw ValidationError("GET /status has no clocks[0].clock.remaining_ms: \(r.body.prefix(300))") }
            statusErrors.append(truth.statusError(remainingMs: ms, askedNs: a, answeredNs: b))
        }
        let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let report = truth.report(frameLog: log, statusErrors: statusErrors, ranSeconds: seconds)
        for line in report.lines { print("  " + line) }
        if !report.problems.isEmpty {
            for p in report.problems { print("  FAILED: \(p)") }
            throw ExitCode(1)
        }
    }

    static func remainingMs(_ statusBody: String) -> Int? {
        guard let obj = (try? JSONSerialization.jsonObject(with: Data(statusBody.utf8))) as? [String: Any],
              let clocks = obj["clocks"] as? [[String: Any]], let clock = clocks.first?["clock"] as? [String: Any] else { return nil }
        return clock["remaining_ms"] as? Int
    }
}
