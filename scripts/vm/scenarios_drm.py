"""DRM/KMS scenarios: the display code (through `kiosk-vmtool drm`, and the real kioskd) on bochs-drm
(-device VGA) and virtio-gpu, atomic and legacy; pixels checked from QMP screendumps."""

from vmharness import scenario, Session, close_rgb

RED, GREEN, BLUE, WHITE, BLACK = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0)

# Guest helpers: start the probe as a coprocess and talk to it one line at a time.
PROBE = r"""
probe_start() {
  coproc PROBE { exec "$KIOSK_VMTOOL" drm "$@" 2>/tmp/probe.log; }
  PROBE_KEEP_PID=$PROBE_PID
}
# cmd NAME ARGS…: sends a command, marks its reply as marker NAME (first word of the command).
cmd() {
  local name="$1"; shift
  echo "$*" >&"${PROBE[1]}"
  local reply=""
  if ! IFS= read -r -t 90 reply <&"${PROBE[0]}"; then reply="error no reply from probe"; fi
  mark "$name" "$reply"
}
probe_log() { sed 's/@@//g' /tmp/probe.log | tail -n "${1:-40}" > /dev/console; }
probe_term() {
  local pid=$PROBE_KEEP_PID
  kill -TERM "$pid" 2>/dev/null
  local i=0; while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  wait "$pid" 2>/dev/null; mark probe-exit "$?"
}
"""


def kv(reply: str) -> dict:
    """'ok a=1 b=x' → {'a': '1', 'b': 'x'}; raises on 'error …'."""
    if not reply.startswith("ok"):
        raise AssertionError(f"probe replied: {reply}")
    out = {}
    for w in reply.split()[1:]:
        if "=" in w:
            k, v = w.split("=", 1)
            out[k] = v
    return out


def check_quadrants(s: Session, img, expected: dict, what: str) -> None:
    """expected: {(fx, fy): rgb} at fractions of the screendump."""
    for (fx, fy), rgb in expected.items():
        got = img.pixel_at(fx, fy)
        s.expect(close_rgb(got, rgb), f"{what}: pixel at ({fx},{fy}) is {got}, expected {rgb}")


def basic_guest(api: str, buffers: int, extras: bool) -> str:
    extra = r"""
mark list "$("$KIOSK_VMTOOL" drm --list 2>&1 | tr '\n' '|' | sed 's/@@//g')"
mark eacces "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$KIOSK_VMTOOL" drm 2>/dev/null | head -n 1)"
mark badoutput "$("$KIOSK_VMTOOL" drm --output HDMI-A-9 2>/dev/null | head -n 1)"
mark badmode "$("$KIOSK_VMTOOL" drm --mode 1234x567@89 2>/dev/null | head -n 1)"
""" if extras else ""
    return PROBE + extra + f"""
probe_start --api {api} --buffers {buffers}
cmd status status
wait_host 60
cmd fill fill ff0000
wait_host 60
cmd pattern pattern
wait_host 60
cmd rect1 rect 100 100 50 50 00ffff
cmd rect2 rect 300 100 50 50 ffff00
cmd rect3 rect 500 100 50 50 ff00ff
wait_host 60
cmd flips flips 30
cmd blank blank 1
wait_host 60
cmd unblank blank 0
wait_host 60
probe_term
wait_host 60
probe_log 15
"""


def extras_check(s: Session) -> None:
    """--list output, and the errors for no permission, an unknown output and an unknown mode."""
    lst = s.wait_marker("list", 60).split("|")
    s.result("list", lst[:4])
    s.expect(any(l.strip().startswith("Virtual-1 connected") and "[in use: CRTC" in l for l in lst),
             f"--list shows Virtual-1 connected and in use (by the console): {lst[:3]}")
    s.expect(any("*+ 1280x800@75" in l for l in lst), "--list marks the current, preferred mode 1280x800@75")
    e = s.wait_marker("eacces", 60)
    s.result("eacces", e)
    s.expect("/dev/dri/card0" in e and "permission denied" in e and "video" in e,
             f"no-permission error names the device and the video group: {e}")
    b = s.wait_marker("badoutput", 60)
    s.expect("HDMI-A-9" in b and "Virtual-1 (connected)" in b, f"unknown output lists what exists: {b}")
    m = s.wait_marker("badmode", 60)
    s.expect("1234x567@89" in m and "1280x800@75" in m, f"unknown mode lists the modes: {m}")


