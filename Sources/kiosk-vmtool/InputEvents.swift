#if canImport(Glibc)
import Glibc
#endif
import KioskCore
import KioskInput
import Logging
import KioskPosix

/// One line per input event, for checks in VM scenarios (numbers with 4 decimals).
func describe(_ e: InputEvent) -> String {
    func f(_ v: Double) -> String {
        let r = (v * 10000).rounded() / 10000
        return String(r)
    }
    switch e {
    case .touch(let t): return "touch \(t.phase.rawValue) slot=\(t.slot) x=\(f(t.x)) y=\(f(t.y))"
    case .touchFrame: return "frame"
    case .key(let code, let state, _): return "key \(KeyCode.name(of: code) ?? String(code)) \(state.rawValue)"
    case .gesture(let g): return "gesture \(g)"
    case .pointerMotion(let dx, let dy, _): return "pointer-motion dx=\(f(dx)) dy=\(f(dy))"
    case .pointerButton(let pressed, _): return "pointer-button \(pressed ? "pressed" : "released")"
    case .deviceAdded(let d): return "device-added \(d.name) [\(d.capabilities.names.joined(separator: ","))]"
    case .deviceRemoved(let d): return "device-removed \(d.name) [\(d.capabilities.names.joined(separator: ","))]"
    }
}

/// Runs kioskd's libinput source and prints every event until `--duration-ms` passes.
func runInputEvents(_ args: ArraySlice<String>) throws {
    let o = Options(args, known: ["seat", "rotation", "calibration", "map-to-output", "pointer-as-touch", "duration-ms"])
    guard let rotation = Rotation(degrees: o.int("rotation", 0)) else { fail("--rotation must be 0, 90, 180 or 270", code: 2) }
    var calibration: [Double]?
    if let c = o.string("calibration") {
        calibration = try c.split(whereSeparator: { $0 == " " || $0 == "," }).map {
            guard let v = Double($0) else { throw KioskError.config("--calibration: '\($0)' is not a number") }
            return v
        }
    }
    let options = InputOptions(seat: o.string("seat") ?? "seat0", calibration: calibration, rotation: rotation,
                               mapToOutput: o.string("map-to-output"), pointerAsTouch: o.string("pointer-as-touch") != "false")
    var logger = Logger(label: "kiosk-vmtool")
    logger.logLevel = .info
    let loop = try EventLoop()
    let source = try LibInputSource(options: options, loop: loop, logger: logger)
    source.onEvent = { say("event " + describe($0)) }
    try loop.schedule(after: Int64(o.int("duration-ms", 20000)) * 1_000_000) { _ in loop.stop() }
    say("input ready, \(source.devices.count) device(s)")
    try loop.run()
    source.shutdown()
    say("done")
}
