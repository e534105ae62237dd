import Foundation
import Testing

/// The shipped unit under a real systemd: systemd 252 is PID 1 in the VM (host root read-only
/// under a tmpfs overlay), kioskd is installed by scripts/install.sh and driven with systemctl
/// (scripts/vm/scenarios_systemd.py, scripts/vm/systemd-boot.sh). Enabled with KIOSK_VM_TESTS=1.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["KIOSK_VM_TESTS"] == "1"), .serialized)
struct SystemdVMTests {
    @Test func installedUnitUnderRealSystemd() throws {
        let r = try VMScenario.run("systemd-unit", needsKioskd: true)
        VMScenario.expectPassed(r, "systemd-unit")
        let res = r["results"] as? [String: Any] ?? [:]

        // systemd is PID 1 (not a chroot under busybox).
        let sd = res["systemd"] as? String ?? ""
        #expect(sd.hasPrefix("systemd 25") && sd.contains("pid1=systemd"), "\(sd)")

        // Type=notify: active only once the first frame is on screen, STATUS= reaches systemd.
        let atActive = res["at_active"] as? [String: Any] ?? [:]
        #expect(atActive["ActiveState"] as? String == "active")
        #expect((atActive["StatusText"] as? String ?? "").contains("clock"), "\(atActive)")
        let clock = res["clock_at_active"] as? [String: Any] ?? [:]
        #expect(clock["second_offset"] is Int, "clock not on screen when systemctl start returned: \(clock)")

        // Sandbox: uid kioskd, no capabilities, NoNewPrivs, seccomp; only its own folders writable.
        let creds = res["credentials"] as? String ?? ""
        // groups: "video=G input=G render=G kioskd=UID:GID" as created by install.sh in the guest.
        let groups = res["groups"] as? String ?? ""
        let ids = groups.split(separator: " ").first { $0.hasPrefix("kioskd=") }?.dropFirst(7).split(separator: ":") ?? []
        #expect(ids.count == 2 && ids[0] != "0", "\(groups)")
        if ids.count == 2 {
            #expect(creds.contains("Uid: \(ids[0]) \(ids[0]) \(ids[0]) \(ids[0])"), "\(creds)")
            #expect(creds.contains("Gid: \(ids[1]) \(ids[1]) \(ids[1]) \(ids[1])"), "\(creds)")
        }
        #expect(creds.contains("CapEff: 0000000000000000") && creds.contains("CapBnd: 0000000000000000"), "\(creds)")
        #expect(creds.contains("NoNewPrivs: 1") && creds.contains("Seccomp: 2"), "\(creds)")
        let rootView = res["writable_as_root_in_namespace"] as? [String: String] ?? [:]
        for dir in ["/", "/etc", "/usr", "/var", "/var/lib", "/opt", "/run"] {
            #expect(rootView[dir] == "ro" || rootView[dir] == "denied", "\(dir) in the unit's namespace: \(rootView[dir] ?? "missing")")
        }
        #expect(rootView["/var/lib/kioskd"] == "writable" && rootView["/run/kioskd"] == "writable", "\(rootView)")
        let nofile = res["nofile"] as? String ?? ""
        #expect(nofile.contains("8192"), "LimitNOFILE hard limit: \(nofile)")

        // Control socket, state file, touch input as the kioskd user.
        #expect((res["inc"] as? String ?? "").hasSuffix("|1"))
        #expect((res["state"] as? String ?? "").hasPrefix("kioskd:kioskd 750"))
        #expect((res["tap"] as? String ?? "").hasPrefix("2|"))

        // Watchdog: SIGSTOP → killed, restarted once, the live clock back on screen.
        let restarted = res["restarted"] as? [String: Any] ?? [:]
        #expect(restarted["NRestarts"] as? String == "1", "\(restarted)")
        #expect((res["clock_after_watchdog"] as? [String: Any] ?? [:])["second_offset"] is Int)
        #expect((res["watchdog_journal"] as? String ?? "").lowercased().contains("watchdog timeout"))

        // A bad reload keeps kioskd running; the journal names file:line:key.
        let reload = res["reload"] as? [String: Any] ?? [:]
        #expect(reload["ActiveState"] as? String == "active" && reload["MainPID"] as? String == reload["pid"] as? String, "\(reload)")

        // A bad config at start: exit 78, failed, never restarted, the reason at warning priority.
        let bad = res["badstart"] as? [String: Any] ?? [:]
        #expect(bad["NRestarts"] as? String == "0", "\(bad)")
        #expect(bad["ActiveState"] as? String == "failed" && bad["ExecMainStatus"] as? String == "78", "\(bad)")
        let line = reload["line"] as? String ?? "?"
        let badLog = res["badstart_log"] as? String ?? ""
        #expect(badLog.contains("/etc/kioskd/kioskd.toml:\(line)") && badLog.contains("color_mode"), "\(badLog)")
        #expect((res["badstart_exit"] as? String ?? "").contains("status=78"))

        // No libdispatch thread-priority noise in the whole boot's journal.
        #expect((res["thread_priority_lines"] as? String ?? "").hasPrefix("0|"), "\(res["thread_priority_lines"] ?? "")")
    }
}