def basic_check(s: Session, buffers: int = 2, extras: bool = False) -> None:
    if extras:
        extras_check(s)
    st = kv(s.wait_marker("status", 60))
    s.result("logical", st.get("logical"))
    s.result("atomic", st.get("atomic"))
    console = s.screendump("console")
    s.answer()
    fill = kv(s.wait_marker("fill", 60))
    img = s.screendump("red")
    s.expect(img.count(RED) == img.width * img.height, f"whole screen red after fill ({img.count(RED)} of {img.width * img.height})")
    s.expect(fill.get("modesets") == "1", f"first frame by one mode set (modesets={fill.get('modesets')})")
    s.answer()
    kv(s.wait_marker("pattern", 60))
    img = s.screendump("pattern")
    check_quadrants(s, img, {(0.25, 0.25): RED, (0.75, 0.25): GREEN, (0.25, 0.75): BLUE, (0.75, 0.75): WHITE}, "pattern")
    s.answer()
    r1 = kv(s.wait_marker("rect1", 60))
    r2 = kv(s.wait_marker("rect2", 60))
    r3 = kv(s.wait_marker("rect3", 60))
    img = s.screendump("rects")
    s.expect(img.pixel(125, 125) == (0, 255, 255), f"rect1 cyan at (125,125): {img.pixel(125, 125)}")
    s.expect(img.pixel(325, 125) == (255, 255, 0), f"rect2 yellow at (325,125): {img.pixel(325, 125)}")
    s.expect(img.pixel(525, 125) == (255, 0, 255), f"rect3 magenta at (525,125): {img.pixel(525, 125)}")
    s.expect(img.pixel(99, 99) == RED and img.pixel(150, 150) == RED, "pixels around rect1 still red")
    s.expect(img.pixel_at(0.75, 0.75) == WHITE, "rest of the pattern unchanged")
    # Buffer age: each present copies what its buffer missed. Two buffers: rect1 lands in the
    # buffer that missed the pattern (full copy), then each rect copies itself + the previous one.
    # Three buffers: rect1 and rect2 land in buffers that missed full frames, rect3 copies rects 1–3.
    copied = [int(r1["copied"]), int(r2["copied"]), int(r3["copied"])]
    full = img.width * img.height
    expected = [full, 5000, 5000] if buffers == 2 else [full, full, 7500]
    s.result("copied", copied)
    s.expect(copied == expected, f"damage copied by buffer age with {buffers} buffers: {copied}, expected {expected}")
    flips_before = int(r3["flips"])
    s.answer()
    fl = kv(s.wait_marker("flips", 90))
    s.result("flip_events", int(fl["flipEvents"]))
    s.result("flips_ms", int(fl["ms"]))
    s.expect(int(fl["flipEvents"]) == 30, f"30 page-flip events for 30 presents (got {fl['flipEvents']})")
    s.expect(int(fl["flips"]) == flips_before + 30, "pageFlipCount advanced by 30")
    bl = kv(s.wait_marker("blank", 60))
    s.expect(bl.get("blanked") == "1", "blanked")
    img = s.screendump("blanked")
    s.result("blanked_centre", img.pixel_at(0.75, 0.75))
    s.expect(img.pixel_at(0.75, 0.75) != WHITE, f"blanked screen no longer shows the pattern ({img.pixel_at(0.75, 0.75)})")
    s.answer()
    ub = kv(s.wait_marker("unblank", 60))
    s.expect(ub.get("blanked") == "0", "unblanked")
    img = s.wait_screen(lambda i: i.pixel_at(0.75, 0.75) == WHITE, 10, "unblanked")
    s.expect(img.pixel_at(0.75, 0.75) == WHITE and img.pixel(125, 125) == (0, 255, 255), "unblank shows the last frame again")
    last = img
    s.answer()
    s.expect(s.wait_marker("probe-exit", 60) == "0", "probe exits 0 on SIGTERM")
    after = s.wait_screen(lambda i: i.differs(last) > 0, 10, "restored")
    diff = after.differs(last)
    s.result("restored_changed_pixels", diff)
    s.expect(diff > after.width * after.height // 2, f"SIGTERM gave the screen back (only {diff} pixels differ from the last frame)")
    s.expect(after.count(RED) < 1000, "restored screen is not the probe's picture")
    s.result("console_vs_restored_diff", after.differs(console))
    s.answer()


# bochs atomic also checks --list and the error messages; virtio legacy runs triple-buffered.
for _display, _tag, _api, _bufs, _extras in (("VGA", "bochs", "atomic", 2, True), ("VGA", "bochs", "legacy", 2, False),
                                             ("virtio-gpu-pci", "virtio", "atomic", 2, False),
                                             ("virtio-gpu-pci", "virtio", "legacy", 3, False)):
    def _check(s: Session, _b=_bufs, _e=_extras) -> None:
        basic_check(s, _b, _e)
    scenario(f"drm-basic-{_tag}-{_api}", display=_display, guest=basic_guest(_api, _bufs, _extras),
             description=f"{_tag} {_api} ({_bufs} buffers): first frame, pattern, buffer-age damage, 30 flips, blank, SIGTERM restore")(_check)


@scenario("drm-rotation", display="VGA", guest=PROBE + r"""
for rot in 90 180 270; do
  probe_start --rotation $rot
  cmd status$rot status
  cmd pattern$rot pattern
  wait_host 60
  probe_term
done
""")
def rotation(s: Session) -> None:
    """Rotation 90/180/270: logical size swapped for 90/270, the quadrant pattern turned clockwise on the panel."""
    # Where the logical quadrants (TL red, TR green, BL blue, BR white) land on the panel.
    expected = {
        90: {(0.75, 0.25): RED, (0.75, 0.75): GREEN, (0.25, 0.25): BLUE, (0.25, 0.75): WHITE},
        180: {(0.75, 0.75): RED, (0.25, 0.75): GREEN, (0.75, 0.25): BLUE, (0.25, 0.25): WHITE},
        270: {(0.25, 0.75): RED, (0.25, 0.25): GREEN, (0.75, 0.75): BLUE, (0.75, 0.25): WHITE},
    }
    for rot, quads in expected.items():
        st = kv(s.wait_marker(f"status{rot}", 60))
        s.result(f"logical{rot}", st["logical"])
        w, h = (int(x) for x in st["logical"].split("x"))
        s.expect((h > w) == (rot != 180), f"rotation {rot}: logical size {st['logical']}")
        kv(s.wait_marker(f"pattern{rot}", 60))
        img = s.screendump(f"rot{rot}")
        check_quadrants(s, img, quads, f"rotation {rot}")
        s.answer()
        s.expect(s.wait_marker("probe-exit", 60) == "0", f"probe exits 0 (rotation {rot})")


@scenario("drm-master-handover", display="VGA", guest=PROBE + r"""
probe_start
cmd fill fill ff0000
kill -USR1 $PROBE_KEEP_PID
sleep 0.5
mark second "$(printf 'fill 0000ff\nstatus\n' | (cat; sleep 3; echo quit) | "$KIOSK_VMTOOL" drm 2>/tmp/second.log | head -n 1)"
wait_host 60
kill -USR2 $PROBE_KEEP_PID
sleep 1
cmd status status
wait_host 60
probe_term
""")
def master_handover(s: Session) -> None:
    """Plain DRM-master hand-over (VT switch by signals): SIGUSR1 drops master so another process can
    show its frame; SIGUSR2 takes master back with a full mode set and repaint."""
    kv(s.wait_marker("fill", 60))
    img = s.screendump("first")
    s.expect(img.count(RED) == img.width * img.height, "first process shows red")
    second = s.wait_marker("second", 60)
    s.result("second", second[:120])
    s.expect(second.startswith("ok") and "modesets=1" in second, f"second process set its mode while the first had dropped master: {second}")
    s.answer()
    st = kv(s.wait_marker("status", 60))
    s.result("after", {k: st.get(k) for k in ("modesets", "redraw", "inactive")})
    s.expect(st.get("modesets") == "2" and st.get("redraw") == "1", f"first process set the mode again and repainted ({st})")
    img = s.wait_screen(lambda i: i.count(RED) == i.width * i.height, 10, "back")
    s.expect(img.count(RED) == img.width * img.height, f"red again after taking master back ({img.count(RED)} red pixels)")
    s.answer()
    s.expect(s.wait_marker("probe-exit", 60) == "0", "first process exits 0")


# QEMU 7.2 refuses device_del for virtio-gpu-pci ("does not support hotplugging"), so the
# unplug is done by the guest kernel: PCI remove of the GPU, then a bus rescan adds it back. The
# DRM device disappears (udev "remove") and comes back as a new card (udev "add").
@scenario("drm-hotplug-virtio", display="virtio-gpu-pci,max_outputs=2", timeout=240, guest=PROBE + r"""
gpu=$(readlink -f /sys/class/drm/card0/device)
mark gpu "$gpu"
mark noconn "$(printf 'status\nquit\n' | "$KIOSK_VMTOOL" drm --output Virtual-2 2>/dev/null | head -n 1)"
probe_start
cmd fill fill 00ff00
wait_host 90
echo 1 > "$gpu/remove"
cmd gone wait-inactive 60
wait_host 90
echo 1 > /sys/bus/pci/rescan
cmd back wait-active 60
cmd status status
wait_host 60
probe_term
probe_log 20
""")
def hotplug_virtio(s: Session) -> None:
    """virtio-gpu removed (PCI remove) and added back (rescan): followed, repainted, no crash."""
    s.result("gpu", s.wait_marker("gpu", 30))
    nc = kv(s.wait_marker("noconn", 60))
    s.result("disconnected_output", nc.get("logical"))
    s.expect(nc.get("logical") == "none" and nc.get("canPresent") == "0",
             f"a disconnected output (Virtual-2) starts inactive without an error ({nc})")
    fill = kv(s.wait_marker("fill", 60))
    img = s.screendump("green")
    s.expect(img.count(GREEN) == img.width * img.height, "first frame green on virtio-gpu")
    s.answer()
    gone = kv(s.wait_marker("gone", 90))
    s.expect(gone.get("logical") == "none" and gone.get("inactive") == "1", f"display went inactive after unplug ({gone})")
    s.answer()
    back = kv(s.wait_marker("back", 90))
    st = kv(s.wait_marker("status", 60))
    s.result("after", {k: st.get(k) for k in ("logical", "modesets", "redraw", "inactive", "ready")})
    s.expect(back.get("logical") not in (None, "none"), f"display active again after replug ({back})")
    s.expect(int(st.get("redraw", "0")) >= 1, "needsFullRedraw announced after replug")
    s.expect(int(st.get("modesets", "0")) == 2, f"a second mode set after replug (modesets={st.get('modesets')})")
    img = s.wait_screen(lambda i: i.count(GREEN) == i.width * i.height, 15, "green-again")
    s.expect(img.count(GREEN) == img.width * img.height, f"frame repainted on the new device ({img.count(GREEN)} green pixels)")
    s.answer()
    s.expect(s.wait_marker("probe-exit", 60) == "0", "probe still alive and exits 0 after hotplug")


# ---------------------------------------------------------------------------------------------
# The real kioskd on DRM
# ---------------------------------------------------------------------------------------------

RTC_BASE = "2026-03-14T13:35:16"

KIOSKD = r"""
KIOSKCTL="$(dirname "$KIOSKD")/kioskctl"
# kioskd_start CONFIG-BODY: writes /tmp/k.toml (state and socket in /tmp) and starts kioskd in UTC.
kioskd_start() {
  mkdir -p /tmp/kstate
  { echo 'state_dir = "/tmp/kstate"'; echo "$1"; printf '[control]\nsocket = "/tmp/k.sock"\n'; } > /tmp/k.toml
  TZ=UTC "$KIOSKD" --config /tmp/k.toml --log-level debug > /tmp/kioskd.log 2>&1 &
  KPID=$!
  local i=0
  while ! grep -q "first frame on screen" /tmp/kioskd.log && [ $i -lt 600 ] && kill -0 $KPID 2>/dev/null; do sleep 0.1; i=$((i+1)); done
  if grep -q "first frame on screen" /tmp/kioskd.log; then mark kioskd-up "$EPOCHREALTIME"; return 0; fi
  kioskd_log 40; mark kioskd-up "failed"; kill -9 $KPID 2>/dev/null; exit 1
}
kioskd_log() { sed 's/@@//g' /tmp/kioskd.log | tail -n "${1:-40}" > /dev/console; }
kioskd_status() { mark "$1" "$("$KIOSKCTL" status --socket /tmp/k.sock --json 2>&1 | tr '\n' ' ' | sed 's/@@//g')"; }
kioskd_term() {
  kill -TERM $KPID; local i=0
  while kill -0 $KPID 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  wait $KPID; mark kioskd-exit "$?"
}
"""


def clock_rgb(t: float) -> tuple[int, int, int]:
    """The scaled clock formula for UTC time t (whole second)."""
    import time as _t
    tm = _t.gmtime(int(t))

    def sc(v, m):
        return int(v * 255 / m + 0.5)
    return sc(tm.tm_hour, 24), sc(tm.tm_min, 60), sc(tm.tm_sec, 60)


def clock_matches(s: Session, img, t1: float, t2: float, at=(0.03, 0.03)) -> tuple[bool, int]:
    """Whether the background equals the formula for a second in [t1, t2] (±1 s); returns the offset."""
    got = img.pixel_at(*at)
    for sec in range(int(t1) - 1, int(t2) + 2):
        if got == clock_rgb(sec):
            return True, sec - int(t1)
    return False, 0


CLOCK_GUEST = KIOSKD + r"""
kioskd_start "$(printf '[display]\nbackend = "drm"\nrotation = %s\n[scenes]\norder = ["clock"]\n[scene.clock]\nkind = "clock"\ncolor_mode = "scaled"\n' "$ROT")"
mark shot1 "$EPOCHREALTIME"
wait_host 60
mark shot1-done "$EPOCHREALTIME"
sleep 1.2
mark shot2 "$EPOCHREALTIME"
wait_host 60
mark shot2-done "$EPOCHREALTIME"
kioskd_status status
kioskd_term
wait_host 60
kioskd_log 12
"""


def clock_check(s: Session) -> None:
    up = s.wait_marker("kioskd-up", 90)
    s.expect(up != "failed", "kioskd showed its first frame")
    if up == "failed":
        return
    t1 = float(s.wait_marker("shot1", 30))
    img1 = s.screendump("clock1")
    s.answer()
    t1b = float(s.wait_marker("shot1-done", 30))
    ok, off = clock_matches(s, img1, t1, t1b)
    s.result("clock_rgb", img1.pixel_at(0.03, 0.03))
    s.result("expected_rgb_at_t1", clock_rgb(t1))
    s.result("guest_time", t1)
    s.result("second_offset", off)
    s.expect(ok, f"clock background {img1.pixel_at(0.03, 0.03)} matches the formula for {t1:.1f}..{t1b:.1f} "
                 f"(expected about {clock_rgb(t1)})")
    import time as _t
    tm = _t.gmtime(int(t1))
    s.expect(tm.tm_year == 2026 and tm.tm_mon == 3 and tm.tm_mday == 14, f"guest clock follows -rtc base (guest time {t1})")
    t2 = float(s.wait_marker("shot2", 30))
    img2 = s.screendump("clock2")
    s.answer()
    t2b = float(s.wait_marker("shot2-done", 30))
    ok2, _ = clock_matches(s, img2, t2, t2b)
    s.expect(ok2, f"second screendump matches the formula too ({img2.pixel_at(0.03, 0.03)} vs {clock_rgb(t2)})")
    s.expect(img2.pixel_at(0.03, 0.03) != img1.pixel_at(0.03, 0.03), "the screen changed after a tick")
    st = s.wait_marker("status", 30)
    s.result("status", st[:300])
    import json as _j
    try:
        stj = _j.loads(st)
        s.result("frames", stj.get("frames"))
        # Frames after the first go out by page flip: each waits for the previous flip's event.
        s.expect((stj.get("frames") or 0) >= 3, f"several frames presented (flip events arrived): {stj.get('frames')}")
    except ValueError:
        s.expect(False, f"kioskctl status --json is JSON: {st[:200]}")
    last = img2
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")
    after = s.wait_screen(lambda i: i.differs(last) > last.width * last.height // 2, 10, "restored")
    s.result("restored_changed_pixels", after.differs(last))
    s.expect(after.differs(last) > last.width * last.height // 2, "SIGTERM restored the console framebuffer")
    s.answer()


scenario("kioskd-clock-bochs", display="VGA", qemu_args=["-rtc", f"base={RTC_BASE}"],
         guest="ROT=0\n" + CLOCK_GUEST,
         description="real kioskd: clock background at the RTC time matches the scaled formula, ticks, SIGTERM restores")(clock_check)


CYAN, MAGENTA, YELLOW = (0, 255, 255), (255, 0, 255), (255, 255, 0)

COUNTER = """[scenes]
order = ["counter"]
[scene.counter]
kind = "counter"
shading = false"""

COUNTER_GUEST = KIOSKD + r"""
kioskd_start "$(printf '[display]\nbackend = "drm"\nrotation = 0\n')
$COUNTER"
mark counter-shown
wait_host 60
kioskd_status status
kioskd_term
kioskd_start "$(printf '[display]\nbackend = "drm"\nrotation = 90\n')
$COUNTER"
mark counter90-shown
wait_host 60
kioskd_term
kioskd_log 10
"""


@scenario("kioskd-counter-bochs", display="VGA", timeout=240, guest=f"COUNTER='{COUNTER}'\n" + COUNTER_GUEST,
          description="real kioskd: counter first frame in the default theme, and rotated 90")
def counter_check(s: Session) -> None:
    """Counter first frame (default theme: white background, cyan windows); rotation 90 turns the layout."""
    s.wait_marker("kioskd-up", 90)
    s.wait_marker("counter-shown", 30)
    img = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 10, "counter")
    n = img.count(CYAN)
    s.result("counter_cyan_pixels", n)
    s.expect(img.pixel_at(0.01, 0.01) == WHITE, f"counter background white (default theme), saw {img.pixel_at(0.01, 0.01)}")
    s.expect(n > img.width * img.height // 50, f"counter windows in the theme's primary colour cyan ({n} pixels)")
    bb = img.bbox(CYAN)
    s.result("counter_bbox", bb)
    s.answer()
    st = s.wait_marker("status", 30)
    s.expect('"scene":"counter"' in st.replace(" ", ""), f"status names the counter scene: {st[:160]}")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0")
    s.wait_marker("kioskd-up", 90)
    s.wait_marker("counter90-shown", 30)
    img = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 10, "counter90")
    bb90 = img.bbox(CYAN)
    s.result("counter90_bbox", bb90)
    s.expect(img.pixel_at(0.01, 0.01) == WHITE, "rotated counter background white")
    if bb and bb90:
        w0, h0 = bb[2] - bb[0], bb[3] - bb[1]
        w9, h9 = bb90[2] - bb90[0], bb90[3] - bb90[1]
        s.expect((w0 > h0) != (w9 > h9), f"rotation 90 turns the counter windows (r0 {w0}x{h0}, r90 {w9}x{h9})")
    else:
        s.expect(False, "cyan windows found in both frames")
    s.answer()
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 (rotated)")


# Connector hotplug without a device change: the kernel's per-connector sysfs "status" file forces
# the connector off / back to detection (GETCONNECTOR then reports it so); virtio-gpu does not
# poll connectors, so the card's udev "change" event a cable pull sends is raised with udevadm.
@scenario("kioskd-connector-hotplug-virtio", display="virtio-gpu-pci", timeout=240,
          guest=f"COUNTER='{COUNTER}'\n" + KIOSKD + r"""
conn=$(ls -d /sys/class/drm/card0-Virtual-1)
kioskd_start "$(printf '[display]\nbackend = "drm"\n')
$COUNTER"
mark shown
wait_host 60
echo off > "$conn/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
sleep 2
mark alive-off "$(kill -0 $KPID 2>/dev/null && echo yes || echo no)"
kioskd_status status-off
echo detect > "$conn/status"
udevadm trigger --action=change --subsystem-match=drm --sysname-match=card0
sleep 2
mark alive-on "$(kill -0 $KPID 2>/dev/null && echo yes || echo no)"
kioskd_status status-on
wait_host 60
kioskd_term
kioskd_log 12
""")
def connector_hotplug(s: Session) -> None:
    """Real kioskd on virtio-gpu: connector forced off then re-detected; kioskd keeps running, goes
    inactive, then sets the mode again and repaints the counter."""
    s.wait_marker("kioskd-up", 90)
    s.wait_marker("shown", 30)
    img = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 10, "before")
    before = img.count(CYAN)
    s.expect(before > img.width * img.height // 50, f"counter shown on virtio-gpu ({before} cyan pixels)")
    s.answer()
    s.expect(s.wait_marker("alive-off", 30) == "yes", "kioskd still running with the connector off")
    off = s.wait_marker("status-off", 30).replace(" ", "")
    s.result("status_off_mode", "none" if '"mode":"none"' in off else off[:120])
    s.expect('"mode":"none"' in off, f"status shows no mode while disconnected: {off[:200]}")
    s.expect(s.wait_marker("alive-on", 30) == "yes", "kioskd still running after re-detect")
    on = s.wait_marker("status-on", 30).replace(" ", "")
    s.expect('"mode":"1280x800"' in on, f"status shows the mode again: {on[:200]}")
    img = s.wait_screen(lambda i: i.count(CYAN) == before, 10, "after")
    s.result("cyan_before_after", [before, img.count(CYAN)])
    s.expect(img.count(CYAN) == before and img.pixel_at(0.01, 0.01) == WHITE, "counter repainted after the connector came back")
    s.answer()
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0")
