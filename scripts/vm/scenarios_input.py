"""Input on a real kernel: uinput touchscreens and keyboards, QEMU's usb-tablet, through libinput + udev.

Two layers:
- `input-libinput-*`: kiosk-vmtool's `input-events` runs kioskd's LibInputSource and prints every
  InputEvent; the host checks slots, positions (normalised, rotated), cancels and keys exactly.
- `input-kioskd-*`: kioskd itself on DRM (paint and counter scenes); the host checks the screendump.
"""

import base64
import gzip
import re
import time

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
# libinput level: kioskd's LibInputSource, events printed by kiosk-vmtool input-events
# ---------------------------------------------------------------------------------------------

LISTEN = r'''
listen() {  # listen LOG [ARGS…]: start the event printer, wait until libinput is ready
  local log=$1; shift
  "$KIOSK_VMTOOL" input-events --duration-ms 120000 "$@" > "$log" 2>&1 &
  LISTENER=$!
  for i in $(seq 200); do grep -q "input ready" "$log" && return 0; sleep 0.1; done
  mark listener-failed "$(tail -c 300 "$log" | tr '\n@' ' _')"; return 1
}
wait_line() {  # wait_line LOG TEXT: bounded wait for a line in the log
  for i in $(seq 100); do grep -q "$2" "$1" && return 0; sleep 0.1; done; return 1
}
'''


@scenario("input-libinput-touch", display="none", timeout=240, guest=LISTEN + r'''
EV=/tmp/ev0.log
listen $EV
# Two fingers at once on a tidy panel: a horizontal stroke and a vertical one.
"$KIOSK_VMTOOL" touch --name kvm-ideal --wait-log $EV --wait-text "device-added kvm-ideal" \
  --stroke 0.1,0.2:0.9,0.2 --stroke 0.2,0.9:0.2,0.3 --steps 8 --step-ms 20 > /tmp/t.log 2>&1
mark ideal "$?"
wait_line $EV "device-removed kvm-ideal"
# A real-world-like panel: 0-799 x 0-479, resolution 0, ABS_MT_TOOL_TYPE.
"$KIOSK_VMTOOL" touch --panel odd --name kvm-odd --wait-log $EV --wait-text "device-added kvm-odd" \
  --stroke 0.25,0.5:0.75,0.5 --steps 4 >> /tmp/t.log 2>&1
mark odd "$?"
wait_line $EV "device-removed kvm-odd"
# Unplugged mid-stroke: both fingers must end cancelled, the listener must keep running.
"$KIOSK_VMTOOL" touch --name kvm-unplug --wait-log $EV --wait-text "device-added kvm-unplug" \
  --stroke 0.3,0.3:0.7,0.7 --stroke 0.7,0.3:0.3,0.7 --steps 10 --unplug-after 4 >> /tmp/t.log 2>&1
mark unplug "$?"
wait_line $EV "device-removed kvm-unplug"
# Keys after the unplug: the source still works.
"$KIOSK_VMTOOL" keys --name kvm-keys --wait-log $EV --wait-text "device-added kvm-keys" KEY_UP*2 KEY_KP_PLUS >> /tmp/t.log 2>&1
mark keys "$?"
wait_line $EV "device-removed kvm-keys"
kill -0 $LISTENER && mark alive yes || mark alive no
kill $LISTENER; wait $LISTENER
mark events "$(gzip -c $EV | base64 -w0)"
# Rotation 90: the same tidy stroke, seen by a listener told the display is turned.
EV2=/tmp/ev90.log
listen $EV2 --rotation 90
"$KIOSK_VMTOOL" touch --name kvm-rot --wait-log $EV2 --wait-text "device-added kvm-rot" \
  --stroke 0.1,0.2:0.9,0.2 --stroke 0.2,0.9:0.2,0.3 --steps 8 >> /tmp/t.log 2>&1
mark rot "$?"
wait_line $EV2 "device-removed kvm-rot"
kill $LISTENER; wait $LISTENER
mark events90 "$(gzip -c $EV2 | base64 -w0)"
mark tool "$(gzip -c /tmp/t.log | base64 -w0)"
''')
def input_libinput_touch(s: Session) -> None:
    """uinput touchscreens through LibInputSource: two simultaneous fingers, odd ranges, unplug mid-stroke, keys, rotation 90."""
    for m in ("ideal", "odd", "unplug", "keys"):
        s.expect(s.wait_marker(m, timeout=90) == "0", f"kiosk-vmtool {m} exited 0")
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

    # c) unplug: each finger ends cancelled at its last position (4 of 10 steps along).
    sec = section(lines, "kvm-unplug")
    slots = by_slot(touches(sec))
    s.expect(len(slots) == 2, f"kvm-unplug: two slots (saw {sorted(slots)})")
    if len(slots) == 2:
        a, b = sorted(slots)
        check_stroke(s, "unplug finger 0", slots[a], (0.3, 0.3), (0.46, 0.46), 0.002, last_phase="cancel")
        check_stroke(s, "unplug finger 1", slots[b], (0.7, 0.3), (0.54, 0.46), 0.002, last_phase="cancel")
    s.expect(bool(sec) and sec[-1].startswith("vmtool: event device-removed kvm-unplug"), "device-removed after the cancels")

    # d) keys.
    keys = [l.split("event ", 1)[1] for l in section(lines, "kvm-keys") if l.startswith("vmtool: event key ")]
    want = ["key KEY_UP pressed", "key KEY_UP released"] * 2 + ["key KEY_KPPLUS pressed", "key KEY_KPPLUS released"]
    s.expect(keys == want, f"keys in order {want} (saw {keys})")

    # e) rotation 90: logical = rot90(physical).
    slots = by_slot(touches(section(lines90, "kvm-rot")))
    s.expect(len(slots) == 2, f"kvm-rot: two slots (saw {sorted(slots)})")
    if len(slots) == 2:
        a, b = sorted(slots)
        check_stroke(s, "rot90 finger 0", slots[a], rot90((0.1, 0.2)), rot90((0.9, 0.2)), 0.002)
        check_stroke(s, "rot90 finger 1", slots[b], rot90((0.2, 0.9)), rot90((0.2, 0.3)), 0.002)
        s.result("rot90_finger0", [slots[a][0][2:], slots[a][-1][2:]])


