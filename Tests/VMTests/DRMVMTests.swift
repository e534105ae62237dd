import Foundation
import Testing

/// Kernel tests of the DRM/KMS display: QEMU boots Debian's kernel with bochs-drm (-device VGA) or
/// virtio-gpu, the display code draws through `kiosk-vmtool drm` (and the real kioskd), and the
/// host checks QMP screendump pixels (scripts/vm/scenarios_drm.py). Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct DRMVMTests {
    @Test(arguments: ["drm-basic-bochs-atomic", "drm-basic-bochs-legacy", "drm-basic-virtio-atomic", "drm-basic-virtio-legacy"])
    func firstFrameDamageFlipsBlankAndRestore(_ scenario: String) throws {
        let r = try VMScenario.run(scenario)
        VMScenario.expectPassed(r, scenario)
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["logical"] as? String == "1280x800")
        #expect(res["atomic"] as? String == (scenario.hasSuffix("atomic") ? "1" : "0"), "API in use: \(String(describing: res["atomic"]))")
        // Buffer age. Two buffers: the first rect present copies the whole frame (that buffer missed
        // the pattern), the next ones only their own rect plus the previous one. Three buffers
        // (virtio legacy): two full copies, then rects 1–3.
        let expected = scenario == "drm-basic-virtio-legacy" ? [1280 * 800, 1280 * 800, 7500] : [1280 * 800, 5000, 5000]
        #expect(res["copied"] as? [Int] == expected, "copied \(String(describing: res["copied"]))")
        if scenario == "drm-basic-bochs-atomic" {
            let eacces = res["eacces"] as? String ?? ""
            #expect(eacces.contains("/dev/dri/card0") && eacces.contains("\"video\" group"), "\(eacces)")
        }
        #expect(res["flip_events"] as? Int == 30)
        #expect((res["restored_changed_pixels"] as? Int ?? 0) > 1280 * 800 / 2)
        #expect(res["blanked_centre"] as? [Int] != [255, 255, 255])
    }

    @Test func rotationTurnsThePicture() throws {
        let r = try VMScenario.run("drm-rotation")
        VMScenario.expectPassed(r, "drm-rotation")
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["logical90"] as? String == "800x1280")
        #expect(res["logical180"] as? String == "1280x800")
        #expect(res["logical270"] as? String == "800x1280")
    }

    @Test func droppingAndRetakingDRMMasterHandsTheScreenOver() throws {
        let r = try VMScenario.run("drm-master-handover")
        VMScenario.expectPassed(r, "drm-master-handover")
        let after = (r["results"] as? [String: Any])?["after"] as? [String: Any] ?? [:]
        #expect(after["modesets"] as? String == "2" && after["redraw"] as? String == "1", "after SIGUSR2: \(after)")
    }

    @Test func virtioGPUUnplugAndReplugIsFollowed() throws {
        let r = try VMScenario.run("drm-hotplug-virtio")
        VMScenario.expectPassed(r, "drm-hotplug-virtio")
        let after = (r["results"] as? [String: Any])?["after"] as? [String: Any] ?? [:]
        #expect(after["modesets"] as? String == "2" && after["inactive"] as? String == "1", "after replug: \(after)")
    }

    /// The real kioskd: the clock background at the VM's RTC time (-rtc base=2026-03-14T13:35:16)
    /// equals red = round(h·255/24), green = round(m·255/60), blue = round(s·255/60) within one second.
    @Test func kioskdClockMatchesTheFormulaAtRTCTime() throws {
        let r = try VMScenario.run("kioskd-clock-bochs", needsKioskd: true)
        VMScenario.expectPassed(r, "kioskd-clock-bochs")
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(abs(res["second_offset"] as? Int ?? 99) <= 1)
        #expect((res["frames"] as? Int ?? 0) >= 3)
        #expect((res["restored_changed_pixels"] as? Int ?? 0) > 1280 * 800 / 2)
    }

    /// The real kioskd: counter first frame in the default theme, then rotated 90.
    @Test func kioskdCounterFirstFrameAndRotation() throws {
        let r = try VMScenario.run("kioskd-counter-bochs", needsKioskd: true)
        VMScenario.expectPassed(r, "kioskd-counter-bochs")
        let res = r["results"] as? [String: Any] ?? [:]
        let bb = res["counter_bbox"] as? [Int] ?? [], bb90 = res["counter90_bbox"] as? [Int] ?? []
        #expect(bb.count == 4 && bb90.count == 4)
        if bb.count == 4 && bb90.count == 4 {
            #expect(bb[2] - bb[0] > bb[3] - bb[1], "landscape row of windows: \(bb)")
            #expect(bb90[3] - bb90[1] > bb90[2] - bb90[0], "turned to a column: \(bb90)")
        }
    }

    /// The real kioskd on virtio-gpu: the connector forced off and re-detected (udev change events);
    /// kioskd keeps running with no mode, then sets the mode again and repaints the same picture.
    @Test func kioskdFollowsConnectorHotplug() throws {
        let r = try VMScenario.run("kioskd-connector-hotplug-virtio", needsKioskd: true)
        VMScenario.expectPassed(r, "kioskd-connector-hotplug-virtio")
        let res = r["results"] as? [String: Any] ?? [:]
        #expect(res["status_off_mode"] as? String == "none")
        let cyan = res["cyan_before_after"] as? [Int] ?? []
        #expect(cyan.count == 2 && cyan[0] > 0 && cyan[0] == cyan[1], "cyan pixels before/after: \(cyan)")
    }
}
