"""VT hand-off: the real kioskd started with a virtual console on standard input (as
systemd's `TTYPath=/dev/tty1` + `StandardInput=tty` does) follows console switches made with
`VT_ACTIVATE` (`kiosk-vmtool vt activate N`, what Ctrl+Alt+Fn does): switching away releases DRM
master (the kernel's fbcon shows the other console, a second DRM client can take the display),
switching back takes master again with a full mode set and repaints the same picture."""

from vmharness import Session, VMError, console_restored_problem, scenario

WHITE, CYAN, BLUE, BLACK = (255, 255, 255), (0, 255, 255), (0, 0, 255), (0, 0, 0)



def _json(s: Session, text: str) -> dict:
    import json
    try:
        return json.loads(text)
    except ValueError:
        s.expect(False, f"kioskctl status --json is JSON: {text[:200]}")
        return {}


@scenario("kioskd-vt-switch-bochs", display="VGA", timeout=180, guest="kioskd-vt-switch.sh")
def vt_switch(s: Session) -> None:
    """Real kioskd on tty1 (VT_PROCESS): VT_ACTIVATE 2 releases DRM master (fbcon shows tty2, a second
    DRM client draws), VT_ACTIVATE 1 takes master back and repaints the same frame; SIGTERM exits 0."""
    before = s.wait_marker("vt-before", 60)
    s.result("vt_before", before)
    s.expect(before.endswith("active=1"), f"tty1 is the active console before kioskd starts ({before})")
    s.wait_marker("console-ready", 60)
    tty1 = s.screendump("tty1")
    s.result("tty1_lit_pixels", tty1.lit())
    s.answer()
    up = s.wait_marker("up", 90)
    s.expect(up == "1", f"kioskd logged that it follows VT switches of its standard input (count {up})")
    if up == "failed":
        return
    shown = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 15, "kioskd",
                          what="kioskd's counter (cyan windows, more than 2 % of the screen)")
    cyan = shown.count(CYAN)
    s.result("kioskd_cyan_pixels", cyan)
    s.expect(shown.pixel_at(0.01, 0.01) == WHITE and cyan > shown.width * shown.height // 50,
             f"kioskd's counter on screen (white background {shown.pixel_at(0.01, 0.01)}, {cyan} cyan pixels)")
    s.answer()

    away = s.wait_marker("away", 60)
    s.result("switch_away", away)
    s.expect("vt 2 active after" in away and away.endswith("active=2"), f"VT_ACTIVATE 2 completed: {away}")
    rel = s.wait_marker("released", 30)
    s.expect(rel == "1", f"kioskd released DRM master on the switch (log count {rel})")
    st = _json(s, s.wait_marker("status-away", 30))
    s.result("mode_away", st.get("mode"))
    s.expect(st.get("mode") == "none", f"kioskctl status while switched away: no mode ({st.get('mode')})")
    console = s.wait_screen(lambda i: i.count(CYAN) == 0, 10, "tty2", what="tty2 (fbcon) instead of kioskd's frame")
    diff = console.differs(shown)
    # tty2 is an empty text console (fbcon, black); kioskd's digits are black too, so every other
    # pixel must change (a text cursor cell, 8x16, may be anywhere).
    nonblack = shown.width * shown.height - shown.count(BLACK)
    s.result("kioskd_nonblack_pixels", nonblack)
    s.result("tty2_changed_pixels", diff)
    s.result("tty2_black_pixels", console.count(BLACK))
    s.expect(console.count(CYAN) == 0 and diff >= nonblack - 128,
             f"tty2 (fbcon) replaced kioskd's frame ({diff} pixels differ of {nonblack} non-black, {console.count(CYAN)} cyan left)")
    s.answer()

    second = s.wait_marker("second", 60)
    s.result("second_client", second[:100])
    s.expect(second.startswith("ok") and "modesets=1" in second,
             f"a second DRM client became master and set its mode while kioskd was away: {second}")
    s.wait_screen(lambda i: i.count(BLUE) == i.width * i.height, 10, "second-client", what="the second client's blue fill")
    s.answer()
    s.expect(s.wait_marker("second-exit", 30) == "0", "second client exits 0")

    back = s.wait_marker("back", 60)
    s.result("switch_back", back)
    s.expect("vt 1 active after" in back and back.endswith("active=1"), f"VT_ACTIVATE 1 completed: {back}")
    acq = s.wait_marker("acquired", 30)
    s.expect(acq == "1", f"kioskd took DRM master back (log count {acq})")
    st = _json(s, s.wait_marker("status-back", 30))
    s.result("mode_back", st.get("mode"))
    s.expect(st.get("mode") == "1280x800", f"kioskctl status after switching back: mode 1280x800 ({st.get('mode')})")
    s.expect(s.wait_marker("alive", 30) == "yes", "kioskd still running after the round trip")
    again = s.wait_screen(lambda i: i.differs(shown) == 0, 10, "kioskd-again", what="kioskd's first frame again (0 pixels differ)")
    s.result("repaint_changed_pixels", again.differs(shown))
    s.result("repaint_cyan_pixels", again.count(CYAN))
    s.expect(again.differs(shown) == 0, f"kioskd repainted the same frame ({again.differs(shown)} pixels differ, "
                                        f"{again.count(CYAN)} cyan vs {cyan})")
    s.answer()

    s.expect(s.wait_marker("exit", 30) == "0", "SIGTERM: kioskd exits 0")
    s.wait_marker("t-exit", 10)
    t = {k: float(s.markers(f"t-{k}")[-1]) for k in ("up", "away", "back", "term", "exit")}
    # Guest seconds: from the first frame to the switch, tty2 + second client, back + checks, SIGTERM.
    s.result("guest_phases_s", {"idle_before_switch": round(t["away"] - t["up"], 2),
                                "away": round(t["back"] - t["away"], 2),
                                "back_and_checks": round(t["term"] - t["back"], 2),
                                "sigterm_to_exit": round(t["exit"] - t["term"], 2)})
    after = s.wait_marker("vt-after", 30)
    s.expect(after == "active=1", f"tty1 still the active console after kioskd exited ({after})")
    try:
        restored = s.wait_screen(lambda i: console_restored_problem(tty1, i) is None, 10, "restored",
                                 what="tty1 as it was before kioskd started")
    except VMError:
        restored = s.screendump("restored")
        s.expect(False, f"after exit tty1 is shown again as it was before kioskd: {console_restored_problem(tty1, restored)}")
    s.result("console_restored_diff", restored.differs(tty1))
    s.answer()
