"""kioskd started the way systemd/kioskd.service starts it: an unprivileged user with only the
video, input and render groups, no capabilities, no new privileges; state and control socket in
directories that user owns. It must get the display (DRM master as first opener) and the input
(libinput through udev), answer kioskctl, and keep the counter across a SIGTERM + restart."""

from vmharness import Session, scenario



@scenario("kioskd-unit-user", display="VGA", timeout=300, guest="kioskd-unit-user.sh")
def kioskd_unit_user(s: Session) -> None:
    """kioskd as an unprivileged user with video/input/render groups (as the unit) drives DRM, reads a uinput touchscreen, keeps the counter across a restart."""
    gids = s.wait_marker("gids", 60).split(",")
    up = s.wait_marker("up", 120)
    s.result("credentials", up)
    s.expect(up != "failed", "kioskd started as nobody with the video/input/render groups and showed a frame")
    if up == "failed":
        return
    f = up.split()
    s.expect(up.startswith("Uid: 65534 65534 65534 65534 "), f"kioskd runs as uid 65534 (real, effective, saved, fs), not root ({up})")
    groups = up.split("Groups:")[-1].split("CapEff")[0].split()
    s.expect(len(gids) == 3 and sorted(groups) == sorted(gids),
             f"supplementary groups are exactly video, input and render ({gids}), saw {groups}")
    s.expect("CapEff: 0000000000000000" in up, f"no effective capabilities ({up})")
    sock = s.wait_marker("sock", 30)
    s.result("socket", sock)
    s.expect(sock == "660 nobody", f"control socket mode 0660 owned by the service user ({sock})")
    s.wait_screen(lambda i: i.count((0, 255, 255)) > i.width * i.height // 50, 20, "counter",
                  what="the counter on screen (cyan windows, default theme)")
    s.answer("go")
    v = s.wait_marker("value", 90)
    s.result("after_tap", v)
    s.expect(v == "1", f"a tap on the uinput touchscreen incremented the counter to 1 (kioskctl says {v})")
    v2 = s.wait_marker("value2", 30)
    s.expect(v2 == "2", f"kioskctl counter inc made it 2 (got {v2})")
    s.answer("go")
    s.expect(s.wait_marker("exit", 30) == "0", "SIGTERM: kioskd exits 0")
    s.answer("go")
    s.wait_marker("up", 120)
    v3 = s.wait_marker("value3", 30)
    s.result("after_restart", v3)
    s.expect(v3 == "2", f"the counter survived the restart (got {v3})")
    st = s.wait_marker("status", 30)
    s.expect('"scene":"score"' in st.replace(" ", ""), f"status after restart names the scene: {st[:160]}")
    s.expect(s.wait_marker("released", 30) == "yes", "SIGUSR1 released DRM master")
    re = s.wait_marker("reacquired", 30)
    s.result("reacquired", re)
    s.expect(re not in ("no", "0"), f"SIGUSR2 took DRM master back as the unprivileged user ({re})")
    s.wait_screen(lambda i: i.count((0, 255, 255)) > i.width * i.height // 50, 20, "after-usr2",
                  what="the counter shown again after SIGUSR2")
    s.answer("go")
    s.expect(s.wait_marker("exit2", 30) == "0", "second SIGTERM: exit 0")
