import KioskTestTraits
import Testing
import KioskCore
import Logging
import KioskPosix
@testable import KioskInput

@Suite(.ownThreads) struct InputMapperTests {
    func mapper(_ rotation: Rotation = .r0, calibration: [Double] = InputTransform.identity, pointerAsTouch: Bool = true) throws -> InputMapper {
        InputMapper(transform: try InputTransform(calibration: calibration, rotation: rotation), pointerAsTouch: pointerAsTouch)
    }
    func touches(_ events: [InputEvent]) -> [TouchEvent] {
        events.compactMap { if case .touch(let t) = $0 { return t } else { return nil } }
    }

    @Test func touchUpEndsAtTheLastPosition() throws {
        var m = try mapper()
        #expect(m.touchDown(device: 0, slot: 0, x: 0.1, y: 0.2, timeUsec: 10) == [.touch(TouchEvent(.down, slot: 0, x: 0.1, y: 0.2, timeUsec: 10))])
        #expect(m.touchMotion(device: 0, slot: 0, x: 0.3, y: 0.4, timeUsec: 20) == [.touch(TouchEvent(.motion, slot: 0, x: 0.3, y: 0.4, timeUsec: 20))])
        #expect(m.touchFrame(timeUsec: 20) == [.touchFrame(timeUsec: 20)])
        #expect(m.touchUp(device: 0, slot: 0, timeUsec: 30) == [.touch(TouchEvent(.up, slot: 0, x: 0.3, y: 0.4, timeUsec: 30))])
        #expect(m.active.isEmpty)
        // A second up for the same slot is ignored.
        #expect(m.touchUp(device: 0, slot: 0, timeUsec: 40).isEmpty)
    }

    @Test func tenFingersAtOnceEachKeepTheirOwnSlot() throws {
        var m = try mapper()
        for i in 0..<10 {
            let e = touches(m.touchDown(device: 2, slot: Int32(i), x: Double(i) / 10, y: 0.5, timeUsec: 1))
            #expect(e == [TouchEvent(.down, slot: 2000 + i, x: Double(i) / 10, y: 0.5, timeUsec: 1)])
        }
        #expect(m.active.count == 10)
        for i in 0..<10 { _ = m.touchMotion(device: 2, slot: Int32(i), x: Double(i) / 10, y: 0.9, timeUsec: 2) }
        var ups: [TouchEvent] = []
        for i in (0..<10).reversed() { ups += touches(m.touchUp(device: 2, slot: Int32(i), timeUsec: 3)) }
        #expect(ups.map(\.slot) == (0..<10).reversed().map { 2000 + $0 })
        #expect(ups.allSatisfy { $0.y == 0.9 && $0.phase == .up })
        #expect(ups.map(\.x) == (0..<10).reversed().map { Double($0) / 10 })
    }

    @Test func slotsAreUniqueAcrossDevices() throws {
        var m = try mapper()
        let a = touches(m.touchDown(device: 0, slot: 0, x: 0.1, y: 0.1, timeUsec: 1))
        let b = touches(m.touchDown(device: 1, slot: 0, x: 0.9, y: 0.9, timeUsec: 1))
        let c = touches(m.touchDown(device: 1, slot: -1, x: 0.5, y: 0.5, timeUsec: 1)) // single-touch panel: slot -1
        #expect(a.first?.slot == 0)
        #expect(b.first?.slot == 1000)
        #expect(c.first?.phase == .motion) // slot -1 is that device's slot 0, already down
        _ = m.pointerAbsolute(device: 1, x: 0.5, y: 0.5, timeUsec: 1)
        let p = touches(m.pointerButton(device: 1, button: InputMapper.buttonLeft, pressed: true, timeUsec: 2))
        #expect(p.first?.slot == 1100)
        #expect(Set(m.active.keys) == [0, 1000, 1100])
    }

    @Test(arguments: Rotation.allCases)
    func rotationAndCalibrationApplyToTouches(rotation: Rotation) throws {
        // Calibration mirrors x; the point then turns with the display.
        var m = try mapper(rotation, calibration: [-1, 0, 1, 0, 1, 0])
        let e = touches(m.touchDown(device: 0, slot: 0, x: 0.8, y: 0.1, timeUsec: 0))
        let expected = rotation.physicalToLogical(Point(x: 0.2, y: 0.1))
        #expect(e.count == 1)
        #expect(abs(e[0].x - expected.x) < 1e-12 && abs(e[0].y - expected.y) < 1e-12)
        // Changing the rotation affects later events of the same finger.
        m.transform.rotation = .r180
        let e2 = touches(m.touchMotion(device: 0, slot: 0, x: 0.8, y: 0.1, timeUsec: 1))
        #expect(abs(e2[0].x - 0.8) < 1e-12 && abs(e2[0].y - 0.9) < 1e-12)
    }

