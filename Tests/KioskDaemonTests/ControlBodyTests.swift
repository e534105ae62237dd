import KioskControl
import Testing

/// Every refusal of a request body, route by route, with the texts the router answers. Recorded
/// from the router that read bodies through JSONSerialization (364 bodies); since bodies are read
/// with JSONDecoder (`JSONValue`) a few texts say the value as read — `true` not `1`, `-0.0`,
/// `1` for `1.0`, `1.2345678901234567e+19` — and invalid JSON is named with the body's start,
/// as JSONDecoder gives no position.
@Suite struct ControlBodyTests {
    static let refusals: [(uri: String, body: String, error: ControlRequestError)] = [
        ("/scene", "  \n", ControlRequestError(400, "missing request body: expected a JSON object")),
        ("/scene", "", ControlRequestError(400, "missing request body: expected a JSON object")),
        ("/scene", "{bad", ControlRequestError(400, "request body is not valid JSON (RFC 8259): {bad")),
        ("/scene", "[1,", ControlRequestError(400, "request body is not valid JSON (RFC 8259): [1,")),
        ("/scene", #"{"a":}"#, ControlRequestError(400, #"request body is not valid JSON (RFC 8259): {"a":}"#)),
        ("/scene", "[1,2]", ControlRequestError(400, "request body must be a JSON object, got an array")),
        ("/scene", "3", ControlRequestError(400, "request body must be a JSON object, got a number (3)")),
        ("/scene", #""s""#, ControlRequestError(400, #"request body must be a JSON object, got a string ("s")"#)),
        ("/scene", "null", ControlRequestError(400, "request body must be a JSON object, got null")),
        ("/scene", "true", ControlRequestError(400, "request body must be a JSON object, got a boolean (true)")),
        ("/scene", "{}", ControlRequestError(400, "missing field 'name' (a string)", field: "name")),
        ("/scene", #"{"name":3}"#, ControlRequestError(400, "field 'name' must be a string, got a number (3)", field: "name")),
        ("/scene", #"{"name":-0}"#, ControlRequestError(400, "field 'name' must be a string, got a number (-0.0)", field: "name")),
        ("/scene", #"{"name":1.0}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1)", field: "name")),
        ("/scene", #"{"name":1.5}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1.5)", field: "name")),
        ("/scene", #"{"name":1e300}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1e+300)", field: "name")),
        ("/scene", #"{"name":12345678901234567890}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1.2345678901234567e+19)", field: "name")),
        ("/scene", #"{"name":true}"#, ControlRequestError(400, "field 'name' must be a string, got a boolean (true)", field: "name")),
        ("/scene", #"{"name":false}"#, ControlRequestError(400, "field 'name' must be a string, got a boolean (false)", field: "name")),
        ("/scene", #"{"name":null}"#, ControlRequestError(400, "field 'name' must be a string, got null", field: "name")),
        ("/scene", #"{"name":""}"#, ControlRequestError(400, "field 'name' must not be empty", field: "name")),
        ("/scene", #"{"name":[1]}"#, ControlRequestError(400, "field 'name' must be a string, got an array", field: "name")),
        ("/scene", #"{"name":{}}"#, ControlRequestError(400, "field 'name' must be a string, got an object", field: "name")),
        ("/theme", "{}", ControlRequestError(400, "missing field 'name' (a string)", field: "name")),
        ("/theme", #"{"name":3}"#, ControlRequestError(400, "field 'name' must be a string, got a number (3)", field: "name")),
        ("/theme", #"{"name":-0}"#, ControlRequestError(400, "field 'name' must be a string, got a number (-0.0)", field: "name")),
        ("/theme", #"{"name":1.0}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1)", field: "name")),
        ("/theme", #"{"name":1.5}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1.5)", field: "name")),
        ("/theme", #"{"name":1e300}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1e+300)", field: "name")),
        ("/theme", #"{"name":12345678901234567890}"#, ControlRequestError(400, "field 'name' must be a string, got a number (1.2345678901234567e+19)", field: "name")),
        ("/theme", #"{"name":true}"#, ControlRequestError(400, "field 'name' must be a string, got a boolean (true)", field: "name")),
        ("/theme", #"{"name":false}"#, ControlRequestError(400, "field 'name' must be a string, got a boolean (false)", field: "name")),
        ("/theme", #"{"name":null}"#, ControlRequestError(400, "field 'name' must be a string, got null", field: "name")),
        ("/theme", #"{"name":""}"#, ControlRequestError(400, "field 'name' must not be empty", field: "name")),
        ("/theme", #"{"name":[1]}"#, ControlRequestError(400, "field 'name' must be a string, got an array", field: "name")),
        ("/theme", #"{"name":{}}"#, ControlRequestError(400, "field 'name' must be a string, got an object", field: "name")),
        ("/counter/HOME/set", "{}", ControlRequestError(400, "missing field 'value' (an integer)", field: "value")),
        ("/counter/HOME/set", #"{"value":1.5}"#, ControlRequestError(400, "field 'value' must be an integer, got 1.5", field: "value")),
        ("/counter/HOME/set", #"{"value":1e300}"#, ControlRequestError(400, "field 'value' must be an integer, got 1e+300", field: "value")),
        ("/counter/HOME/set", #"{"value":12345678901234567890}"#, ControlRequestError(400, "field 'value' must be an integer, got 1.2345678901234567e+19", field: "value")),
        ("/counter/HOME/set", #"{"value":true}"#, ControlRequestError(400, "field 'value' must be an integer, got a boolean (true)", field: "value")),
        ("/counter/HOME/set", #"{"value":false}"#, ControlRequestError(400, "field 'value' must be an integer, got a boolean (false)", field: "value")),
        ("/counter/HOME/set", #"{"value":null}"#, ControlRequestError(400, "field 'value' must be an integer, got null", field: "value")),
        ("/counter/HOME/set", #"{"value":""}"#, ControlRequestError(400, #"field 'value' must be an integer, got a string ("")"#, field: "value")),
        ("/counter/HOME/set", #"{"value":"x"}"#, ControlRequestError(400, #"field 'value' must be an integer, got a string ("x")"#, field: "value")),
        ("/counter/HOME/set", #"{"value":[1]}"#, ControlRequestError(400, "field 'value' must be an integer, got an array", field: "value")),
        ("/counter/HOME/set", #"{"value":{}}"#, ControlRequestError(400, "field 'value' must be an integer, got an object", field: "value")),
        ("/counter/HOME/inc", "{bad", ControlRequestError(400, "request body is not valid JSON (RFC 8259): {bad")),
        ("/counter/HOME/inc", "[1,", ControlRequestError(400, "request body is not valid JSON (RFC 8259): [1,")),
        ("/counter/HOME/inc", #"{"a":}"#, ControlRequestError(400, #"request body is not valid JSON (RFC 8259): {"a":}"#)),
        ("/counter/HOME/inc", "[1,2]", ControlRequestError(400, "request body must be a JSON object, got an array")),
        ("/counter/HOME/inc", "3", ControlRequestError(400, "request body must be a JSON object, got a number (3)")),
        ("/counter/HOME/inc", #""s""#, ControlRequestError(400, #"request body must be a JSON object, got a string ("s")"#)),
        ("/counter/HOME/inc", "null", ControlRequestError(400, "request body must be a JSON object, got null")),
        ("/counter/HOME/inc", "true", ControlRequestError(400, "request body must be a JSON object, got a boolean (true)")),
        ("/paint/save", #"{"name":3}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a number (3)", field: "name")),
        ("/paint/save", #"{"name":-0}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a number (-0.0)", field: "name")),
        ("/paint/save", #"{"name":1.0}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a number (1)", field: "name")),
        ("/paint/save", #"{"name":1.5}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a number (1.5)", field: "name")),
        ("/paint/save", #"{"name":1e300}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a number (1e+300)", field: "name")),
        ("/paint/save", #"{"name":12345678901234567890}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a number (1.2345678901234567e+19)", field: "name")),
        ("/paint/save", #"{"name":true}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a boolean (true)", field: "name")),
        ("/paint/save", #"{"name":false}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got a boolean (false)", field: "name")),
        ("/paint/save", #"{"name":""}"#, ControlRequestError(400, #"field 'name': painting name "" does not end in .png; expected a file name such as drawing-1.png (letters, digits, '.', '_', '-'; ending in .png; at most 100 bytes)"#, field: "name")),
        ("/paint/save", #"{"name":"x"}"#, ControlRequestError(400, #"field 'name': painting name "x" does not end in .png; expected a file name such as drawing-1.png (letters, digits, '.', '_', '-'; ending in .png; at most 100 bytes)"#, field: "name")),
        ("/paint/save", #"{"name":[1]}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got an array", field: "name")),
        ("/paint/save", #"{"name":{}}"#, ControlRequestError(400, "field 'name' must be a string (a file name such as drawing-1.png), got an object", field: "name")),
        ("/paint/save", #"{"path":3}"#, ControlRequestError(400, "field 'path' is not accepted: paintings are saved in kioskd's paintings folder; give a file name with 'name' (or none)", field: "path")),
        ("/screenshot", #"{"path":3}"#, ControlRequestError(400, "field 'path' is not accepted: kioskd writes no screenshot file; the answer is the PNG and the client writes it (kioskctl screenshot FILE.png)", field: "path")),
        ("/blank", "{}", ControlRequestError(400, "missing field 'on' (true or false)", field: "on")),
        ("/blank", #"{"on":3}"#, ControlRequestError(400, "field 'on' must be true or false, got a number (3)", field: "on")),
        ("/blank", #"{"on":-0}"#, ControlRequestError(400, "field 'on' must be true or false, got a number (-0.0)", field: "on")),
        ("/blank", #"{"on":1.0}"#, ControlRequestError(400, "field 'on' must be true or false, got a number (1)", field: "on")),
        ("/blank", #"{"on":1.5}"#, ControlRequestError(400, "field 'on' must be true or false, got a number (1.5)", field: "on")),
        ("/blank", #"{"on":1e300}"#, ControlRequestError(400, "field 'on' must be true or false, got a number (1e+300)", field: "on")),
        ("/blank", #"{"on":12345678901234567890}"#, ControlRequestError(400, "field 'on' must be true or false, got a number (1.2345678901234567e+19)", field: "on")),
        ("/blank", #"{"on":null}"#, ControlRequestError(400, "field 'on' must be true or false, got null", field: "on")),
        ("/blank", #"{"on":""}"#, ControlRequestError(400, #"field 'on' must be true or false, got a string ("")"#, field: "on")),
        ("/blank", #"{"on":"x"}"#, ControlRequestError(400, #"field 'on' must be true or false, got a string ("x")"#, field: "on")),
        ("/blank", #"{"on":[1]}"#, ControlRequestError(400, "field 'on' must be true or false, got an array", field: "on")),
        ("/blank", #"{"on":{}}"#, ControlRequestError(400, "field 'on' must be true or false, got an object", field: "on")),
        ("/brightness", "{}", ControlRequestError(400, "missing field 'percent' (a number 0…100)", field: "percent")),
        ("/brightness", #"{"percent":1e300}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got a number (1e+300)", field: "percent")),
        ("/brightness", #"{"percent":12345678901234567890}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got a number (1.2345678901234567e+19)", field: "percent")),
        ("/brightness", #"{"percent":true}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got a boolean (true)", field: "percent")),
        ("/brightness", #"{"percent":false}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got a boolean (false)", field: "percent")),
        ("/brightness", #"{"percent":null}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got null", field: "percent")),
        ("/brightness", #"{"percent":""}"#, ControlRequestError(400, #"field 'percent' must be a number 0…100, got a string ("")"#, field: "percent")),
        ("/brightness", #"{"percent":"x"}"#, ControlRequestError(400, #"field 'percent' must be a number 0…100, got a string ("x")"#, field: "percent")),
        ("/brightness", #"{"percent":[1]}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got an array", field: "percent")),
        ("/brightness", #"{"percent":{}}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got an object", field: "percent")),
        ("/clock/mode", "{}", ControlRequestError(400, "missing field 'mode' (a string)", field: "mode")),
        ("/clock/mode", #"{"mode":3}"#, ControlRequestError(400, "field 'mode' must be a string, got a number (3)", field: "mode")),
        ("/clock/mode", #"{"mode":-0}"#, ControlRequestError(400, "field 'mode' must be a string, got a number (-0.0)", field: "mode")),
        ("/clock/mode", #"{"mode":1.0}"#, ControlRequestError(400, "field 'mode' must be a string, got a number (1)", field: "mode")),
        ("/clock/mode", #"{"mode":1.5}"#, ControlRequestError(400, "field 'mode' must be a string, got a number (1.5)", field: "mode")),
        ("/clock/mode", #"{"mode":1e300}"#, ControlRequestError(400, "field 'mode' must be a string, got a number (1e+300)", field: "mode")),
        ("/clock/mode", #"{"mode":12345678901234567890}"#, ControlRequestError(400, "field 'mode' must be a string, got a number (1.2345678901234567e+19)", field: "mode")),
        ("/clock/mode", #"{"mode":true}"#, ControlRequestError(400, "field 'mode' must be a string, got a boolean (true)", field: "mode")),
        ("/clock/mode", #"{"mode":false}"#, ControlRequestError(400, "field 'mode' must be a string, got a boolean (false)", field: "mode")),
        ("/clock/mode", #"{"mode":null}"#, ControlRequestError(400, "field 'mode' must be a string, got null", field: "mode")),
        ("/clock/mode", #"{"mode":""}"#, ControlRequestError(400, "field 'mode' must not be empty", field: "mode")),
        ("/clock/mode", #"{"mode":[1]}"#, ControlRequestError(400, "field 'mode' must be a string, got an array", field: "mode")),
        ("/clock/mode", #"{"mode":{}}"#, ControlRequestError(400, "field 'mode' must be a string, got an object", field: "mode")),
        ("/clock/mode", #"{"scene":3}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (3)", field: "scene")),
        ("/clock/mode", #"{"scene":-0}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (-0.0)", field: "scene")),
        ("/clock/mode", #"{"scene":1.0}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (1)", field: "scene")),
        ("/clock/mode", #"{"scene":1.5}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (1.5)", field: "scene")),
        ("/clock/mode", #"{"scene":1e300}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (1e+300)", field: "scene")),
        ("/clock/mode", #"{"scene":12345678901234567890}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (1.2345678901234567e+19)", field: "scene")),
        ("/clock/mode", #"{"scene":true}"#, ControlRequestError(400, "field 'scene' must be a string, got a boolean (true)", field: "scene")),
        ("/clock/mode", #"{"scene":false}"#, ControlRequestError(400, "field 'scene' must be a string, got a boolean (false)", field: "scene")),
        ("/clock/mode", #"{"scene":""}"#, ControlRequestError(400, "field 'scene' must not be empty", field: "scene")),
        ("/clock/mode", #"{"scene":[1]}"#, ControlRequestError(400, "field 'scene' must be a string, got an array", field: "scene")),
        ("/clock/mode", #"{"scene":{}}"#, ControlRequestError(400, "field 'scene' must be a string, got an object", field: "scene")),
        ("/pair", #"{"role":3}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a number (3)"#, field: "role")),
        ("/pair", #"{"role":-0}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a number (-0.0)"#, field: "role")),
        ("/pair", #"{"role":1.0}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a number (1)"#, field: "role")),
        ("/pair", #"{"role":1.5}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a number (1.5)"#, field: "role")),
        ("/pair", #"{"role":1e300}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a number (1e+300)"#, field: "role")),
        ("/pair", #"{"role":12345678901234567890}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a number (1.2345678901234567e+19)"#, field: "role")),
        ("/pair", #"{"role":true}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a boolean (true)"#, field: "role")),
        ("/pair", #"{"role":false}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a boolean (false)"#, field: "role")),
        ("/pair", #"{"role":null}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got null"#, field: "role")),
        ("/pair", #"{"role":""}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a string ("")"#, field: "role")),
        ("/pair", #"{"role":"x"}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got a string ("x")"#, field: "role")),
        ("/pair", #"{"role":[1]}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got an array"#, field: "role")),
        ("/pair", #"{"role":{}}"#, ControlRequestError(400, #"field 'role' must be "owner", "operator" or "viewer", got an object"#, field: "role")),
        ("/pair", #"{"show":3}"#, ControlRequestError(400, "field 'show' must be true or false, got a number (3)", field: "show")),
        ("/pair", #"{"show":-0}"#, ControlRequestError(400, "field 'show' must be true or false, got a number (-0.0)", field: "show")),
        ("/pair", #"{"show":1.0}"#, ControlRequestError(400, "field 'show' must be true or false, got a number (1)", field: "show")),
        ("/pair", #"{"show":1.5}"#, ControlRequestError(400, "field 'show' must be true or false, got a number (1.5)", field: "show")),
        ("/pair", #"{"show":1e300}"#, ControlRequestError(400, "field 'show' must be true or false, got a number (1e+300)", field: "show")),
        ("/pair", #"{"show":12345678901234567890}"#, ControlRequestError(400, "field 'show' must be true or false, got a number (1.2345678901234567e+19)", field: "show")),
        ("/pair", #"{"show":null}"#, ControlRequestError(400, "field 'show' must be true or false, got null", field: "show")),
        ("/pair", #"{"show":""}"#, ControlRequestError(400, #"field 'show' must be true or false, got a string ("")"#, field: "show")),
        ("/pair", #"{"show":"x"}"#, ControlRequestError(400, #"field 'show' must be true or false, got a string ("x")"#, field: "show")),
        ("/pair", #"{"show":[1]}"#, ControlRequestError(400, "field 'show' must be true or false, got an array", field: "show")),
        ("/pair", #"{"show":{}}"#, ControlRequestError(400, "field 'show' must be true or false, got an object", field: "show")),
        ("/brightness", #"{"percent":-1}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got a number (-1)", field: "percent")),
        ("/brightness", #"{"percent":101}"#, ControlRequestError(400, "field 'percent' must be a number 0…100, got a number (101)", field: "percent")),
        ("/counter/HOME/set", #"{"value":1e15}"#, ControlRequestError(400, "field 'value' must be an integer, got 1000000000000000", field: "value")),
        ("/clock/mode", #"{"mode":3,"scene":4}"#, ControlRequestError(400, "field 'scene' must be a string, got a number (4)", field: "scene")),
        ("/paint/save", #"{"name":"../a.png"}"#, ControlRequestError(400, #"field 'name': painting name "../a.png" contains '/': paintings are saved in the paintings folder only; expected a file name such as drawing-1.png (letters, digits, '.', '_', '-'; ending in .png; at most 100 bytes)"#, field: "name")),
    ]

    @Test func everyBodyRefusalKeepsItsText() {
        for c in Self.refusals {
            var got: ControlRequestError?
            do {
                let command = try ControlRouter.parse(method: "POST", uri: c.uri, body: Array(c.body.utf8))
                Issue.record("POST \(c.uri) \(c.body) was accepted as \(command)")
            } catch {
                got = error as? ControlRequestError
            }
            #expect(got == c.error, "POST \(c.uri) \(c.body)")
        }
    }

    @Test func bodiesThatAreAccepted() throws {
        func parse(_ uri: String, _ body: String) throws -> ControlCommand {
            try ControlRouter.parse(method: "POST", uri: uri, body: Array(body.utf8))
        }
        #expect(try parse("/pair", "") == .pair(role: "operator", show: true))
        #expect(try parse("/pair", #"{"role":"viewer","show":false,"other":1}"#) == .pair(role: "viewer", show: false))
        #expect(try parse("/clock/mode", #"{"mode":"digital","scene":null}"#) == .clockMode(mode: "digital", scene: nil))
        #expect(try parse("/clock/mode", #"{"mode":"digital","scene":"clock"}"#) == .clockMode(mode: "digital", scene: "clock"))
        #expect(try parse("/counter/HOME/set", #"{"value":2.0}"#) == .counter(name: "HOME", op: .set, value: 2))
        #expect(try parse("/counter/HOME/set", #"{"value":-999999999999999}"#) == .counter(name: "HOME", op: .set, value: -999_999_999_999_999))
        #expect(try parse("/brightness", #"{"percent":0.5}"#) == .brightness(percent: 0.5))
        guard case .brightness(let p?) = try parse("/brightness", #"{"percent":-0}"#) else { Issue.record("not brightness"); return }
        #expect(p == 0 && p.sign == .plus, "-0 is 0 %, as JSONSerialization read it")
        #expect(try parse("/paint/save", "") == .paint(op: .save, name: nil))
        #expect(try parse("/paint/save", #"{"name":null}"#) == .paint(op: .save, name: nil))
        #expect(try parse("/paint/undo", #"{"path":"ignored"}"#) == .paint(op: .undo, name: nil))
        #expect(try parse("/reload", "  \n") == .reload)
    }

    /// What a client sends for each command is what the router reads back.
    @Test func requestsRoundTrip() throws {
        let commands: [ControlCommand] = [
            .scene(name: "clock"), .theme(name: "dark"), .counter(name: "HOME", op: .set, value: -3), .counter(name: "A B", op: .inc, value: nil),
            .paint(op: .save, name: "a.png"), .paint(op: .save, name: nil), .paint(op: .clear, name: nil), .blank(on: true),
            .brightness(percent: 42.5), .clockMode(mode: "digital", scene: "clock"), .clockMode(mode: "analog", scene: nil),
            .pair(role: "viewer", show: false), .reload,
        ]
        for c in commands {
            let r = c.request
            #expect(try ControlRouter.parse(method: r.method, uri: r.path, body: r.body) == c, "\(r.method) \(r.path) \(String(decoding: r.body, as: UTF8.self))")
        }
    }
}
