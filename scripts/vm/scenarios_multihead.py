"""Several outputs, one kioskd (issue 23): two heads on one virtio-gpu (`heads=2`: max_outputs=2,
Virtual-2 forced on by the kernel's `video=` argument), each head's QMP screendump checked by
pixels. The config is the multi-output syntax:

    [[output]] connector = "Virtual-1", scenes = ["clock"]
    [[output]] connector = "Virtual-2", scenes = ["score"]
    [[input.device]] match = "kioskd-vm-touch*", output = "Virtual-2"

Every failure message starts with the check it belongs to (see CHECKS). `kioskctl status` is read
for `outputs` (objects with at least `name`, `scene`, `frames`; other keys are ignored)."""

import json
import math
from typing import Optional

from vmharness import (Image, Session, VMError, black_frame_problem, clock_rgb, clock_second,
                       console_restored_problem, scenario)

WHITE, CYAN, BLACK = (255, 255, 255), (0, 255, 255), (0, 0, 0)
CLOCK_AT = (0.03, 0.03)   # a background pixel of the clock (no digits there)

# The checks, in the order they run; each failure message starts with one of these names.
CHECKS = [
    "missing connector",     # a second output on Virtual-9: exit 78, the error names Virtual-9, consoles untouched
    "two scenes at once",    # head 0 the clock's colour for the guest's second, head 1 the counter; status lists both
    "touch on head 1",       # a tap on kioskd-vm-touch-1 changes HOME's half of head 1 only; HOME 1, AWAY 0; head 0 the clock
    "head 1 unplugged",      # Virtual-2 forced off: head 0's clock keeps its colour per second and its frame rate
    "head 1 back",           # Virtual-2 forced on: the same counter frame again; kioskctl AWAY inc changes AWAY's half
    "SIGTERM",               # exit 0, both heads show their text console as before kioskd
]


def timed_status(payload: str) -> tuple[float, dict]:
    """'EPOCH {json}' (kioskd_status_at) → (guest time, status); {} when it is not JSON."""
    t, _, text = payload.partition(" ")
    try:
        st = json.loads(text)
    except ValueError:
        st = {}
    return float(t), st if isinstance(st, dict) else {}


def output_entry(st: dict, name: str) -> dict:
    """The `outputs` entry named `name` in a status (any other keys kept), or {}."""
    for o in st.get("outputs") or []:
        if isinstance(o, dict) and o.get("name") == name:
            return o
    return {}


def frames_of(st: dict, name: str) -> Optional[int]:
    f = output_entry(st, name).get("frames")
    return f if isinstance(f, int) else None


def head0_clock_check(s: Session, check: str, img: Image, t1: float, t2: float) -> None:
    """Head 0's screendump `img` shows the clock's colour for a second in [t1-1, t2+1]."""
    off = clock_second(img, t1, t2, CLOCK_AT)
    s.result("head0_clock", s.results.get("head0_clock", []) + [{"check": check, "rgb": img.pixel_at(*CLOCK_AT), "second_offset": off}])
    s.expect(off is not None, f"{check}: head 0 shows the clock's colour for {t1:.1f}..{t2:.1f}: "
                              f"{img.pixel_at(*CLOCK_AT)}, expected about {clock_rgb(t1)} ({img.path})")


def screen(s: Session, check: str, wait, *args, **kw) -> Image:
    """s.wait_screen or s.settled; when the screen does not get there, the failure is recorded
    under `check` and the checks after it still run (on a screendump taken then)."""
    try:
        return wait(*args, **kw)
    except VMError as e:
        s.expect(False, f"{check}: {e}")
        return s.screendump("timed-out", kw.get("head"))


def counter_problem(img: Image) -> Optional[str]:
    """None when `img` shows the counter scene in the default theme, flat: white background, cyan
    digit windows (more than 2 % of the screen) with dark digits in them."""
    cyan, dark = img.count(CYAN), img.count(BLACK, tolerance=30)
    if img.pixel_at(0.01, 0.01) != WHITE:
        return f"background {img.pixel_at(0.01, 0.01)}, not white"
    if cyan <= img.width * img.height // 50:
        return f"{cyan} cyan pixels (digit windows), expected more than 2 % of {img.width}x{img.height}"
    if dark < 500:
        return f"{dark} dark pixels (digits), expected at least 500"
    return None


