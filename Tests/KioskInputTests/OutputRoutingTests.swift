import Testing
import KioskCore
@testable import KioskInput

/// Which output a touch device belongs to, and its touches turned with that output's rotation.
@Suite struct OutputRoutingTests {
    static let outputs = ["HDMI-A-1", "DSI-1"]

    @Test(arguments: [
        // name, sysname, WL_OUTPUT, rules, expected output
        ("ILITEK ILITEK-TP", "event3", nil, [("ILITEK*", "DSI-1")], 1),
        ("ILITEK ILITEK-TP", "event3", "HDMI-A-1", [("ILITEK*", "DSI-1")], 1),   // a rule wins over WL_OUTPUT
        ("Goodix Capacitive", "event5", nil, [("event5", "dsi-1")], 1),          // sysname, names case-insensitive
        ("Goodix Capacitive", "event5", "DSI-1", [], 1),                         // udev's WL_OUTPUT
        ("Goodix Capacitive", "event5", "dsi-1", [], 1),
        ("Goodix Capacitive", "event5", "VGA-1", [], 0),                         // an output kioskd does not drive
        ("Goodix Capacitive", "event5", nil, [("ILITEK*", "DSI-1")], 0),         // nothing says: the first
        ("eGalax", "event2", nil, [("eGal?x", "HDMI-A-1"), ("*", "DSI-1")], 0),   // the first matching rule
        ("eGalax", "event2", nil, [("nope*", "HDMI-A-1"), ("*", "DSI-1")], 1),
    ] as [(String, String, String?, [(String, String)], Int)])
    func aDeviceBelongsToOneOutput(name: String, sysname: String, wl: String?, rules: [(String, String)], expected: Int) {
        let r = rules.map { (match: $0.0, output: $0.1) }
        #expect(touchDeviceOutput(name: name, sysname: sysname, wlOutput: wl, rules: r, outputs: Self.outputs) == expected)
    }

    @Test func touchesAreTurnedWithTheirOutputsRotation() throws {
        var m = InputMapper(transform: try InputTransform(calibration: InputTransform.identity, rotation: .r0))
        m.outputTransforms[1] = try InputTransform(calibration: InputTransform.identity, rotation: .r90)
        m.deviceOutputs[3] = 1
        // Device 0 (output 0, not turned) and device 3 (output 1, turned 90°) touch the same panel point.
        let a = m.touchDown(device: 0, slot: 0, x: 0.2, y: 0.1, timeUsec: 1)
        let b = m.touchDown(device: 3, slot: 0, x: 0.2, y: 0.1, timeUsec: 1)
        guard case .touch(let ta)? = a.first, case .touch(let tb)? = b.first else { Issue.record("no touches: \(a) \(b)"); return }
        #expect(ta.x == 0.2 && ta.y == 0.1)
        let turned = try InputTransform(calibration: InputTransform.identity, rotation: .r90).map(physical: Point(x: 0.2, y: 0.1))
        #expect(tb.x == turned?.x && tb.y == turned?.y)
        #expect(tb.x != 0.2 || tb.y != 0.1)
        #expect(m.output(ofSlot: tb.slot) == 1 && m.output(ofSlot: ta.slot) == 0)
    }
}
