import Foundation
import Testing

/// Power cuts on a real kernel: kioskd's state on an ext4 file system on a virtio-blk disk, QEMU
/// killed (SIGKILL or QMP quit) at random moments while increments are acknowledged, each
/// acknowledged value logged to the host over a virtio-serial port; every following boot finds
/// every acknowledged increment (scripts/vm/scenarios_powercut.py). KIOSK_VM_TESTS=1;
/// KIOSK_POWERCUT_CYCLES sets the number of cuts (default 3).
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct PowerCutVMTests {
    @Test func everyAcknowledgedIncrementSurvivesAPowerCut() throws {
        let r = try VMScenario.run("kioskd-power-cut", needsKioskd: true)
        VMScenario.expectPassed(r, "kioskd-power-cut")
        let res = r["results"] as? [String: Any] ?? [:]
        let cuts = Int(ProcessInfo.processInfo.environment["KIOSK_POWERCUT_CYCLES"] ?? "") ?? 3
        let boots = res["cycles"] as? [[String: Any]] ?? []
        #expect(boots.count == cuts + 1, "one boot per cut plus the final one: \(boots)")
        #expect(boots.first?["start"] as? Int == 0, "a fresh disk starts at 0")
        // Each boot starts at the last value acknowledged before the cut, or one more (the one
        // increment in flight may have been saved without its answer getting out).
        for (before, after) in zip(boots, boots.dropFirst()) {
            let last = before["last_ack"] as? Int ?? -1
            let start = after["start"] as? Int ?? -2
            #expect(start == last || start == last + 1, "started at \(start) after a cut with \(last) acknowledged")
        }
        #expect(boots.dropLast().allSatisfy { ($0["acked"] as? Int ?? 0) >= 1 }, "every cut came after at least one acknowledged increment: \(boots)")
        #expect((res["fsck"] as? String ?? "").hasPrefix("0 "), "e2fsck -fn clean: \(String(describing: res["fsck"]))")
    }
}
