import Foundation
import KioskControl
import Testing
import KioskTesting

/// The control protocol module: what kioskctl links, the answers' bytes, and requests that the
/// router turns back into the commands they were made from.
@Suite struct KioskControlTests {
    /// kioskctl is built from KioskControl alone: none of the display, input or drawing
    /// libraries is loaded with it. Fails if a dependency on KioskDaemon (or any module that
    /// links them) comes back.
    @Test func kioskctlLinksNoDisplayInputOrDrawingLibrary() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Binaries.kioskctl), "build kioskctl first (\(Binaries.kioskctl))")
        let (status, text, _) = try SpawnedProcess.run("/usr/bin/ldd", [Binaries.kioskctl])
        #expect(status == 0, "\(text)")
        let libraries = text.split(separator: "\n").compactMap { $0.split(whereSeparator: { $0 == " " || $0 == "\t" }).first.map(String.init) }
        // The check itself: ldd lists libraries (the C library at least).
        #expect(libraries.contains { $0.hasPrefix("libc.so") }, "\(text)")
        for banned in ["libdrm", "libinput", "libcairo", "libpango", "libudev", "libsystemd"] {
            #expect(!libraries.contains { $0.hasPrefix(banned) }, "kioskctl links \(banned): \(text)")
        }
    }

    /// The answers are written as the daemon wrote them before they had types: JSONSerialization
    /// of the same object with sorted keys and unescaped slashes, then a newline.
    @Test func answersAreTheBytesOfTheDocumentedObjects() throws {
        func old(_ o: [String: Any]) throws -> [UInt8] {
            [UInt8](try JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) + [0x0A]
        }
        let status = StatusAnswer(
            scene: "clock", sceneKind: "clock", sceneSummary: "12:00 / ok", scenes: ["clock", "score"], theme: "dark", chosenTheme: "default",
            output: "headless 320x200", mode: "320x200", rotation: 90, blanked: false, fps: 59.9, frames: 1234,
            frameMs: .init(p50: 1.25, p90: 2, p99: 0.001, max: 17.5), uptimeSeconds: 3.0,
            inputDevices: [.init(name: "Touch", sysname: "event3", capabilities: ["touch", "keyboard"])],
            config: "/etc/kioskd/kioskd.toml",
            state: .init(directory: "/var/lib/kioskd", mode: "not saved", durable: false, reason: "read-only"))
        let statusObject: [String: Any] = [
            "scene": "clock", "scene_kind": "clock", "scene_summary": "12:00 / ok", "scenes": ["clock", "score"], "theme": "dark",
            "chosen_theme": "default", "output": "headless 320x200", "mode": "320x200", "rotation": 90, "blanked": false,
            "fps": 59.9, "frames": 1234, "frame_ms": ["p50": 1.25, "p90": 2.0, "p99": 0.001, "max": 17.5], "uptime_seconds": 3.0,
            "input_devices": [["name": "Touch", "sysname": "event3", "capabilities": ["touch", "keyboard"]]],
            "config": "/etc/kioskd/kioskd.toml",
            "state": ["directory": "/var/lib/kioskd", "mode": "not saved", "durable": false, "reason": "read-only"],
        ]
        #expect(ControlResponse.json(200, status).body == (try old(statusObject)))
        let outputs = OutputsAnswer(outputs: [.init(description: "HDMI-A-1", logicalSize: nil, rotation: 0, blanked: true)])
        #expect(ControlResponse.json(200, outputs).body
                == (try old(["outputs": [["description": "HDMI-A-1", "logical_size": NSNull(), "rotation": 0, "blanked": true]]])))
        let cases: [(ControlResponse, [String: Any])] = [
            (.json(200, ChoiceAnswer(scene: "clock", saved: false, note: "state = \"volatile\"")), ["ok": true, "scene": "clock", "saved": false, "note": "state = \"volatile\""]),
            (.json(200, ChoiceAnswer(theme: "night")), ["ok": true, "theme": "night"]),
            (.json(200, CounterAnswer(ok: nil, counter: "HOME", value: -3)), ["counter": "HOME", "value": -3]),
            (.json(200, CounterAnswer(counter: "HOME", value: 12)), ["ok": true, "counter": "HOME", "value": 12]),
            (.json(200, PaintAnswer(strokes: 4, changed: true)), ["ok": true, "strokes": 4, "changed": true]),
            (.json(200, PaintAnswer(strokes: 0, path: "/var/lib/kioskd/paintings/a.png")), ["ok": true, "strokes": 0, "path": "/var/lib/kioskd/paintings/a.png"]),
            (.json(200, BlankAnswer(blanked: true)), ["ok": true, "blanked": true]),
            (.json(200, ReloadAnswer(message: "reloaded /etc/kioskd.toml: scenes a, b")), ["ok": true, "message": "reloaded /etc/kioskd.toml: scenes a, b"]),
            (.error(404, "unknown counter 'X'", field: "name"), ["error": "unknown counter 'X'", "field": "name"]),
            (.error(503, "kioskd is busy"), ["error": "kioskd is busy"]),
        ]
        for (answer, object) in cases {
            #expect(answer.body == (try old(object)), "\(String(decoding: answer.body, as: UTF8.self))")
        }
        // And the types read back what they wrote.
        #expect(try ControlResponse.json(200, status).decode(StatusAnswer.self) == status)
        #expect(try ControlResponse.json(200, outputs).decode(OutputsAnswer.self) == outputs)
    }

    /// Every command's request is parsed back into the same command: the client and the server
    /// share one route table.
    @Test func everyCommandsRequestParsesBackToIt() throws {
        var commands: [ControlCommand] = [.status, .outputs, .scene(name: "clock"), .theme(name: "high-contrast"), .screenshot(),
                                          .blank(on: true), .blank(on: false), .reload, .horn, .recentErrors, .settings,
                                          .pair(role: "owner", show: true), .pair(role: "viewer", show: false),
                                          .paint(op: .save, name: "drawing-1.png"), .paint(op: .save, name: nil),
                                          .brightness(percent: nil), .brightness(percent: 40), .brightness(percent: 12.5), .brightness(percent: 0)]
        for name in ["HOME", "a b", "50%", "ü/x"] {
            commands.append(.counter(name: name, op: .get, value: nil))
            commands.append(.counter(name: name, op: .set, value: -5))
            for op in [ControlCommand.CounterOp.inc, .dec, .reset] { commands.append(.counter(name: name, op: op, value: nil)) }
        }
        for op in [ControlCommand.PaintOp.clear, .undo, .redo] { commands.append(.paint(op: op, name: nil)) }
        for c in commands {
            let r = c.request
            #expect(try ControlRouter.parse(method: r.method, uri: r.path, body: r.body) == c, "\(r.method) \(r.path)")
        }
        // The documented bodies.
        #expect(String(decoding: ControlCommand.counter(name: "HOME", op: .set, value: -5).request.body, as: UTF8.self) == #"{"value":-5}"#)
        #expect(String(decoding: ControlCommand.blank(on: true).request.body, as: UTF8.self) == #"{"on":true}"#)
        // The 404 answer lists the routes of the table, in order.
        #expect(ControlRouter.routes == ["GET /status", "GET /outputs", "POST /scene", "POST /theme", "GET /theme", "GET /counter/{name}",
                                         "POST /counter/{name}/{set|inc|dec|reset}", "POST /paint/{clear|undo|redo|save}",
                                         "POST /screenshot", "GET /screenshot", "POST /blank", "POST /reload", "GET /brightness", "POST /brightness", "POST /clock",
                                         "POST /clock/mode", "POST /pair", "GET /devices", "POST /devices/{name}/revoke", "GET /errors", "GET /themes",
                                         "GET /paintings", "GET /paintings/{name}", "POST /horn", "GET /settings", "PATCH /settings", "PATCH /settings/fleet"])
        #expect(String(decoding: ControlCommand.brightness(percent: 40).request.body, as: UTF8.self) == #"{"percent":40}"#)
    }
}
