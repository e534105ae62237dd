"""Input on a real kernel: uinput touchscreens and keyboards, QEMU's usb-tablet, through libinput + udev.

Two layers:
- `input-libinput-*`: kiosk-vmtool's `input-events` runs kioskd's LibInputSource and prints every
  InputEvent; the host checks slots, positions (normalised, rotated), cancels and keys exactly.
- `input-kioskd-*`: kioskd itself on DRM (paint and counter scenes); the host checks the screendump.
"""

import base64
import gzip
import re
import os

from vmharness import Session, scenario

# ---------------------------------------------------------------------------------------------
# Helpers (host side)
# ---------------------------------------------------------------------------------------------

TOUCH_RE = re.compile(r"^vmtool: event touch (down|motion|up|cancel) slot=(\d+) x=([-0-9.e]+) y=([-0-9.e]+)$")


def decode_log(payload: str) -> list[str]:
    """A guest log sent as gzip+base64 in a marker payload."""
    return gzip.decompress(base64.b64decode(payload)).decode(errors="replace").splitlines()


def section(lines: list[str], device: str) -> list[str]:
    """Event lines from `device-added DEVICE` to `device-removed DEVICE` (inclusive)."""
    start = next((i for i, l in enumerate(lines) if l.startswith(f"vmtool: event device-added {device} ")), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines)) if lines[i].startswith(f"vmtool: event device-removed {device} ")), len(lines) - 1)
    return lines[start:end + 1]


def touches(lines: list[str]) -> list[tuple[str, int, float, float]]:
    out = []
    for l in lines:
        m = TOUCH_RE.match(l)
        if m:
            out.append((m.group(1), int(m.group(2)), float(m.group(3)), float(m.group(4))))
    return out


def by_slot(ts):
    slots: dict[int, list] = {}
    for t in ts:
        slots.setdefault(t[1], []).append(t)
    return slots


def near(p, q, tol):
    return abs(p[0] - q[0]) <= tol and abs(p[1] - q[1]) <= tol


def rot90(p):
    """Physical → logical for a picture turned 90° clockwise: the panel's native top-left is
    the viewer's bottom-left, the native top-right the viewer's top-left."""
    x, y = p
    return (y, 1 - x)


def check_stroke(s: Session, name: str, events, start, end, tol, last_phase="up"):
    """One finger: down at `start`, at least one motion, `last_phase` at `end` (all logical)."""
    phases = [e[0] for e in events]
    s.expect(len(events) >= 3, f"{name}: at least down, motion, {last_phase} (saw {phases})")
    if not events:
        return
    first, last = events[0], events[-1]
    s.expect(first[0] == "down", f"{name}: starts with down (saw {first[0]})")
    s.expect(near(first[2:], start, tol), f"{name}: down at {start} (saw {first[2:]})")
    s.expect(last[0] == last_phase, f"{name}: ends with {last_phase} (saw {last[0]})")
    s.expect(near(last[2:], end, tol), f"{name}: {last_phase} at {end} (saw {last[2:]})")
    s.expect(all(e[0] == "motion" for e in events[1:-1]), f"{name}: only motion between (saw {phases})")


# ---------------------------------------------------------------------------------------------
# An evemu recording of a real-world-like panel (replayed with Debian's evemu-tools)
# ---------------------------------------------------------------------------------------------

EVEMU_NAME = "Kiosk ILITEK-like Panel"
EVEMU_RANGE = (1023, 599)
EVEMU_FINGERS = [(0.2, 0.25), (0.5, 0.5), (0.8, 0.75)]   # all three land in one frame
EVEMU_STEPS, EVEMU_DX = 5, 0.02                          # then move right together