@scenario("input-libinput-usb-tablet", display="none", timeout=180,
          qemu_args=["-device", "qemu-xhci", "-device", "usb-tablet"], guest=LISTEN + r'''
EV=/tmp/ev.log
listen $EV
wait_line $EV "device-added QEMU QEMU USB Tablet" || true
mark ready "$(grep device-added $EV | tr '\n@' '; ')"
wait_host 60
wait_line $EV "touch up" || true
sleep 0.5
kill $LISTENER; wait $LISTENER
mark events "$(gzip -c $EV | base64 -w0)"
''')
def input_libinput_usb_tablet(s: Session) -> None:
    """QEMU usb-tablet driven by QMP input-send-event acts as one finger (slot device*1000+100)."""
    added = s.wait_marker("ready", timeout=90)
    s.result("devices", added)
    s.expect("USB Tablet" in added, f"usb-tablet seen by libinput ({added})")
    # QEMU's HID queue merges motion into a queued button change the guest has not read yet,
    # so give the guest time to poll between steps (otherwise the press lands further along).
    s.send_abs(0.2, 0.3)
    time.sleep(0.3)
    s.send_abs(0.2, 0.3, button=True)
    time.sleep(0.3)
    for i in range(1, 6):
        s.send_abs(0.2 + 0.1 * i, 0.3 + 0.05 * i)
        time.sleep(0.1)
    time.sleep(0.3)
    s.send_abs(0.7, 0.55, button=False)
    s.answer("go")
    lines = decode_log(s.wait_marker("events", timeout=60))
    slots = by_slot(touches(lines))
    s.expect(len(slots) == 1, f"one finger (saw {sorted(slots)})")
    if len(slots) == 1:
        (slot, ev), = slots.items()
        s.result("slot", slot)
        s.expect(slot % 1000 == 100, f"pointer finger slot is device*1000+100 (saw {slot})")
        # QEMU scales 0…0x7fff onto the tablet's 0…32767 range.
        check_stroke(s, "tablet finger", ev, (0.2, 0.3), (0.7, 0.55), 0.002)
