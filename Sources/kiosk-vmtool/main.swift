#if canImport(Glibc)
import Glibc
#endif
import KioskCore

// kiosk-vmtool runs inside the test VM: it makes uinput devices and plays scripted input,
// deterministic and bounded in time. Progress goes to stdout, one "vmtool: …" line per step.

let usage = """
usage:
  kiosk-vmtool touch --stroke X,Y:X,Y[:…] [--stroke …] [options]
      Creates a multi-touch touchscreen and draws the strokes at once, one finger each.
      Points are normalised panel coordinates (0…1, the panel's native orientation).
      --panel ideal|odd     ideal: 0…4095², 16 units/mm; odd: 0…799×0…479, resolution 0,
                            ABS_MT_TOOL_TYPE (default ideal)
      --name NAME           device name (default "kiosk-vm touchscreen")
      --steps N             motion frames per stroke (default 30)
      --step-ms MS          pause between frames (default 20)
      --unplug-after N      destroy the device after N steps, fingers still down
      --wait-log FILE       before drawing, wait until FILE contains --wait-text
      --wait-text TEXT      (default: the device name)
      --timeout-ms MS       bound for --wait-log (default 30000)
      --settle-ms MS        pause after the device is seen (default 300)
      --hold-ms MS          keep the device this long after the last frame (default 300)
  kiosk-vmtool keys KEY[*N] … [--name NAME] [--gap-ms MS] [--wait-log FILE] [--wait-text TEXT]
      Creates a keyboard and taps the keys in order (names as in linux/input-event-codes.h).
  kiosk-vmtool input-events [--seat S] [--rotation DEG] [--calibration "a b c d e f"]
                            [--map-to-output NAME] [--pointer-as-touch false] [--duration-ms MS]
      Runs kioskd's libinput source and prints one "vmtool: event …" line per input event.
  kiosk-vmtool drm …
      DRM probes (DRMProbe.swift).
  kiosk-vmtool drm-heads [--device PATH] [--api A] [--mode WxH] [--flips N] OUTPUT=RRGGBB …
      One DRM card driving several heads at once (DRMHeadsProbe.swift).
  kiosk-vmtool vt activate N [--timeout-ms MS] [--device PATH] | vt active
      Switches virtual consoles (VT_ACTIVATE, bounded wait), or prints the active one.
  kiosk-vmtool audio-capture [--device hw:Loopback,1,0] [--seconds S] [--started-file PATH]
      Records 48 kHz stereo and prints when the sound began (CLOCK_MONOTONIC), its length and
      its strongest frequencies (AudioCapture.swift).
"""

func say(_ s: String) {
    print("vmtool: \(s)")
    fflush(nil)  // all output streams: the C global stdout is not concurrency-safe to name in Swift 6
}

func fail(_ s: String, code: Int32 = 1) -> Never {
    FileHandleLite.standardError("kiosk-vmtool: \(s)\n")
    exit(code)
}

enum FileHandleLite {
    static func standardError(_ s: String) {
        _ = s.withCString { write(2, $0, strlen($0)) }
    }
}

/// Options as "--key value" pairs plus positional words; repeated keys keep every value.
struct Options {
    var values: [String: [String]] = [:]
    var positional: [String] = []
    init(_ args: ArraySlice<String>, known: Set<String>) {
        var it = args.makeIterator()
        while let a = it.next() {
            if a.hasPrefix("--") {
                let key = String(a.dropFirst(2))
                guard known.contains(key) else { fail("unknown option \(a)\n\(usage)", code: 2) }
                guard let v = it.next() else { fail("option \(a) needs a value", code: 2) }
                values[key, default: []].append(v)
            } else {
                positional.append(a)
            }
        }
    }
    func string(_ k: String) -> String? { values[k]?.last }
    func int(_ k: String, _ d: Int) -> Int {
        guard let s = string(k) else { return d }
        guard let v = Int(s), v >= 0 else { fail("--\(k) needs a whole number ≥ 0, got '\(s)'", code: 2) }
        return v
    }
}

