"""kioskd under a real systemd: systemd 252 is PID 1 in the VM (the host root read-only below a
tmpfs overlay, see systemd-boot.sh), kioskd is installed by scripts/install.sh with the shipped
unit and started with systemctl. Proves: ready only after the first frame (Type=notify) and
STATUS=; the unit's user, groups, capabilities and read-only sandbox; DRM and input as that user;
state written to the StateDirectory; a hung render loop killed by the watchdog and restarted
with the picture back; a bad reload keeps the daemon running with file:line:key in the journal;
the console comes back on stop; a bad config at start exits 78 and is not restarted; no
"Failed to set thread priority" noise in the journal."""


from vmharness import BOCHS_CONSOLE_LOST, Session, clock_rgb, clock_second, kv, scenario


def pairs(payload: str) -> dict:
    """'PATH=verdict PATH=verdict …' → dict (an error message instead gives {"error": …})."""
    words = payload.split()
    if not words or any("=" not in w for w in words):
        return {"error": payload}
    return dict(w.split("=", 1) for w in words)


@scenario("systemd-unit", display="VGA", timeout=420, boot="scripts/vm/systemd-boot.sh",
          prelude="systemd-prelude.sh", ready_timeout=180, guest="systemd-unit.sh")
def systemd_unit(s: Session) -> None:
    """systemd 252 as PID 1: the installed unit is ready after the first frame, sandboxed, restarted by the watchdog, not restarted on exit 78."""
    b = s.wait_marker("basic", 150).split()
    s.result("basic_target_s", round(float(b[1]) - float(b[0]), 2) if len(b) == 2 else b)
    s.result("boot_gaps", s.wait_marker("boot-gaps", 60))
    sd = s.wait_marker("systemd", 60)
    s.result("systemd", sd)
    s.expect(sd.startswith("systemd 25") and "pid1=systemd" in sd, f"systemd 25x is PID 1 (not a chroot under busybox): {sd}")
    trace = s.wait_marker("install-trace", 180)
    steps = []
    for part in trace.split("|"):
        f = part.split(" ", 2)
        if len(f) == 3:
            try:
                steps.append((float(f[1]), f[2]))
            except ValueError:
                pass
    slow = sorted(((round(b[0] - a[0], 1), a[1][:60]) for a, b in zip(steps, steps[1:])), reverse=True)[:4]
    s.result("install_slowest_steps", slow)
    inst = s.wait_marker("install", 120).split("|")
    s.result("install", inst)
    s.expect(inst[0] == "0", f"scripts/install.sh --no-build succeeded in the guest: {inst}")
    if inst[0] != "0":
        return
    s.expect("uid=" in inst[2], f"install.sh created the kioskd user: {inst[2]}")
    ti = inst[1].split()
    s.result("install_s", round(float(ti[1]) - float(ti[0]), 1) if len(ti) == 2 else inst[1])
    groups = s.wait_marker("groups", 30)
    s.result("groups", groups)

    # Ready only after the first frame: the screendump taken the moment `systemctl start`
    # returned already shows the clock, live (the colour of the guest's current second).
    console = s.console_before()
    act = s.wait_marker("active", 120)
    img = s.screendump("at-active")
    s.answer()
    a = kv(act)
    t_active = float(a.get("t", "0"))
    t_done = float(s.wait_marker("shot1-done", 30))
    s.result("at_active", {k: a.get(k) for k in ("rc", "ActiveState", "SubState", "StatusText", "NRestarts")})
    s.expect(a.get("rc") == "0" and a.get("ActiveState") == "active" and a.get("SubState") == "running",
             f"systemctl start kioskd succeeded and the unit is active/running: {act}")
    off = clock_second(img, t_active, t_done)
    s.result("clock_at_active", {"rgb": img.pixel_at(0.03, 0.03), "expected": clock_rgb(t_active), "second_offset": off})
    s.expect(off is not None, f"when systemctl start returned the clock was already on screen: background "
                              f"{img.pixel_at(0.03, 0.03)}, expected about {clock_rgb(t_active)}")
    status = a.get("StatusText", "")
    s.expect("clock" in status, f"STATUS= reaches systemd: StatusText names the scene ({status!r})")
    tm = kv(s.wait_marker("timing", 30).replace(" ", "|"))
    s.result("timing", tm)
    try:
        ff = float(tm["first_frame"])
        active_s = int(tm["active_us"]) / 1e6
        exec_s = int(tm["exec_us"]) / 1e6
        s.result("start_to_first_frame_s", round(ff - exec_s, 3))
        s.result("start_to_active_s", round(active_s - exec_s, 3))
        # The journal stamps a line when journald reads it, so allow it to lag READY=1 a little.
        s.expect(active_s >= ff - 0.5, f"active ({active_s:.3f}) not before the first frame was logged ({ff:.3f})")
    except (KeyError, ValueError):
        s.expect(False, f"journal has the first-frame line and systemd the timestamps: {tm}")

    creds = s.wait_marker("creds", 30)
    s.result("credentials", creds)
    uid_gid = kv(groups.replace(" ", "|")).get("kioskd", "?:?").split(":")
    s.expect(f"Uid: {uid_gid[0]} {uid_gid[0]} {uid_gid[0]} {uid_gid[0]}" in creds and uid_gid[0] not in ("0", "?"),
             f"kioskd runs as the kioskd user (uid {uid_gid[0]}): {creds}")
    gids = [kv(groups.replace(" ", "|")).get(g, "?") for g in ("video", "input", "render")]
    s.expect(all(g in creds.split("Groups:")[-1].split("CapInh")[0].split() for g in gids),
             f"kioskd has the video, input and render groups ({gids}): {creds}")
    s.expect("NoNewPrivs: 1" in creds, f"NoNewPrivs set ({creds})")
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        s.expect(f"{cap}: 0000000000000000" in creds, f"{cap} is empty ({creds})")
    s.expect("Seccomp: 2" in creds, f"a seccomp filter is installed ({creds})")
    limits = s.wait_marker("limits", 30)
    s.result("nofile", limits)
    s.expect(limits.split()[-3:-1] == ["8192", "8192"] or " 8192 " in f" {limits} ", f"LimitNOFILE: 8192 open files ({limits})")
    s.result("namespace_mounts", s.wait_marker("mounts", 30))
    writable = pairs(s.wait_marker("writable", 60))
    s.result("writable_as_root_in_namespace", writable)
    allowed = {"/var/lib/kioskd", "/run/kioskd", "/tmp", "/var/tmp", "/dev/shm"}
    leaks = sorted(d for d, v in writable.items() if v == "writable" and d not in allowed)
    s.expect(not leaks, f"nothing outside StateDirectory, RuntimeDirectory and the private /tmp is writable in the "
                        f"unit's mount namespace, even for root: {leaks}")
    for d in ("/", "/etc", "/usr", "/var", "/var/lib", "/opt", "/run"):
        s.expect(writable.get(d) in ("ro", "denied"), f"{d} is read-only or denied in the unit's namespace ({writable.get(d)})")
    s.expect(writable.get("/var/lib/kioskd") == "writable" and writable.get("/run/kioskd") == "writable",
             f"the state and runtime folders are writable: {writable}")
    uw = pairs(s.wait_marker("user-writable", 30))
    s.result("writable_as_kioskd", uw)
    s.expect(uw.get("/var/lib/kioskd") == "writable" and uw.get("/run/kioskd") == "writable"
             and all(uw.get(d) in ("ro", "denied") for d in ("/etc/kioskd", "/var/lib", "/run")),
             f"the kioskd user writes its own folders (and the private /tmp) only: {uw}")

    inc = s.wait_marker("inc", 30)
    s.result("inc", inc)
    s.expect(inc.endswith("|1"), f"kioskctl counter HOME inc over /run/kioskd/control.sock made it 1: {inc}")
    st = s.wait_marker("state", 30)
    s.result("state", st)
    owner, files = (st.split("|", 1) + [""])[:2]
    s.expect(owner.startswith("kioskd:kioskd 750"), f"/var/lib/kioskd belongs to kioskd, mode 0750: {owner}")
    newf = files.split()
    # Its state file, or the state journal the command pipeline appends it to (written into the
    # state files at the next checkpoint or stop).
    s.expect(any(f.startswith("kioskd:") and ("HOME" in f or f == "kioskd:journal.log") for f in newf),
             f"the acknowledged counter value was written to a kioskd-owned file in /var/lib/kioskd: {files!r}")
    tap = s.wait_marker("tap", 60)
    s.result("tap", tap)
    s.expect(tap.startswith("2|") and "input device added: sd-tap" in tap,
             f"a tap on a uinput touchscreen reached kioskd as the kioskd user (counter 1 → 2): {tap}")

    # Watchdog: SIGSTOP freezes the render loop; systemd kills it and starts a new one.
    hung = kv(s.wait_marker("hung", 30))
    s.result("watchdog", hung.get("watchdog"))
    rs = kv(s.wait_marker("restarted", 120))
    t_rs = float(rs.get("t", "0"))
    s.result("restarted", {k: rs.get(k) for k in ("ActiveState", "MainPID", "NRestarts")})
    s.result("watchdog_restart_s", round(t_rs - float(hung.get("t", "0")), 1))
    s.expect(rs.get("ActiveState") == "active" and rs.get("MainPID") not in (None, "0", hung.get("pid")),
             f"after SIGSTOP a new kioskd is active: {rs} (hung pid {hung.get('pid')})")
    s.expect(rs.get("NRestarts") == "1", f"NRestarts went 0 → 1: {rs.get('NRestarts')}")
    img2 = s.screendump("after-watchdog")
    s.answer()
    t2 = float(s.wait_marker("shot2-done", 30))
    off2 = clock_second(img2, t_rs, t2)
    s.result("clock_after_watchdog", {"rgb": img2.pixel_at(0.03, 0.03), "expected": clock_rgb(t_rs), "second_offset": off2})
    s.expect(off2 is not None, f"the restarted kioskd shows the live clock again: {img2.pixel_at(0.03, 0.03)}, "
                               f"expected about {clock_rgb(t_rs)}")
    wd = s.wait_marker("wd-journal", 30)
    s.result("watchdog_journal", wd)
    s.expect("watchdog timeout" in wd.lower(), f"the journal says the watchdog fired: {wd}")
    after = s.wait_marker("after-restart", 30)
    s.expect(after.startswith("2|"), f"the counter kept its value across the watchdog restart: {after[:200]}")

    # A bad reload keeps the old config running and logs file:line:key at warning or above.
    rl = kv(s.wait_marker("reload", 60))
    s.result("reload", rl)
    s.result("reload_journal", s.wait_marker("reload-prio", 30))
    line = rl.get("line", "?")
    s.expect(rl.get("ActiveState") == "active" and rl.get("MainPID") == rl.get("pid"),
             f"a reload with a bad config keeps the same kioskd running: {rl}")
    raw = s.markers("reload")[-1] if s.markers("reload") else ""
    s.expect(f"/etc/kioskd/kioskd.toml:{line}" in raw and "color_mode" in raw,
             f"journalctl -u kioskd -p warning names /etc/kioskd/kioskd.toml:{line} and the key color_mode: {raw[-300:]}")

    # Stop: the console comes back.
    s.wait_marker("before-stop", 30)
    before = s.screendump("before-stop")
    s.answer()
    stop = kv(s.wait_marker("stop", 60))
    s.expect(stop.get("rc") == "0" and stop.get("ActiveState") == "inactive", f"systemctl stop: {stop}")
    s.result("kioskd_frame_lit_pixels", before.lit())
    # The watchdog killed the first kioskd (the kernel put the console back): on bochs-drm the
    # console may come back black; anything else (kioskd's frame left on screen) fails.
    s.expect_console_back(console, "after-stop", "on stop the text console is shown again as it was before kioskd", 15,
                          black_known=BOCHS_CONSOLE_LOST)
    s.answer()

    # A bad config at start: exit 78 (EX_CONFIG), failed, not restarted.
    bs_raw = s.wait_marker("badstart", 120)
    bs = kv(bs_raw)
    s.result("badstart", {k: bs.get(k) for k in ("rc", "restart", "window", "seen", "ActiveState", "Result",
                                                 "ExecMainStatus", "NRestarts")})
    s.expect(bs.get("rc") not in (None, "0"), f"systemctl start with a bad config fails: {bs_raw}")
    s.expect(bs.get("NRestarts") == "0", f"not restarted: NRestarts stays 0 over {bs.get('window')} "
                                         f"(RestartSec {bs.get('restart')}): {bs_raw}")
    s.expect(bs.get("ActiveState") == "failed" and bs.get("Result") == "exit-code",
             f"the unit ends failed with result exit-code: {bs_raw}")
    s.expect(bs.get("ExecMainStatus") == "78", f"the main process exited 78 (EX_CONFIG): {bs_raw}")
    s.expect("activating" not in bs.get("seen", "") and "auto-restart" not in bs.get("seen", ""),
             f"the unit was never scheduled for a restart: states seen {bs.get('seen')}")
    bl = s.wait_marker("badstart-log", 30)
    s.result("badstart_log", bl)
    s.result("badstart_journal", s.wait_marker("badstart-prio", 30))
    s.expect(f"/etc/kioskd/kioskd.toml:{line}" in bl and "color_mode" in bl,
             f"journalctl -u kioskd -p warning shows why it did not start (file:line:key): {bl!r}")
    be = s.wait_marker("badstart-exit", 30)
    s.result("badstart_exit", be)
    s.expect("status=78" in be, f"the journal records exit status 78: {be!r}")
    s.result("badstart_lines", s.wait_marker("badstart-lines", 30))

    noise = s.wait_marker("noise", 60)
    s.result("thread_priority_lines", noise)
    s.expect(noise.startswith("0|"), f"no 'Failed to set thread priority' in the journal of the whole boot: {noise}")