def _mask(bits, nbytes):
    b = [0] * nbytes
    for bit in bits:
        b[bit // 8] |= 1 << (bit % 8)
    return b


def _lines(tag, data):
    return [f"{tag} " + " ".join(f"{x:02x}" for x in data[i:i + 8]) for i in range(0, len(data), 8)]


def evemu_recording() -> str:
    """Device description + events in evemu's format: odd ranges, resolution 0, ABS_MT_TOOL_TYPE
    and ABS_MT_DISTANCE, three fingers landing in one frame, lifting in two frames."""
    EV_SYN, EV_KEY, EV_ABS = 0, 1, 3
    ABS_X, ABS_Y, SLOT, PX, PY, TOOL, TID, DIST = 0x00, 0x01, 0x2F, 0x35, 0x36, 0x37, 0x39, 0x3B
    BTN_TOUCH = 0x14A
    out = ["# EVEMU 1.3", f"N: {EVEMU_NAME}", "I: 0018 222a 0001 0100"]
    out += _lines("P:", _mask([1], 8))                                   # INPUT_PROP_DIRECT
    out += _lines("B: 00", _mask([EV_SYN, EV_KEY, EV_ABS], 8))
    out += _lines("B: 01", _mask([BTN_TOUCH], 96))
    out += _lines("B: 03", _mask([ABS_X, ABS_Y, SLOT, PX, PY, TOOL, TID, DIST], 8))
    mx, my = EVEMU_RANGE
    for code, lo, hi in ((ABS_X, 0, mx), (ABS_Y, 0, my), (SLOT, 0, 9), (PX, 0, mx), (PY, 0, my),
                         (TOOL, 0, 2), (TID, 0, 65535), (DIST, 0, 1)):
        out.append(f"A: {code:02x} {lo} {hi} 0 0 0")
    t = [0.0]

    def ev(typ, code, value):
        out.append(f"E: {int(t[0])}.{int(round((t[0] % 1) * 1e6)):06d} {typ:04x} {code:04x} {value}")

    def units(p):
        return round(p[0] * mx), round(p[1] * my)

    t[0] = 0.5
    for i, p in enumerate(EVEMU_FINGERS):
        x, y = units(p)
        ev(EV_ABS, SLOT, i); ev(EV_ABS, TID, 100 + i); ev(EV_ABS, TOOL, 0); ev(EV_ABS, DIST, 0)
        ev(EV_ABS, PX, x); ev(EV_ABS, PY, y)
    x, y = units(EVEMU_FINGERS[0])
    ev(EV_KEY, BTN_TOUCH, 1); ev(EV_ABS, ABS_X, x); ev(EV_ABS, ABS_Y, y); ev(EV_SYN, 0, 0)
    for step in range(1, EVEMU_STEPS + 1):
        t[0] += 0.012
        for i, p in enumerate(EVEMU_FINGERS):
            x, y = units((p[0] + EVEMU_DX * step, p[1]))
            ev(EV_ABS, SLOT, i); ev(EV_ABS, PX, x)
        x, y = units((EVEMU_FINGERS[0][0] + EVEMU_DX * step, EVEMU_FINGERS[0][1]))
        ev(EV_ABS, ABS_X, x); ev(EV_SYN, 0, 0)
    t[0] += 0.012
    ev(EV_ABS, SLOT, 1); ev(EV_ABS, TID, -1); ev(EV_SYN, 0, 0)            # the middle finger lifts first
    t[0] += 0.012
    ev(EV_ABS, SLOT, 0); ev(EV_ABS, TID, -1); ev(EV_ABS, SLOT, 2); ev(EV_ABS, TID, -1)
    ev(EV_KEY, BTN_TOUCH, 0); ev(EV_SYN, 0, 0)
    return "\n".join(out) + "\n"


def _write_evemu(s: Session) -> None:
    """The recording, for the guest ($KIOSK_VM_RUNDIR/panel.evemu)."""
    with open(os.path.join(s.rundir, "panel.evemu"), "w") as f:
        f.write(evemu_recording())


# ---------------------------------------------------------------------------------------------
# libinput level: kioskd's LibInputSource, events printed by kiosk-vmtool input-events
# ---------------------------------------------------------------------------------------------

@scenario("input-libinput-touch", display="none", timeout=240, guest="input-libinput-touch.sh",
          setup=_write_evemu, env={"EVEMU_NAME": EVEMU_NAME})
def input_libinput_touch(s: Session) -> None:
    """uinput touchscreens through LibInputSource: two simultaneous fingers, odd ranges, unplug mid-stroke, keys, rotation 90."""
    for m in ("ideal", "odd", "ten", "unplug", "keys"):
        s.expect(s.wait_marker(m, timeout=90) == "0", f"kiosk-vmtool {m} exited 0")
    ev_status = s.wait_marker("evemu", timeout=60)
    s.expect(s.wait_marker("alive", timeout=30) == "yes", "the input source survived the unplug")
    lines = decode_log(s.wait_marker("events", timeout=30))
    s.expect(s.wait_marker("rot", timeout=90) == "0", "kiosk-vmtool rot exited 0")
    lines90 = decode_log(s.wait_marker("events90", timeout=30))
    tool = decode_log(s.wait_marker("tool", timeout=30))
    s.result("tool", [l for l in tool if "created" in l or "unplugged" in l])

    # a) ideal panel: two fingers down in the same frame, each its own slot, ending where drawn.
    sec = section(lines, "kvm-ideal")
    s.expect(bool(sec) and "[touch]" in sec[0], f"kvm-ideal added as a touch device ({sec[:1]})")
    ts = touches(sec)
    slots = by_slot(ts)
    s.expect(len(slots) == 2, f"kvm-ideal: two slots (saw {sorted(slots)})")
    s.result("ideal_slots", sorted(slots))
    s.result("ideal_events", len(ts))
    if len(slots) == 2:
        a, b = sorted(slots)
        s.expect(a // 1000 == b // 1000 and {a % 1000, b % 1000} == {0, 1}, f"slots are device*1000 + 0/1 ({a}, {b})")
        check_stroke(s, "ideal finger 0", slots[a], (0.1, 0.2), (0.9, 0.2), 0.002)
        check_stroke(s, "ideal finger 1", slots[b], (0.2, 0.9), (0.2, 0.3), 0.002)
        downs = [i for i, t in enumerate(ts) if t[0] == "down"]
        first_motion = next((i for i, t in enumerate(ts) if t[0] == "motion"), len(ts))
        s.expect(len(downs) == 2 and downs[1] < first_motion, "both fingers are down before either moves (simultaneous)")
        s.expect(len(slots[a]) >= 10 and len(slots[b]) >= 10, f"8 motion steps each (saw {len(slots[a])}, {len(slots[b])} events)")
    s.expect(any(l == "vmtool: event frame" for l in sec), "touch frames are reported")

    # b) odd panel: normalised by its own range.
    ts = touches(section(lines, "kvm-odd"))
    check_stroke(s, "odd finger", ts, (0.25, 0.5), (0.75, 0.5), 1.5 / 479)

    # b2) ten fingers at once, each its own slot, each ending where it was drawn.
    slots = by_slot(touches(section(lines, "kvm-ten")))
    s.result("ten_fingers", len(slots))
    s.expect(len(slots) == 10, f"kvm-ten: ten slots (saw {sorted(slots)})")
    for n, slot in enumerate(sorted(slots)):
        x = 0.05 + 0.1 * n
        check_stroke(s, f"ten-finger stroke {n}", slots[slot], (x, 0.2), (x, 0.8), 0.002)

    # c) unplug: each finger ends cancelled at its last position (4 of 10 steps along).
    sec = section(lines, "kvm-unplug")
    slots = by_slot(touches(sec))
    s.expect(len(slots) == 2, f"kvm-unplug: two slots (saw {sorted(slots)})")
    if len(slots) == 2:
        a, b = sorted(slots)
        check_stroke(s, "unplug finger 0", slots[a], (0.3, 0.3), (0.46, 0.46), 0.002, last_phase="cancel")
        check_stroke(s, "unplug finger 1", slots[b], (0.7, 0.3), (0.54, 0.46), 0.002, last_phase="cancel")
    s.expect(bool(sec) and sec[-1].startswith("vmtool: event device-removed kvm-unplug"), "device-removed after the cancels")

    # d) an evemu recording of a real-world-like panel: three fingers in one frame.
    s.expect(ev_status.startswith("0 "), f"evemu-play replayed the recording ({ev_status})")
    sec = section(lines, EVEMU_NAME)
    ts = touches(sec)
    slots = by_slot(ts)
    s.result("evemu_slots", sorted(slots))
    s.expect(len(slots) == 3, f"evemu panel: three slots (saw {sorted(slots)})")
    tol = 1.5 / EVEMU_RANGE[1]
    for n, (slot, p) in enumerate(zip(sorted(slots), EVEMU_FINGERS)):
        check_stroke(s, f"evemu finger {n}", slots[slot], p, (p[0] + EVEMU_STEPS * EVEMU_DX, p[1]), tol)
    downs = [i for i, t in enumerate(ts) if t[0] == "down"]
    first_motion = next((i for i, t in enumerate(ts) if t[0] == "motion"), len(ts))
    s.expect(len(downs) == 3 and downs[-1] < first_motion, "all three fingers land before any moves")
    ups = [t[1] for t in ts if t[0] == "up"]
    s.expect(len(ups) == 3 and ups[0] == sorted(slots)[1], f"the middle finger lifts first (ups {ups})")

    # e) keys.
    keys = [l.split("event ", 1)[1] for l in section(lines, "kvm-keys") if l.startswith("vmtool: event key ")]
    want = ["key KEY_UP pressed", "key KEY_UP released"] * 2 + ["key KEY_KPPLUS pressed", "key KEY_KPPLUS released"]
    s.expect(keys == want, f"keys in order {want} (saw {keys})")

    # f) rotation 90: logical = rot90(physical).
    slots = by_slot(touches(section(lines90, "kvm-rot")))
    s.expect(len(slots) == 2, f"kvm-rot: two slots (saw {sorted(slots)})")
    if len(slots) == 2:
        a, b = sorted(slots)
        check_stroke(s, "rot90 finger 0", slots[a], rot90((0.1, 0.2)), rot90((0.9, 0.2)), 0.002)
        check_stroke(s, "rot90 finger 1", slots[b], rot90((0.2, 0.9)), rot90((0.2, 0.3)), 0.002)
        s.result("rot90_finger0", [slots[a][0][2:], slots[a][-1][2:]])


@scenario("input-libinput-usb-tablet", display="none", timeout=180,
          qemu_args=["-device", "qemu-xhci", "-device", "usb-tablet"], guest="input-libinput-usb-tablet.sh")
def input_libinput_usb_tablet(s: Session) -> None:
    """QEMU usb-tablet driven by QMP input-send-event acts as one finger (slot device*1000+100)."""
    added = s.wait_marker("ready", timeout=90)
    s.result("devices", added)
    s.expect("USB Tablet" in added, f"usb-tablet seen by libinput ({added})")
    # QEMU's HID queue merges motion into a queued button change the guest has not read yet: each
    # step waits until the guest saw the previous one (its marker), the press carries its position.
    s.answer("go")
    s.send_abs(0.2, 0.3, button=True)
    s.wait_marker("down", timeout=30)
    for i in range(1, 6):
        s.send_abs(0.2 + 0.1 * i, 0.3 + 0.05 * i)
        s.wait_marker(f"moved{i}", timeout=30)
    s.send_abs(0.7, 0.55, button=False)
    lines = decode_log(s.wait_marker("events", timeout=60))
    slots = by_slot(touches(lines))
    s.expect(len(slots) == 1, f"one finger (saw {sorted(slots)})")
    if len(slots) == 1:
        (slot, ev), = slots.items()
        s.result("slot", slot)
        s.expect(slot % 1000 == 100, f"pointer finger slot is device*1000+100 (saw {slot})")
        # QEMU scales 0…0x7fff onto the tablet's 0…32767 range.
        check_stroke(s, "tablet finger", ev, (0.2, 0.3), (0.7, 0.55), 0.002)


@scenario("input-libinput-output-permissions", display="none", timeout=240, guest="input-libinput-output-permissions.sh")
def input_libinput_output_permissions(s: Session) -> None:
    """map_to_output follows udev's WL_OUTPUT (other output ignored, unnamed kept); calibration with rotation; no access to /dev/input is a clear error naming the device, group and seat."""
    lines = decode_log(s.wait_marker("events", timeout=120))
    other, mine, plain = (touches(section(lines, n)) for n in ("kvm-other", "kvm-mine", "kvm-plain"))
    s.result("touch_events", {"other": len(other), "mine": len(mine), "plain": len(plain)})
    s.expect(bool(section(lines, "kvm-other")), "kvm-other was seen")
    s.expect(len(other) == 0, f"a panel of output DP-9 is ignored when mapped to Virtual-1 ({len(other)} touch events)")
    check_stroke(s, "panel of Virtual-1", mine, (0.2, 0.2), (0.6, 0.6), 0.002)
    check_stroke(s, "panel without WL_OUTPUT", plain, (0.2, 0.2), (0.6, 0.6), 0.002)
    s.expect(any("touch ignored: mapped to output DP-9" in l for l in lines), "the ignored panel is logged with its output")
    # Calibration [-1 0 1; 0 1 0] then 180°: panel (x, y) → (1 - (1 - x), 1 - y) = (x, 1 - y).
    cal = touches(section(decode_log(s.wait_marker("calibrated", timeout=90)), "kvm-cal"))
    check_stroke(s, "calibrated + 180°", cal, (0.2, 0.7), (0.6, 0.7), 0.002)
    code = s.wait_marker("perm-exit", timeout=60)
    msg = s.wait_marker("perm", timeout=30)
    s.result("perm_exit", code)
    s.result("perm_message", msg[-400:])
    s.expect(code == "1", f"the source refuses to start without access (exit {code})")
    s.expect(re.search(r"cannot open input device /dev/input/event\d+: permission denied", msg) is not None, "error names the device node")
    s.expect("'input' group" in msg and "seat 'seat0'" in msg, "error names the input group and the seat")


# ---------------------------------------------------------------------------------------------
# kioskd level: the daemon on DRM with the paint and counter scenes; the host checks pixels
# ---------------------------------------------------------------------------------------------

BACKGROUND = (250, 250, 250)

# Strokes in normalised *panel* coordinates (the screendump is the panel's framebuffer, so ink
# must appear exactly under these paths whatever the rotation). Both stay clear of the paint
# toolbar (12 % of the short side along one edge: bottom at 0°, top of the panel at 90°).
STROKE_A = ((0.10, 0.30), (0.90, 0.30))
STROKE_B = ((0.50, 0.40), (0.50, 0.80))
STROKE_C = ((0.15, 0.45), (0.35, 0.75))        # unplugged after half of it
STROKE_TABLET = ((0.65, 0.45), (0.90, 0.75))   # QEMU usb-tablet via QMP

def ink(img, p, tol=40) -> bool:
    """The pixel at normalised p is not the canvas background (some stroke colour)."""
    c = img.pixel_at(*p)
    return max(abs(c[i] - BACKGROUND[i]) for i in range(3)) > tol


def along(stroke, n=9, t0=0.05, t1=0.95):
    (x0, y0), (x1, y1) = stroke
    return [(x0 + (x1 - x0) * t, y0 + (y1 - y0) * t) for t in (t0 + (t1 - t0) * i / (n - 1) for i in range(n))]


def check_ink(s: Session, img, name, stroke, t0=0.05, t1=0.95):
    pts = along(stroke, t0=t0, t1=t1)
    missing = [p for p in pts if not ink(img, p)]
    s.expect(not missing, f"{name}: ink under every point of the path (missing at {missing[:3]}, colours {[img.pixel_at(*p) for p in missing[:3]]})")
    return len(pts) - len(missing)


def check_blank(s: Session, img, name, points):
    inked = [p for p in points if ink(img, p)]
    s.expect(not inked, f"{name}: no ink away from the strokes (ink at {inked[:3]})")


def stroke_args(*strokes):
    return " ".join(f"--stroke {a[0]},{a[1]}:{b[0]},{b[1]}" for a, b in strokes)


def paint_scenario(rotation: int):

    def check(s: Session) -> None:
        s.wait_marker("started", timeout=90)
        blank = s.wait_screen(lambda i: i.pixel_at(0.5, 0.5) == BACKGROUND, timeout=30, label="blank",
                              what=f"the paint canvas ({BACKGROUND} at the centre)")
        s.expect(not ink(blank, (0.5, 0.3)), "canvas blank before drawing")
        s.result("screen", f"{blank.width}x{blank.height}")
        # The picture itself is turned: the toolbar runs along the viewer's bottom (0°: the
        # panel's bottom rows) or the viewer's left (90°: the panel's top rows).
        def strip(y):
            pts = [(0.02 + 0.96 * i / 47, y) for i in range(48)]
            return sum(ink(blank, p, tol=8) for p in pts) / len(pts)
        top, bottom = strip(0.03), strip(0.97)
        s.result("toolbar_strips", {"top": round(top, 2), "bottom": round(bottom, 2)})
        bar, other = (bottom, top) if rotation == 0 else (top, bottom)
        s.expect(bar > 0.5 and other < 0.05, f"toolbar along the {'bottom' if rotation == 0 else 'top'} of the panel (top {top:.2f}, bottom {bottom:.2f})")
        s.answer("go")
        s.expect(s.wait_marker("drawn", timeout=90) == "0", "kiosk-vmtool drew two strokes")
        img = s.wait_screen(lambda i: ink(i, (0.5, 0.3)) and ink(i, (0.5, 0.78)), timeout=20, label="two-strokes",
                            what="ink of both fingers' strokes")
        s.result("stroke_a_points", check_ink(s, img, "stroke A (finger 0)", STROKE_A))
        s.result("stroke_b_points", check_ink(s, img, "stroke B (finger 1)", STROKE_B))
        check_blank(s, img, "after two strokes", [(0.3, 0.6), (0.7, 0.6), (0.3, 0.2), (0.8, 0.5)])
        if rotation == 0:
            # QEMU's usb-tablet (absolute pointer) draws one more stroke through QMP.
            # Each step waits until its ink is on screen (QEMU's HID queue would merge a motion
            # into a button change the guest has not read yet); the press carries its position.
            (x0, y0), (x1, y1) = STROKE_TABLET
            s.send_abs(x0, y0, button=True)
            s.wait_screen(lambda img: ink(img, (x0, y0)), timeout=20, label="tablet-down",
                          what=f"usb-tablet press: the stroke's first dot at {(x0, y0)}")
            for i in range(1, 11):
                p = (x0 + (x1 - x0) * i / 10, y0 + (y1 - y0) * i / 10)
                s.send_abs(*p)
                s.wait_screen(lambda img, p=p: ink(img, p), timeout=20, label="tablet-step",
                              what=f"usb-tablet stroke: ink at step {i} of 10 {p}")
            s.send_abs(x1, y1, button=False)
            img = s.wait_screen(lambda i: ink(i, along(STROKE_TABLET)[-1]), timeout=20, label="tablet",
                                what="ink at the end of the usb-tablet stroke")
            s.result("tablet_points", check_ink(s, img, "usb-tablet stroke", STROKE_TABLET))
        s.answer("go")
        s.expect(s.wait_marker("unplugged", timeout=90) == "0", "kiosk-vmtool unplugged mid-stroke")
        s.result("removed", s.wait_marker("removed", timeout=30))
        img = s.wait_screen(lambda i: ink(i, along(STROKE_C, t0=0.05, t1=0.45)[-1]), timeout=20, label="unplugged",
                            what="ink up to the point where the touchscreen was unplugged")
        # 10 of 20 steps were drawn before the unplug: the first half stays (a cancelled stroke is kept).
        s.result("unplug_points", check_ink(s, img, "stroke cut by unplug", STROKE_C, t0=0.05, t1=0.45))
        s.expect(not ink(img, along(STROKE_C)[-1]), "nothing drawn past the unplug point")
        check_ink(s, img, "stroke A still there", STROKE_A)
        s.answer("go")
        s.expect(s.wait_marker("alive", timeout=30) == "yes", "kioskd still running after the unplug")
        code = s.wait_marker("exit", timeout=30)
        s.expect(code == "0", f"kioskd stopped cleanly on SIGTERM (status {code})")
        log = decode_log(s.wait_marker("log", timeout=30))
        s.result("kioskd_input_log", [l[-120:] for l in log if "input" in l][:8])

    env = {"ROTATION": str(rotation), "STROKES_AB": stroke_args(STROKE_A, STROKE_B), "STROKE_C": stroke_args(STROKE_C)}
    return env, check


_e0, _c0 = paint_scenario(0)
scenario("input-kioskd-paint", display="VGA", timeout=300, qemu_args=["-device", "qemu-xhci", "-device", "usb-tablet"],
         guest="input-kioskd-paint.sh", env=_e0, description="kioskd paint on DRM: two uinput fingers at once, QEMU usb-tablet, unplug mid-stroke keeps the stroke")(_c0)
_e90, _c90 = paint_scenario(90)
scenario("input-kioskd-paint-rot90", display="VGA", timeout=300, guest="input-kioskd-paint.sh", env=_e90,
         description="kioskd paint on DRM turned 90°: ink lands under each finger on the panel")(_c90)


def changed_columns(a, b):
    """The leftmost and rightmost x (fractions) where two images differ, or None."""
    xs = [x for y in range(0, a.height, 4) for x in range(0, a.width, 2) if a.pixel(x, y) != b.pixel(x, y)]
    return (min(xs) / a.width, max(xs) / a.width) if xs else None


@scenario("input-kioskd-counter-keys", display="VGA", timeout=300, guest="input-kioskd-counter-keys.sh")
def input_kioskd_counter_keys(s: Session) -> None:
    """kioskd counter on DRM: uinput keys make 0003, a tap 0004, a swipe down 0003, a long press 0000 — each pixel-identical to the same value drawn another way (kioskctl set from a different value, the start screen)."""
    s.wait_marker("started", timeout=90)
    zero = s.settled("zero", "the counter's first frame (0000)")
    s.expect(zero.count((0, 0, 0), tolerance=30) > 1000, "digits drawn (dark pixels on screen)")
    s.answer("go")
    s.expect(s.wait_marker("pressed", timeout=90) == "0", "kiosk-vmtool pressed the keys")
    keyed = s.settled("keys", "a new frame after the key presses", differs_from=zero)
    cols = changed_columns(zero, keyed)
    s.result("keys_changed_x", cols and [round(cols[0], 3), round(cols[1], 3)])
    # Only the last of the four digits changes (0000 → 0003).
    s.expect(cols is not None and cols[0] > 0.74, f"only the rightmost digit changed (columns {cols})")
    s.answer("go")
    s.expect(s.wait_marker("set0", timeout=60) == "0", "kioskctl counter set 0")
    again = s.settled("set0", "a new frame after 'set 0'", differs_from=keyed)
    s.expect(again.differs(zero) == 0, f"set 0 shows the start screen again ({again.differs(zero)} pixels differ)")
    s.answer("go")
    s.expect(s.wait_marker("set3", timeout=60) == "0", "kioskctl counter set 3")
    # 0003 drawn by 'set 3' from 0000, independently of the keys' 0003.
    three = s.settled("set3", "a new frame after 'set 3'", differs_from=again)
    d = three.differs(keyed)
    s.result("pixels_keys_vs_set3", d)
    s.expect(d == 0, f"three key increments and a decrement+increment show exactly what 'set 3' shows ({d} pixels differ)")
    s.answer("go")
    s.expect(s.wait_marker("tapped", timeout=90) == "0", "kiosk-vmtool tapped")
    tapped = s.settled("tapped", "a new frame after the tap", differs_from=three)
    s.answer("go")
    # The oracle for the tap's 0004: 0005 set by kioskctl, then 0004 set from there (a redraw of
    # every changed digit, not the tap's frame left standing).
    s.expect(s.wait_marker("set5", timeout=60) == "0", "kioskctl counter set 5")
    five = s.settled("set5", "a new frame after 'set 5'", differs_from=tapped)
    s.answer("go")
    s.expect(s.wait_marker("set4", timeout=60) == "0", "kioskctl counter set 4")
    four = s.settled("set4", "a new frame after 'set 4' (from 0005)", differs_from=five)
    d4 = four.differs(tapped)
    s.result("pixels_tap_vs_set4", d4)
    s.expect(d4 == 0, f"the tap shows exactly what 'set 4' from 0005 shows ({d4} pixels differ)")
    s.answer("go")
    s.expect(s.wait_marker("swiped", timeout=90) == "0", "kiosk-vmtool swiped down")
    swiped = s.settled("swiped", "a new frame after the swipe", differs_from=four)
    ds = swiped.differs(three)
    s.result("pixels_swipe_vs_set3", ds)
    s.expect(ds == 0, f"a swipe down from 0004 shows exactly 0003 ({ds} pixels differ)")
    s.answer("go")
    s.expect(s.wait_marker("held", timeout=90) == "0", "kiosk-vmtool held a finger")
    held = s.settled("held", "a new frame after the long press", differs_from=swiped)
    dh = held.differs(zero)
    s.result("pixels_longpress_vs_zero", dh)
    s.expect(dh == 0, f"a long press resets to 0000 ({dh} pixels differ)")
    s.answer("go")
    s.expect(s.wait_marker("alive", timeout=30) == "yes", "kioskd running")
    code = s.wait_marker("exit", timeout=30)
    s.expect(code == "0", f"kioskd stopped cleanly (status {code})")
    log = decode_log(s.wait_marker("log", timeout=30))
    s.result("log_tail", [l[-140:] for l in log if "input" in l or "error" in l.lower()][:10])
