"""HDMI-CEC on vivid's emulated bus (Debian's kernel builds CONFIG_VIDEO_VIVID_CEC): /dev/cec0
is an HDMI input that plays the TV (cec-ctl --tv, cec-follower from v4l-utils), /dev/cec1 the
kiosk's HDMI output. kioskd with `[display.cec] adapter = "/dev/cec1"` must put the TV into
standby on `kioskctl blank on` and wake it on `blank off`, report the TV's power status as the TV
says it (read independently with cec-ctl from the kiosk's adapter), and report a TV that does not
answer without stopping the clock."""

import json

from vmharness import Session, scenario


def parse(payload: str) -> dict:
    """A `phase` marker: cec-ctl's reading, kioskd's adapter, power and error, milliseconds."""
    f = payload.split("|")
    f += [""] * (5 - len(f))
    return {"tv": f[0], "adapter": f[1], "power": f[2], "error": f[3], "ms": int(f[4]) if f[4].isdigit() else None}


def started(s: Session, what: str) -> bool:
    """vivid's bus and the TV's follower came up, then kioskd (`what`): both checked."""
    setup = s.wait_marker("cec-setup", 120)
    s.result("setup", setup)
    s.expect(setup.startswith("ok"), f"vivid's CEC adapters and the TV's follower are up ({setup})")
    if not setup.startswith("ok"):
        return False
    up = s.wait_marker("kioskd-up", 120)
    s.expect(up != "failed", what)
    return up != "failed"


