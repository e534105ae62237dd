import Foundation
import Testing

/// kioskd started as systemd/kioskd.service starts it (unprivileged user, video/input/render
/// groups, no capabilities, no new privileges) on a real kernel: display, touch input, control
/// socket and state across a restart (scripts/vm/scenarios_daemon.py). KIOSK_VM_TESTS=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct DaemonVMTests {
    @Test func unprivilegedUserGetsDisplayAndInput() throws {
        let r = try InputVMTests.run("kioskd-unit-user")
        InputVMTests.expectPassed(r, "kioskd-unit-user")
        let res = r["results"] as? [String: Any] ?? [:]
        let creds = res["credentials"] as? String ?? ""
        #expect(creds.hasPrefix("Uid: 65534 65534 65534 65534"), "\(creds)")
        // The guest shares the host's /etc: the same group ids.
        let names: [String] = ["video", "input", "render"]
        let gids = names.compactMap { getgrnam($0).map { String($0.pointee.gr_gid) } }
        #expect(gids.count == 3 && creds.contains("Groups: \(gids.joined(separator: " "))"), "\(creds)")
        #expect(creds.contains("CapEff: 0000000000000000"), "\(creds)")
        #expect(res["socket"] as? String == "660 nobody")
        #expect(res["after_tap"] as? String == "1")
        #expect(res["after_restart"] as? String == "2")
    }
}