/// Polls `path` (every 50 ms, at most `timeoutMs`) until it contains `text`.
func waitForText(_ text: String, in path: String, timeoutMs: Int) -> Bool {
    let deadline = nowNanos() + Int64(timeoutMs) * 1_000_000
    repeat {
        if let f = fopen(path, "r") {
            var data: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buf, 1, buf.count, f)
                if n <= 0 { break }
                data += buf[0..<n]
            }
            fclose(f)
            if String(decoding: data, as: UTF8.self).contains(text) { return true }
        }
        sleepMs(50)
    } while nowNanos() < deadline
    return false
}

func waitUntilSeen(_ o: Options, name: String) {
    if let log = o.string("wait-log") {
        let text = o.string("wait-text") ?? name
        let t = o.int("timeout-ms", 30000)
        guard waitForText(text, in: log, timeoutMs: t) else { fail("'\(text)' did not appear in \(log) within \(t) ms", code: 3) }
        say("seen in \(log)")
    }
    sleepMs(o.int("settle-ms", 300))
}

func runTouch(_ args: ArraySlice<String>) throws {
    let o = Options(args, known: ["stroke", "panel", "name", "steps", "step-ms", "unplug-after", "wait-log", "wait-text",
                                  "timeout-ms", "settle-ms", "hold-ms"])
    let strokes = try (o.values["stroke"] ?? []).map { try Stroke(parsing: $0) }
    guard !strokes.isEmpty else { fail("touch needs at least one --stroke\n\(usage)", code: 2) }
    guard let kind = TouchPanelKind(rawValue: o.string("panel") ?? "ideal") else { fail("--panel must be ideal or odd", code: 2) }
    guard strokes.count <= Int(kind.slots) else { fail("a \(kind.rawValue) panel has \(kind.slots) slots, got \(strokes.count) strokes", code: 2) }
    let name = o.string("name") ?? "kiosk-vm touchscreen"
    let panel = try TouchPanel(name: name, kind: kind)
    let nodes = try panel.device.nodes()
    say("created \(name) (\(nodes.sysname), \(nodes.event ?? "no event node"), \(kind.rawValue))")
    waitUntilSeen(o, name: name)
    let unplug = o.string("unplug-after").map { _ in o.int("unplug-after", 0) }
    try playStrokes(strokes, on: panel, steps: o.int("steps", 30), stepMs: o.int("step-ms", 20), unplugAfter: unplug)
    if unplug == nil {
        say("drew \(strokes.count) stroke(s)")
        sleepMs(o.int("hold-ms", 300))
        panel.device.destroy()
    }
    say("done")
}

func runKeys(_ args: ArraySlice<String>) throws {
    let o = Options(args, known: ["name", "gap-ms", "hold-ms", "wait-log", "wait-text", "timeout-ms", "settle-ms"])
    let keys = try o.positional.map(parseKeySpec)
    guard !keys.isEmpty else { fail("keys needs at least one key name\n\(usage)", code: 2) }
    let name = o.string("name") ?? "kiosk-vm keyboard"
    let kb = try Keyboard(name: name)
    let nodes = try kb.device.nodes()
    say("created \(name) (\(nodes.sysname), \(nodes.event ?? "no event node"))")
    waitUntilSeen(o, name: name)
    let gap = o.int("gap-ms", 150), hold = o.int("hold-ms", 40)
    var n = 0
    for (code, count) in keys {
        for _ in 0..<count {
            try kb.tap(code, holdMs: hold)
            n += 1
            sleepMs(gap)
        }
    }
    say("pressed \(n) key(s)")
    kb.device.destroy()
    say("done")
}

let argv = CommandLine.arguments
guard argv.count >= 2 else { fail(usage, code: 2) }
do {
    switch argv[1] {
    case "touch": try runTouch(argv.dropFirst(2))
    case "keys": try runKeys(argv.dropFirst(2))
    case "input-events": try runInputEvents(argv.dropFirst(2))
    case "drm": DRMProbe.main(Array(argv.dropFirst(2)))
    case "drm-heads": DRMHeadsProbe.main(Array(argv.dropFirst(2)))
    case "vt": VTTool.main(argv.dropFirst(2))
    case "audio-capture": try runAudioCapture(argv.dropFirst(2))
    case "-h", "--help", "help": print(usage)
    default: fail("unknown command '\(argv[1])'\n\(usage)", code: 2)
    }
} catch {
    fail("\(error)")
}
