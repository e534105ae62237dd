import FoundationEssentials
import KioskControl
import KioskCore
import KioskMQTT

/// The commands on the kiosk's own topics (`kioskd/ID/…`), read as plain values: tested without
/// a broker.
extension MQTTBridge {
    public struct CommandError: Error, Equatable {
        public var message: String
    }

    /// The control command for the topic levels after `kioskd/ID/` and a payload: `scene/set`,
    /// `theme/set` (a name), `blank/set` (`ON`/`OFF`), `counter/NAME/set` (an integer),
    /// `counter/NAME/inc`, `dec`, `reset` (any payload), and with several `outputs` (their
    /// names) `output/LEVEL/scene/set` and `output/LEVEL/blank/set` (LEVEL:
    /// `KioskTopics.outputLevel` of a name). nil: not a command topic.
    /// The payload is read (converted to text) only for the topics that use it (`…/set`).
    /// `clock/LEVEL/set` takes the words of `kioskctl clock` (`clockCommand`); `clocks` names the
    /// scenes with a game clock.
    public static func command(levels: [String], payload: @autoclosure () -> String, outputs: [String] = [],
                               clocks: [String] = []) -> Result<ControlCommand?, CommandError> {
        var converted: String?
        var text: String {
            if let c = converted { return c }
            let t = payload().trimmingWhitespace()
            converted = t
            return t
        }
        switch levels.count {
        case 2 where levels[1] == "set":
            switch levels[0] {
            case "scene": return .success(.scene(name: text))
            case "theme": return .success(.theme(name: text))
            case "blank": return blank(text, output: nil, topic: "blank/set")
            default: return .success(nil)
            }
        case 4 where levels[0] == "output" && levels[3] == "set" && ["scene", "blank"].contains(levels[2]):
            let topic = "output/\(levels[1].prefix(64))/\(levels[2])/set"
            guard let output = outputs.first(where: { KioskTopics.outputLevel($0) == levels[1] }) else {
                let known = outputs.map(KioskTopics.outputLevel).joined(separator: ", ")
                return .failure(CommandError(message: "\(topic): no output '\(levels[1].prefix(64))'; " + (known.isEmpty ? "this kiosk has one output (use \(levels[2])/set)" : "outputs: \(known)")))
            }
            return levels[2] == "scene" ? .success(.scene(name: text, output: output)) : blank(text, output: output, topic: topic)
        case 3 where levels[0] == "clock" && levels[2] == "set":
            return clockCommand(level: levels[1], text: text, clocks: clocks)
        case 3 where levels[0] == "counter":
            let name = levels[1]
            switch levels[2] {
            case "inc": return .success(.counter(name: name, op: .inc, value: nil))
            case "dec": return .success(.counter(name: name, op: .dec, value: nil))
            case "reset": return .success(.counter(name: name, op: .reset, value: nil))
            case "set":
                // Home Assistant's number entity may send "7" or "7.0".
                var digits = Substring(text)
                if let dot = digits.firstIndex(of: "."), digits[digits.index(after: dot)...].allSatisfy({ $0 == "0" }) {
                    digits = digits[..<dot]
                }
                guard let v = Int(digits) else {
                    return .failure(CommandError(message: "counter/\(name)/set: expected an integer, got \"\(text.prefix(64))\""))
                }
                return .success(.counter(name: name, op: .set, value: v))
            default: return .success(nil)
            }
        default:
            return .success(nil)
        }
    }

    /// The longest id a counter command on the kiosk's own topics may carry, in bytes (UTF-8).
    public static let maxChangeIDBytes = 32

    /// The optional id of a counter command on the kiosk's own topics (`…/inc`, `…/dec`,
    /// `…/reset`): a payload `{"id": "…"}` (1…`maxChangeIDBytes` bytes). A shared counter's
    /// change with an id is applied once by the fleet's primary however often it is delivered
    /// (QoS 1 redelivers after a broker restart). nil: any other payload, the change has no id;
    /// a refusal for a JSON object that is not one `topic` takes.
    public static func changeID(_ payload: [UInt8], topic: String) -> Result<String?, CommandError> {
        guard !topic.hasSuffix("/set"), payload.first == UInt8(ascii: "{") else { return .success(nil) }
        let expected = "expected {\"id\": \"…\"} (1 to \(maxChangeIDBytes) bytes) or any payload without an id"
        guard payload.count <= 1024, let object = (try? JSONValue.parse(payload))?.objectValue else {
            return .failure(CommandError(message: "\(topic): the payload is not a JSON object; \(expected)"))
        }
        guard let raw = object["id"] else { return .success(nil) }
        guard let id = raw.stringValue, !id.isEmpty, id.utf8.count <= maxChangeIDBytes else {
            return .failure(CommandError(message: "\(topic): field 'id' must be a string of 1 to \(maxChangeIDBytes) bytes, got \(raw.described.prefix(64)); \(expected)"))
        }
        return .success(id)
    }

    /// `ON`/`OFF` (any case) on a blank topic (`topic` names it in the refusal).
    private static func blank(_ text: String, output: String?, topic: String) -> Result<ControlCommand?, CommandError> {
        switch text.uppercased() {
        case "ON": return .success(.blank(on: true, output: output))
        case "OFF": return .success(.blank(on: false, output: output))
        default: return .failure(CommandError(message: "\(topic): expected ON or OFF, got \"\(text.prefix(64))\""))
        }
    }
}