@scenario("kioskd-two-outputs", display="virtio-gpu-pci", heads=2, timeout=300, guest="kioskd-multihead.sh")
def two_outputs(s: Session) -> None:
    """One kioskd on two heads: the clock on Virtual-1 and a counter on Virtual-2 at once, a touchscreen mapped to Virtual-2, one head unplugged while the other keeps its rate, both consoles back on SIGTERM; a missing connector exits 78."""
    s.result("checks", CHECKS)
    progress: list = []
    try:
        _two_outputs(s, progress)
    except VMError as e:
        # A marker or QMP wait that fails ends the run: name the check it belongs to and those
        # that did not run.
        check = progress[-1] if progress else "the consoles before kioskd"
        s.result("not_run", CHECKS[CHECKS.index(check) + 1:] if check in CHECKS else CHECKS)
        raise VMError(f"{check}: stopped: {e}") from e


def _two_outputs(s: Session, progress: list) -> None:
    def begin(check: str) -> str:
        progress.append(check)
        return check

    consoles = s.consoles_before([0, 1])

    check = begin("missing connector")
    code = s.wait_marker("bad-exit", 90)
    said = s.wait_marker("bad-log", 30)
    s.result("missing_connector", {"exit": code, "log": said[-400:]})
    s.expect(code == "78", f"{check}: kioskd exits 78 when the second [[output]] names Virtual-9 (exit {code}; it said: {said[-300:]})")
    s.expect("Virtual-9" in said, f"{check}: the error names the connector Virtual-9 (it said: {said[-300:]})")
    s.wait_marker("bad-done", 30)
    for h in (0, 1):
        p = console_restored_problem(consoles[h], s.screendump("after-bad", h))
        s.expect(p is None, f"{check}: head {h} still shows the text console after the refused config: {p}")
    s.answer()

    check = begin("two scenes at once")
    up = s.wait_marker("kioskd-up", 120)
    if up == "failed":
        said = (s.markers("kioskd-log") or [""])[-1]
        s.expect(False, f"{check}: kioskd showed no first frame with the two-output config; it said: {said[-500:]}")
        s.result("not_run", CHECKS[CHECKS.index(check) + 1:])
        return
    t1 = float(s.wait_marker("shot1", 30))
    counter0 = screen(s, check, s.settled, "counter", "head 1 settles on the counter's first frame", head=1)
    # The guest's shot1-done comes after the answer: head 0 is checked against [shot1, shot1-done].
    head0 = s.screendump("clock", 0)
    s.answer()
    t1b = float(s.wait_marker("shot1-done", 30))
    head0_clock_check(s, check, head0, t1, t1b)
    s.result("head_sizes", [f"{head0.width}x{head0.height}", f"{counter0.width}x{counter0.height}"])
    p = counter_problem(counter0)
    s.result("head1_counter", {"cyan": counter0.count(CYAN), "dark": counter0.count(BLACK, tolerance=30)})
    s.expect(p is None, f"{check}: head 1 shows the counter: {p}")
    t_s1, st1 = timed_status(s.wait_marker("status1", 30))
    s.result("status_outputs", [{k: o.get(k) for k in ("name", "scene", "frames")} for o in st1.get("outputs") or []
                                if isinstance(o, dict)])
    for name, scene in (("Virtual-1", "clock"), ("Virtual-2", "score")):
        o = output_entry(st1, name)
        s.expect(o.get("scene") == scene and isinstance(o.get("frames"), int) and o["frames"] >= 1,
                 f"{check}: kioskctl status lists output {name} with scene {scene} and its frames "
                 f"(entry: {json.dumps(o)[:200] if o else 'none'}; outputs: {str(st1.get('outputs'))[:300]})")

    check = begin("touch on head 1")
    s.expect(s.wait_marker("tapped", 90) == "0", f"{check}: kiosk-vmtool tapped with kioskd-vm-touch-1")
    values = s.wait_marker("values", 60)
    s.result("after_tap", values)
    s.expect(values == "HOME=1 AWAY=0", f"{check}: kioskctl counter HOME is 1 and AWAY 0 after the tap ({values})")
    t2 = float(s.wait_marker("shot2", 30))
    tapped = screen(s, check, s.settled, "tapped", "head 1 shows a new frame after the tap", differs_from=counter0, head=1)
    head0 = s.screendump("clock-after-tap", 0)
    s.answer()
    t2b = float(s.wait_marker("shot2-done", 30))
    head0_clock_check(s, check, head0, t2, t2b)
    box = tapped.diff_bbox(counter0)
    s.result("tap_changed_box", box)
    s.expect(box is not None and box[2] <= tapped.width // 2,
             f"{check}: only HOME's half of head 1 changed (changed pixels within {box}, the left half ends at x={tapped.width // 2})")
    s.expect(counter_problem(tapped) is None, f"{check}: head 1 still shows the counter: {counter_problem(tapped)}")

    check = begin("head 1 unplugged")
    t_b, st_b = timed_status(s.wait_marker("before-off", 30))
    seen = s.wait_marker("seen-off", 60)
    s.result("kioskd_said_on_unplug", seen[:300])
    t_o0, st_o0 = timed_status(s.wait_marker("off0", 60))
    t3 = float(s.wait_marker("shot3", 30))
    off_a = s.screendump("clock-unplugged", 0)
    head1_off = s.screendump("unplugged", 1)
    s.answer()
    t3b = float(s.wait_marker("shot3-done", 30))
    s.result("head1_while_unplugged", black_frame_problem(head1_off, qemu_placeholder=True) or "black or QEMU's placeholder")
    head0_clock_check(s, check, off_a, t3, t3b)
    t_o1, st_o1 = timed_status(s.wait_marker("off1", 60))
    t4 = float(s.wait_marker("shot4", 30))
    off_b = screen(s, check, s.wait_screen, lambda i: i.pixel_at(*CLOCK_AT) != off_a.pixel_at(*CLOCK_AT), 5,
                   "clock-unplugged2", head=0, what="head 0's clock colour changes with the next second")
    s.answer()
    t4b = float(s.wait_marker("shot4-done", 30))
    head0_clock_check(s, check, off_b, t4, t4b)
    # Frame rates of Virtual-1: connected (from status1 to just before the unplug) and with
    # Virtual-2 off (at least 5 s of guest time). The clock draws once a second.
    f1, fb, f0, f2 = (frames_of(st, "Virtual-1") for st in (st1, st_b, st_o0, st_o1))
    if None in (f1, fb, f0, f2):
        s.expect(False, f"{check}: kioskctl status gives Virtual-1's frames before and during the unplug "
                        f"({[f1, fb, f0, f2]}; outputs: {str(st_o1.get('outputs'))[:300]})")
    else:
        before, during, dt = (fb - f1) / max(t_b - t_s1, 0.1), f2 - f0, t_o1 - t_o0
        need = math.floor(dt) - 2
        s.result("virtual1_fps", {"connected": round(before, 2), "virtual2_off": round(during / max(dt, 0.1), 2),
                                  "frames_off": during, "window_s": round(dt, 1)})
        s.expect(during >= need, f"{check}: Virtual-1 presented {during} frames in {dt:.1f} s with Virtual-2 off; "
                                 f"the clock's one a second allows no fewer than {need} (connected: {before:.2f}/s)")
    s.result("virtual2_frames_while_off", [frames_of(st_o0, "Virtual-2"), frames_of(st_o1, "Virtual-2")])

    check = begin("head 1 back")
    s.wait_marker("reconnected", 60)
    back = screen(s, check, s.wait_screen, lambda i: i.differs(tapped) == 0, 30, "back", head=1,
                  what="head 1 shows the counter again, identical to the frame before the unplug")
    s.answer()
    inc = s.wait_marker("away-inc", 60).split()
    s.expect(inc[:2] == ["0", "1"], f"{check}: kioskctl counter AWAY inc succeeds and AWAY is 1 ({' '.join(inc)})")
    after = screen(s, check, s.settled, "away", "head 1 shows a new frame after AWAY inc", differs_from=back, head=1)
    box = after.diff_bbox(back)
    s.result("away_changed_box", box)
    s.expect(box is not None and box[0] >= after.width // 2,
             f"{check}: only AWAY's half of head 1 changed (changed pixels within {box}, the right half starts at x={after.width // 2})")
    s.answer()
    _, st_end = timed_status(s.wait_marker("status-end", 30))
    s.result("status_end_outputs", [{k: o.get(k) for k in ("name", "scene", "frames")} for o in st_end.get("outputs") or []
                                    if isinstance(o, dict)])
    s.expect(s.wait_marker("alive", 30) == "yes", f"{check}: kioskd still running")

    check = begin("SIGTERM")
    code = s.wait_marker("kioskd-exit", 30)
    s.expect(code == "0", f"{check}: kioskd exits 0 (status {code})")
    s.wait_marker("stopped", 30)
    for h in (0, 1):
        s.expect_console_back(consoles[h], "restored", f"{check}: head {h} shows its text console as before kioskd", head=h)
    s.answer()