@scenario("kioskd-cec", display="none", timeout=420, guest="kioskd-cec.sh")
def kioskd_cec(s: Session) -> None:
    """The TV on vivid's CEC bus follows kioskctl blank on/off; kioskd reports its power status; a silent TV is reported, the clock keeps ticking."""
    if not started(s, "kioskd started with [display.cec] adapter = \"/dev/cec1\""):
        return

    start = parse(s.wait_marker("start", 60))
    s.result("start", start)
    s.expect(start["adapter"] == "/dev/cec1", f"status names the adapter /dev/cec1 ({start})")
    s.expect(start["power"] in ("on", "to-on") and start["error"] == "", f"at start kioskd woke the TV and reports it on ({start})")
    s.expect(start["tv"] in ("on", "to-on"), f"cec-ctl reads the TV on at start ({start['tv']})")
    addr = s.wait_marker("kiosk-address", 30)
    s.result("kiosk_address", addr)
    s.expect("Playback" in addr, f"kioskd claimed a Playback logical address on /dev/cec1 ({addr})")

    on = parse(s.wait_marker("blank-on", 60))
    s.result("blank_on", on)
    s.expect(on["tv"] == "standby", f"kioskctl blank on: cec-ctl reads the TV in standby ({on['tv']})")
    s.expect(on["power"] == "standby" and on["error"] == "", f"kioskctl blank on: kioskd reports standby ({on})")

    off = parse(s.wait_marker("blank-off", 60))
    s.result("blank_off", off)
    s.expect(off["tv"] in ("to-on", "on"), f"kioskctl blank off: cec-ctl reads the TV waking (to-on) or on ({off['tv']})")
    s.expect(off["power"] in ("to-on", "on") and off["error"] == "", f"kioskctl blank off: kioskd reports to-on or on ({off})")
    settled = parse(s.wait_marker("blank-off-settled", 60))
    s.result("blank_off_settled", settled)
    s.expect(settled["power"] == "on" and settled["tv"] == "on", f"the TV settles on, read both ways ({settled})")
    control = s.wait_marker("ticking-answering", 120).split()
    s.result("answering_frames_before_after_ms_gap", control)
    control_gap = float(control[3]) if len(control) == 4 else None
    counts = s.wait_marker("follower-log", 30).split()
    s.result("follower_standby_ivo_active_source", counts)
    s.expect(len(counts) == 3 and int(counts[0]) >= 1 and int(counts[1]) >= 2 and int(counts[2]) >= 2,
             f"the TV's follower received Standby, Image View On and Active Source (start and blank off) ({counts})")

    stopped = parse(s.wait_marker("stopped", 60))
    s.result("follower_stopped", stopped)
    s.expect("cec: no answer from the TV" in stopped["error"] and stopped["power"] == "unknown",
             f"with the follower stopped kioskd reports no answer from the TV ({stopped})")
    gone = parse(s.wait_marker("gone", 60))
    s.result("tv_gone", gone)
    s.expect("cec: no answer from the TV" in gone["error"] and "not acknowledged" in gone["error"],
             f"with no TV on the bus kioskd reports its messages unacknowledged ({gone})")
    s.expect(gone["ms"] is not None and gone["ms"] < 15000, f"the report came within 15 s of blank off ({gone['ms']} ms)")
    ticking = s.wait_marker("ticking", 120).split()
    s.result("frames_before_after_ms_gap", ticking)
    ok = len(ticking) == 4
    s.expect(ok, f"frames and frame gap read ({ticking})")
    if ok:
        f0, f1, ms, gap = int(ticking[0]), int(ticking[1]), int(ticking[2]), float(ticking[3])
        # One frame a second; each frame count is read by a kioskctl start (up to ~1 s under TCG).
        s.expect(f1 - f0 >= ms // 1000 - 2, f"the clock kept ticking while the TV did not answer: {f1 - f0} frames in {ms} ms")
        # The target is 1.1 s; under TCG on a busy host a minute with the TV answering may show
        # more already, so the silent TV's minute may match that minute (+0.1 s, at most 2 s).
        bound = max(1100.0, min((control_gap or 0) + 100, 2000.0))
        s.result("gap_bound_ms", bound)
        s.expect(gap <= bound, f"the longest frame gap over the silent TV's quiet minute is at most {bound} ms ({gap} ms; "
                               f"{control_gap} ms over a minute with the TV answering)")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")


@scenario("kioskd-cec-keys", display="none", timeout=300, guest="kioskd-cec-keys.sh")
def kioskd_cec_keys(s: Session) -> None:
    """The TV remote's keys on vivid's CEC bus reach kioskd as keyboard keys: up/down change the counter, keys bound to nothing are ignored, the TV's power question is answered."""
    if not started(s, "kioskd started with [display.cec] adapter = \"/dev/cec1\" and a counter bound to KEY_UP/KEY_DOWN"):
        return
    s.result("kiosk_address", s.wait_marker("kiosk-address", 60))
    s.expect(s.wait_marker("start", 30) == "0", "the counter starts at 0")
    once = s.wait_marker("up-once", 30).split()
    s.result("up_once_value_ms", once)
    s.expect(once[:1] == ["1"], f"the remote's Up (User Control Pressed ui-cmd=up, then Released) adds 1 ({once})")
    s.expect(s.wait_marker("up-thrice", 30) == "3", "two more Up presses: 3")
    s.expect(s.wait_marker("down", 30) == "2", "Down takes 1 away: 2")
    s.expect(s.wait_marker("channel-up", 30) == "3", "Channel Up, bound to KEY_UP by [display.cec.keys]: 3")
    unbound = s.wait_marker("unbound", 30).split()
    s.result("unbound_value_debug_lines", unbound)
    s.expect(unbound[:1] == ["3"], f"volume up, red (bound to none) and 7 (no binding) change nothing ({unbound})")
    s.expect(len(unbound) == 2 and int(unbound[1]) >= 2,
             f"volume up and red are logged at debug level as bound to nothing ({unbound})")
    def screen(marker: str, want: bool) -> None:
        raw = s.wait_marker(marker, 30)
        try:
            o = json.loads(raw)["outputs"][0]
        except (ValueError, KeyError, IndexError):
            o = {}
        s.result(marker, {k: o.get(k) for k in ("showing", "not_showing", "blanked", "connected")})
        s.expect(o.get("showing") is want and o.get("connected") is True,
                 f"kioskctl outputs: {'lit, showing' if want else 'blanked, not showing'} ({raw[:200]})")

    screen("outputs-lit", True)
    asks = s.wait_marker("tv-asks", 30)
    s.result("tv_asks", asks)
    s.expect(asks == "on", f"the TV's Give Device Power Status is answered: on ({asks!r})")
    screen("outputs-blanked", False)
    blanked = s.wait_marker("tv-asks-blanked", 30)
    s.result("tv_asks_blanked", blanked)
    s.expect(blanked == "standby", f"blanked, kioskd answers standby ({blanked!r})")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM (no crash from the remote's keys)")
