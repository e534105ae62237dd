import Foundation
import Testing

/// Kernel test of the VT hand-off: the real kioskd with /dev/tty1 on standard input follows
/// `VT_ACTIVATE` switches (VT_PROCESS): away to tty2 it releases DRM master (fbcon shows tty2, a
/// second DRM client fills the screen), back on tty1 it takes master again and repaints the same
/// frame (scripts/vm/scenarios_vt.py). Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct VTVMTests {
    @Test func kioskdFollowsVTSwitchesAwayAndBack() throws {
        let r = try VMScenario.run("kioskd-vt-switch-bochs", needsKioskd: true)
        VMScenario.expectPassed(r, "kioskd-vt-switch-bochs")
        let res = r["results"] as? [String: Any] ?? [:]
        let full = 1280 * 800
        // Away on tty2: no mode, and every non-black pixel of kioskd's frame replaced by the empty console.
        #expect(res["mode_away"] as? String == "none")
        let nonblack = res["kioskd_nonblack_pixels"] as? Int ?? full
        #expect((res["tty2_changed_pixels"] as? Int ?? 0) >= nonblack - 128, "\(String(describing: res["tty2_changed_pixels"])) of \(nonblack)")
        #expect((res["second_client"] as? String ?? "").contains("modesets=1"))
        // Back on tty1: the mode again and exactly the first frame.
        #expect(res["mode_back"] as? String == "1280x800")
        #expect(res["repaint_changed_pixels"] as? Int == 0)
        let cyan = res["kioskd_cyan_pixels"] as? Int ?? 0
        #expect(cyan > full / 50 && res["repaint_cyan_pixels"] as? Int == cyan, "cyan \(cyan) / \(String(describing: res["repaint_cyan_pixels"]))")
        #expect((res["switch_away"] as? String ?? "").hasSuffix("active=2"))
        #expect((res["switch_back"] as? String ?? "").hasSuffix("active=1"))
    }
}
