import Foundation
import Testing

/// Kernel tests of input: QEMU boots Debian's kernel, uinput devices and QEMU's usb-tablet go
/// through udev and libinput into kioskd (see scripts/vm/scenarios_input.py for what each
/// scenario draws and checks). Enabled with KIOSK_VM_TESTS=1; each boots its own VM (~25 s).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct InputVMTests {
    static func run(_ scenario: String) throws -> [String: Any] { try VMScenario.run(scenario, needsKioskd: true) }
    static func expectPassed(_ r: [String: Any], _ scenario: String) { VMScenario.expectPassed(r, scenario) }

    @Test func uinputTouchscreensKeysAndRotationThroughLibinput() throws {
        let r = try Self.run("input-libinput-touch")
        Self.expectPassed(r, "input-libinput-touch")
        let res = r["results"] as? [String: Any] ?? [:]
        // Two fingers of one device: slots device*1000 + 0 and + 1.
        let slots = res["ideal_slots"] as? [Int] ?? []
        #expect(slots.count == 2 && slots[1] == slots[0] + 1 && slots[0] % 1000 == 0, "slots \(slots)")
        #expect(res["ten_fingers"] as? Int == 10)
        // The evemu recording: three fingers landing in one frame, three slots.
        #expect((res["evemu_slots"] as? [Int] ?? []).count == 3)
        // Rotation 90: the stroke from panel (0.1, 0.2) to (0.9, 0.2) runs from (0.2, 0.9) to (0.2, 0.1) for the viewer.
        let rot = res["rot90_finger0"] as? [[Double]] ?? []
        #expect(rot.count == 2)
        if rot.count == 2 {
            #expect(abs(rot[0][0] - 0.2) < 0.002 && abs(rot[0][1] - 0.9) < 0.002, "rot90 start \(rot[0])")
            #expect(abs(rot[1][0] - 0.2) < 0.002 && abs(rot[1][1] - 0.1) < 0.002, "rot90 end \(rot[1])")
        }
    }

    @Test func qemuUSBTabletActsAsOneFinger() throws {
        let r = try Self.run("input-libinput-usb-tablet")
        Self.expectPassed(r, "input-libinput-usb-tablet")
        let slot = (r["results"] as? [String: Any])?["slot"] as? Int
        #expect(slot.map { $0 % 1000 == 100 } == true, "pointer finger slot \(String(describing: slot))")
    }

    @Test func mapToOutputAndPermissionErrors() throws {
        let r = try Self.run("input-libinput-output-permissions")
        Self.expectPassed(r, "input-libinput-output-permissions")
        let res = r["results"] as? [String: Any] ?? [:]
        let counts = res["touch_events"] as? [String: Int] ?? [:]
        #expect(counts["other"] == 0 && (counts["mine"] ?? 0) >= 3 && (counts["plain"] ?? 0) >= 3, "touch events \(counts)")
        let msg = res["perm_message"] as? String ?? ""
        #expect(msg.contains("permission denied") && msg.contains("'input' group"), "\(msg)")
    }

    @Test func keysTapSwipeAndLongPressDriveTheCounterOnDRM() throws {
        let r = try Self.run("input-kioskd-counter-keys")
        Self.expectPassed(r, "input-kioskd-counter-keys")
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["pixels_keys_vs_set3"] as? Int == 0)
        #expect(res["pixels_tap_vs_set4"] as? Int == 0)
        #expect(res["pixels_swipe_vs_set3"] as? Int == 0)
        #expect(res["pixels_longpress_vs_zero"] as? Int == 0)
        // Only the rightmost of four digits changed from 0000 to 0003.
        let cols = res["keys_changed_x"] as? [Double] ?? []
        #expect(cols.count == 2 && cols[0] > 0.74, "changed columns \(cols)")
    }

    @Test func twoFingersTabletAndUnplugPaintOnDRM() throws {
        let r = try Self.run("input-kioskd-paint")
        Self.expectPassed(r, "input-kioskd-paint")
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["stroke_a_points"] as? Int == 9)
        #expect(res["stroke_b_points"] as? Int == 9)
        #expect(res["tablet_points"] as? Int == 9)
        #expect(res["unplug_points"] as? Int == 9)
    }

    @Test func paintTurned90DegreesPutsInkUnderTheFingers() throws {
        let r = try Self.run("input-kioskd-paint-rot90")
        Self.expectPassed(r, "input-kioskd-paint-rot90")
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["stroke_a_points"] as? Int == 9)
        #expect(res["stroke_b_points"] as? Int == 9)
    }
}