    @Test func garbageCoordinatesAreDroppedOrClamped() throws {
        var m = try mapper()
        #expect(m.touchDown(device: 0, slot: 0, x: .nan, y: 0.5, timeUsec: 0).isEmpty)
        #expect(m.active.isEmpty)
        #expect(m.touchMotion(device: 0, slot: 0, x: 0.5, y: 0.5, timeUsec: 1).isEmpty) // never went down
        #expect(m.touchUp(device: 0, slot: 0, timeUsec: 2).isEmpty)
        #expect(touches(m.touchDown(device: 0, slot: 1, x: -5, y: 7, timeUsec: 3)) == [TouchEvent(.down, slot: 1, x: 0, y: 1, timeUsec: 3)])
        #expect(m.touchMotion(device: 0, slot: 1, x: .infinity, y: 0.5, timeUsec: 4).isEmpty)
        #expect(touches(m.touchUp(device: 0, slot: 1, timeUsec: 5)) == [TouchEvent(.up, slot: 1, x: 0, y: 1, timeUsec: 5)])
        // Slots past the per-device range are ignored rather than colliding with the pointer's.
        #expect(m.touchDown(device: 0, slot: 100, x: 0.5, y: 0.5, timeUsec: 6).isEmpty)
    }

    @Test func removedDeviceCancelsItsFingersAtTheirLastPositions() throws {
        var m = try mapper()
        _ = m.touchDown(device: 3, slot: 0, x: 0.1, y: 0.1, timeUsec: 0)
        _ = m.touchDown(device: 3, slot: 1, x: 0.2, y: 0.2, timeUsec: 0)
        _ = m.touchMotion(device: 3, slot: 1, x: 0.25, y: 0.3, timeUsec: 1)
        _ = m.touchDown(device: 4, slot: 0, x: 0.9, y: 0.9, timeUsec: 0)
        let out = m.deviceRemoved(device: 3, timeUsec: 99)
        #expect(out == [
            .touch(TouchEvent(.cancel, slot: 3000, x: 0.1, y: 0.1, timeUsec: 99)),
            .touch(TouchEvent(.cancel, slot: 3001, x: 0.25, y: 0.3, timeUsec: 99)),
            .touchFrame(timeUsec: 99),
        ])
        #expect(Array(m.active.keys) == [4000])
        #expect(m.deviceRemoved(device: 5, timeUsec: 100).isEmpty)
    }

    @Test func absolutePointerActsAsOneFinger() throws {
        var m = try mapper(.r90)
        // Motion with the button up only tracks the position.
        #expect(m.pointerAbsolute(device: 1, x: 0.5, y: 0.25, timeUsec: 1).isEmpty)
        // Other buttons do nothing.
        #expect(m.pointerButton(device: 1, button: 0x111, pressed: true, timeUsec: 2).isEmpty)
        let down = m.pointerButton(device: 1, button: InputMapper.buttonLeft, pressed: true, timeUsec: 3)
        // r90: physical (0.5, 0.25) → logical (0.25, 0.5).
        #expect(down == [.touch(TouchEvent(.down, slot: 1100, x: 0.25, y: 0.5, timeUsec: 3)), .touchFrame(timeUsec: 3)])
        let move = m.pointerAbsolute(device: 1, x: 0.75, y: 0.25, timeUsec: 4)
        #expect(move == [.touch(TouchEvent(.motion, slot: 1100, x: 0.25, y: 0.25, timeUsec: 4)), .touchFrame(timeUsec: 4)])
        let up = m.pointerButton(device: 1, button: InputMapper.buttonLeft, pressed: false, timeUsec: 5)
        #expect(up == [.touch(TouchEvent(.up, slot: 1100, x: 0.25, y: 0.25, timeUsec: 5)), .touchFrame(timeUsec: 5)])
        // A relative mouse's click (no absolute position known) makes no finger: it is a button
        // for the scene manager's cursor; other buttons of it do nothing.
        #expect(m.pointerButton(device: 7, button: InputMapper.buttonLeft, pressed: true, timeUsec: 6) == [.pointerButton(pressed: true, timeUsec: 6)])
        #expect(m.pointerButton(device: 7, button: 0x111, pressed: true, timeUsec: 7).isEmpty)
        #expect(m.active.count == 0)
    }

    @Test func pointerAsTouchOffIgnoresAbsolutePointersAndTablets() throws {
        var m = try mapper(pointerAsTouch: false)
        #expect(m.pointerAbsolute(device: 1, x: 0.5, y: 0.5, timeUsec: 1).isEmpty)
        #expect(m.pointerButton(device: 1, button: InputMapper.buttonLeft, pressed: true, timeUsec: 2).isEmpty)
        #expect(m.tabletTip(device: 1, down: true, x: 0.5, y: 0.5, timeUsec: 3).isEmpty)
        #expect(m.active.isEmpty)
    }

    @Test func tabletToolTipDrawsAndProximityOutLifts() throws {
        var m = try mapper()
        #expect(m.tabletAxis(device: 2, x: 0.1, y: 0.1, timeUsec: 1).isEmpty)
        #expect(touches(m.tabletTip(device: 2, down: true, x: 0.2, y: 0.3, timeUsec: 2)) == [TouchEvent(.down, slot: 2101, x: 0.2, y: 0.3, timeUsec: 2)])
        #expect(touches(m.tabletAxis(device: 2, x: 0.4, y: 0.3, timeUsec: 3)) == [TouchEvent(.motion, slot: 2101, x: 0.4, y: 0.3, timeUsec: 3)])
        #expect(touches(m.tabletProximityOut(device: 2, timeUsec: 4)) == [TouchEvent(.up, slot: 2101, x: 0.4, y: 0.3, timeUsec: 4)])
        #expect(m.tabletTip(device: 2, down: false, x: 0.4, y: 0.3, timeUsec: 5).isEmpty)
    }

    @Test func keysAndRelativeMotion() throws {
        let m = try mapper(.r90)
        #expect(m.key(code: 103, pressed: true, timeUsec: 7) == [.key(code: 103, state: .pressed, timeUsec: 7)])
        #expect(m.key(code: 78, pressed: false, timeUsec: 8) == [.key(code: 78, state: .released, timeUsec: 8)])
        #expect(m.key(code: 70_000, pressed: true, timeUsec: 9).isEmpty)
        // Relative motion is in the viewer's frame: not rotated.
        #expect(m.pointerRelative(dx: 3, dy: -2, timeUsec: 10) == [.pointerMotion(dx: 3, dy: -2, timeUsec: 10)])
        #expect(m.pointerRelative(dx: .nan, dy: 1, timeUsec: 11).isEmpty)
    }

    @Test func outputMatching() {
        #expect(touchDeviceMatchesOutput(deviceOutput: "HDMI-A-1", wanted: nil))
        #expect(touchDeviceMatchesOutput(deviceOutput: "HDMI-A-1", wanted: "hdmi-a-1"))
        #expect(!touchDeviceMatchesOutput(deviceOutput: "DP-1", wanted: "HDMI-A-1"))
        #expect(touchDeviceMatchesOutput(deviceOutput: nil, wanted: "HDMI-A-1"))
    }

    @Test func permissionMessageNamesDeviceGroupAndSeat() {
        let m = inputPermissionMessage(path: "/dev/input/event4", errno: 13, seat: "seat1")
        #expect(m.contains("/dev/input/event4"))
        #expect(m.contains("permission denied"))
        #expect(m.contains("'input' group"))
        #expect(m.contains("seat 'seat1'"))
    }
}

@Suite(.ownThreads) struct LibInputSourceTests {
    @Test func badCalibrationIsAConfigError() throws {
        let loop = try EventLoop()
        #expect(throws: KioskError.config("calibration matrix needs 6 numbers (a b c d e f, as in LIBINPUT_CALIBRATION_MATRIX), got 3")) {
            _ = try LibInputSource(options: InputOptions(calibration: [1, 0, 0]), loop: loop, logger: Logger(label: "test"))
        }
    }

    /// On a machine without input devices (this build host has no /dev/input), the udev
    /// context starts on the seat, finds nothing, and shuts down cleanly.
    @Test func startsOnASeatWithoutDevices() throws {
        let loop = try EventLoop()
        let src = try LibInputSource(options: InputOptions(seat: "seat-kiosk-test"), loop: loop, logger: Logger(label: "test"))
        #expect(src.devices.isEmpty)
        #expect(src.options.seat == "seat-kiosk-test")
        var events: [InputEvent] = []
        src.onEvent = { events.append($0) }
        try loop.runOnce(timeoutMs: 50)
        #expect(events.isEmpty)
        src.shutdown()
        src.shutdown()
    }
}
