"""DRM/KMS scenarios: the display code (through `kiosk-vmtool drm`, and the real kioskd) on bochs-drm
(-device VGA) and virtio-gpu, atomic and legacy; pixels checked from QMP screendumps."""

import calendar
import json
import time
from typing import Optional

from vmharness import (BOCHS_CONSOLE_LOST, Session, black_frame_problem, clock_rgb, clock_second, close_rgb,
                       console_restored_problem, scenario)

RED, GREEN, BLUE, WHITE, BLACK = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0)



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


def basic_check(s: Session, api: str, buffers: int = 2, extras: bool = False, virtio: bool = False) -> None:
    console = s.console_before()
    if extras:
        extras_check(s)
    st = kv(s.wait_marker("status", 60))
    s.result("logical", st.get("logical"))
    s.result("atomic", st.get("atomic"))
    s.expect(st.get("logical") == "1280x800", f"the preferred mode 1280x800 is the logical size ({st.get('logical')})")
    s.expect(st.get("atomic") == ("1" if api == "atomic" else "0"), f"the {api} API is in use (atomic={st.get('atomic')})")
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
    fl_img = s.screendump("flipped")
    s.answer()
    bl = kv(s.wait_marker("blank", 60))
    s.expect(bl.get("blanked") == "1", "blanked")
    img = s.screendump("blanked")
    s.result("blanked_lit_pixels", img.lit())
    problem = black_frame_problem(img, qemu_placeholder=virtio)
    s.expect(problem is None, f"blanked: the whole screen is black{' (or QEMU’s placeholder line)' if virtio else ''} ({problem})")
    s.answer()
    ub = kv(s.wait_marker("unblank", 60))
    s.expect(ub.get("blanked") == "0", "unblanked")
    img = s.wait_screen(lambda i: i.pixel_at(0.75, 0.75) == WHITE, 10, "unblanked", what="unblank shows the pattern again")
    s.expect(img.differs(fl_img) == 0, f"unblank shows the last frame again ({img.differs(fl_img)} pixels differ)")
    s.answer()
    s.expect(s.wait_marker("probe-exit", 60) == "0", "probe exits 0 on SIGTERM")
    s.expect_console_back(console, "restored", "SIGTERM gives the text console back as it was",
                          black_known="" if virtio else BOCHS_CONSOLE_LOST)
    s.answer()


# bochs atomic also checks --list and the error messages; virtio legacy runs triple-buffered.
for _display, _tag, _api, _bufs, _extras in (("VGA", "bochs", "atomic", 2, True), ("VGA", "bochs", "legacy", 2, False),
                                             ("virtio-gpu-pci", "virtio", "atomic", 2, False),
                                             ("virtio-gpu-pci", "virtio", "legacy", 3, False)):
    def _check(s: Session, _a=_api, _b=_bufs, _e=_extras, _v=_tag == "virtio") -> None:
        basic_check(s, _a, _b, _e, _v)
    scenario(f"drm-basic-{_tag}-{_api}", display=_display, guest="drm-basic.sh",
             env={"API": _api, "BUFFERS": str(_bufs), "EXTRAS": "1" if _extras else "0"},
             description=f"{_tag} {_api} ({_bufs} buffers): first frame, pattern, buffer-age damage, 30 flips, blank, SIGTERM restore")(_check)


@scenario("drm-rotation", display="VGA", guest="drm-rotation.sh")
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
        want = "1280x800" if rot == 180 else "800x1280"
        s.expect(st["logical"] == want, f"rotation {rot}: logical size {st['logical']}, expected {want}")
        kv(s.wait_marker(f"pattern{rot}", 60))
        img = s.screendump(f"rot{rot}")
        check_quadrants(s, img, quads, f"rotation {rot}")
        s.answer()
        s.expect(s.wait_marker("probe-exit", 60) == "0", f"probe exits 0 (rotation {rot})")


@scenario("drm-master-handover", display="VGA", guest="drm-master-handover.sh")
def master_handover(s: Session) -> None:
    """Plain DRM-master hand-over (VT switch by signals): SIGUSR1 drops master so another process can
    show its frame; SIGUSR2 takes master back with a full mode set and repaint."""
    kv(s.wait_marker("fill", 60))
    img = s.screendump("first")
    s.expect(img.count(RED) == img.width * img.height, "first process shows red")
    rel = s.wait_marker("released", 60)
    s.expect(rel == "1", f"SIGUSR1: the first process logged 'released DRM master' (count {rel})")
    second = s.wait_marker("second", 60)
    s.result("second", second[:120])
    s.expect(second.startswith("ok") and "modesets=1" in second, f"second process set its mode while the first had dropped master: {second}")
    s.expect(s.wait_marker("second-exit", 60) == "0", "second process exits 0")
    s.answer()
    acq = s.wait_marker("acquired", 60)
    s.expect(acq == "1", f"SIGUSR2: the first process logged 'acquired DRM master' (count {acq})")
    st = kv(s.wait_marker("status", 60))
    s.result("after", {k: st.get(k) for k in ("modesets", "redraw", "inactive")})
    s.expect(st.get("modesets") == "2" and st.get("redraw") == "1", f"first process set the mode again and repainted ({st})")
    s.wait_screen(lambda i: i.count(RED) == i.width * i.height, 10, "back", what="all red again after taking master back")
    s.answer()
    s.expect(s.wait_marker("probe-exit", 60) == "0", "first process exits 0")


# QEMU 7.2 refuses device_del for virtio-gpu-pci ("does not support hotplugging"), so the
# unplug is done by the guest kernel: PCI remove of the GPU, then a bus rescan adds it back. The
# DRM device disappears (udev "remove") and comes back as a new card (udev "add").
@scenario("drm-hotplug-virtio", display="virtio-gpu-pci,max_outputs=2", timeout=240, guest="drm-hotplug-virtio.sh")
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
    s.expect(st.get("inactive") == "1", f"one stretch without a display counted (inactive={st.get('inactive')})")
    s.wait_screen(lambda i: i.count(GREEN) == i.width * i.height, 15, "green-again", what="the green frame repainted on the new device")
    s.answer()
    s.expect(s.wait_marker("probe-exit", 60) == "0", "probe still alive and exits 0 after hotplug")


# One DRM card driving two outputs: `kiosk-vmtool drm-heads` (a DRMCard with two heads) on
# virtio-gpu with max_outputs=2, both heads' pictures read with QMP screendump device/head.

FLIPS = 60
SQUARE = 16 * 16  # the corner the flips repaint


@scenario("drm-two-heads-virtio", display="virtio-gpu-pci", heads=2, timeout=300, guest="drm-two-heads.sh")
def two_heads_virtio(s: Session) -> None:
    """One DRMCard drives Virtual-1 and Virtual-2 (atomic, then legacy): each head sets its mode
    once (1024x768) and gets every one of its 60 flip events while the other flips, page-flip events routed
    by CRTC; each head shows its own colour."""
    for api, colours in (("atomic", (RED, GREEN)), ("legacy", (BLUE, WHITE))):
        heads = [kv(s.wait_marker(f"{api}-head{i}", 180)) for i in (1, 2)]
        done = kv(s.wait_marker(f"{api}-done", 60))
        s.result(f"{api}_heads", heads)
        s.result(f"{api}_switches", done.get("switches"))
        for i, h in enumerate(heads):
            name = f"{api} Virtual-{i + 1}"
            s.expect(h.get("head") == f"Virtual-{i + 1}" and h.get("logical") == "1024x768", f"{name} active at 1024x768 ({h})")
            s.expect(h.get("modesets") == "1", f"{name}: one mode set ({h.get('modesets')})")
            s.expect(h.get("flipEvents") == str(FLIPS), f"{name}: {FLIPS} flip events, each routed to its head ({h.get('flipEvents')})")
        a, b = (int(h.get("firstMs", "-1")) for h in heads), (int(h.get("lastMs", "-1")) for h in heads)
        (first1, first2), (last1, last2) = a, b
        s.expect(first1 < last2 and first2 < last1,
                 f"{api}: the heads flipped during the same time (Virtual-1 {first1}-{last1} ms, Virtual-2 {first2}-{last2} ms)")
        s.expect(int(done.get("switches", "0")) >= 10, f"{api}: flip events of the two heads interleaved ({done.get('switches')} switches)")
        for i, rgb in enumerate(colours):
            img = s.screendump(f"{api}-head{i + 1}", head=i)
            total = img.width * img.height
            s.expect(close_rgb(img.pixel_at(0.5, 0.5), rgb) and img.count(rgb) >= total - SQUARE,
                     f"{api}: Virtual-{i + 1} shows {rgb} ({img.count(rgb)} of {total} pixels, centre {img.pixel_at(0.5, 0.5)})")
        s.answer()
        s.expect(s.wait_marker(f"{api}-bye", 60) == "ok bye", f"{api}: the card shut down")
        s.expect(s.wait_marker(f"{api}-exit", 60) == "0", f"{api}: drm-heads exited 0")


# ---------------------------------------------------------------------------------------------
# The real kioskd on DRM
# ---------------------------------------------------------------------------------------------

RTC_BASE = "2026-03-14T13:35:16"



def check_screen_truth(s: Session) -> None:
    """`kioskctl outputs` tells the truth about the screen while the clock runs: a frame the
    kernel completed within the last few seconds, frames in the last minute, showing."""
    raw = s.wait_marker("outputs", 30)
    at, _, text = raw.partition(" ")
    try:
        o = json.loads(text)["outputs"][0]
    except (ValueError, KeyError, IndexError):
        s.expect(False, f"kioskctl outputs --json is JSON with an output: {raw[:200]}")
        return
    s.result("outputs", {k: o.get(k) for k in ("last_frame_shown", "frames_shown_last_minute", "showing", "connected", "mode")})
    shown = o.get("last_frame_shown")
    age = None
    if shown:
        age = float(at) - calendar.timegm(time.strptime(shown, "%Y-%m-%dT%H:%M:%SZ"))
    s.result("last_frame_age_s", age)
    # One frame a second, its time in whole seconds, read before the guest's time is taken (a
    # kioskctl start takes up to a few seconds under TCG).
    s.expect(age is not None and 0 <= age <= 6, f"the last frame shown is recent ({shown} at guest time {at}: {age} s)")
    s.expect((o.get("frames_shown_last_minute") or 0) > 0, f"frames shown in the last minute > 0 ({o.get('frames_shown_last_minute')})")
    s.expect(o.get("showing") is True and o.get("connected") is True, f"the screen is showing and connected ({o})")


def clock_scenario(head: Optional[int] = None, other_head: Optional[int] = None, output: str = ""):
    """The check of the real kioskd's clock. `head`: the virtio-gpu head kioskd drives (None: the
    only display); `other_head`: a head it leaves alone, which must keep showing the text console
    while kioskd runs and after it stops; `output`: the connector status must name."""
    heads = [head] if other_head is None else [head, other_head]
    on = "" if head is None else f"head {head}: "

    def check(s: Session) -> None:
        consoles = s.consoles_before(heads)
        console = consoles[0]
        up = s.wait_marker("kioskd-up", 90)
        s.expect(up != "failed", "kioskd showed its first frame")
        if up == "failed":
            return
        t1 = float(s.wait_marker("shot1", 30))
        img1 = s.screendump("clock1", head)
        s.answer()
        t1b = float(s.wait_marker("shot1-done", 30))
        off = clock_second(img1, t1, t1b)
        ok = off is not None
        s.result("clock_rgb", img1.pixel_at(0.03, 0.03))
        s.result("expected_rgb_at_t1", clock_rgb(t1))
        s.result("guest_time", t1)
        s.result("second_offset", off)
        s.expect(ok, f"{on}clock background {img1.pixel_at(0.03, 0.03)} matches the formula for {t1:.1f}..{t1b:.1f} "
                     f"(expected about {clock_rgb(t1)})")
        tm = time.gmtime(int(t1))
        s.expect(tm.tm_year == 2026 and tm.tm_mon == 3 and tm.tm_mday == 14, f"guest clock follows -rtc base (guest time {t1})")
        t2 = float(s.wait_marker("shot2", 30))
        # The next tick: the background changes within about a second (bounded).
        img2 = s.wait_screen(lambda i: i.pixel_at(0.03, 0.03) != img1.pixel_at(0.03, 0.03), 5, "clock2",
                             what=f"{on}the clock background changes with the next second", head=head)
        if other_head is not None:
            # kioskd has drawn at least two frames on its head; the other one is untouched.
            other = s.screendump("other", other_head)
            problem = console_restored_problem(consoles[1], other)
            s.result(f"head{other_head}_diff_from_console_while_kioskd_runs", other.differs(consoles[1]))
            s.expect(problem is None, f"head {other_head} keeps showing the text console while kioskd drives head {head}: {problem}")
        s.answer()
        t2b = float(s.wait_marker("shot2-done", 30))
        ok2 = clock_second(img2, t2, t2b) is not None
        s.expect(ok2, f"{on}second screendump matches the formula too ({img2.pixel_at(0.03, 0.03)} vs {clock_rgb(t2)})")
        st = s.wait_marker("status", 30)
        s.result("status", st[:300])
        try:
            stj = json.loads(st)
            s.result("frames", stj.get("frames"))
            # Frames after the first go out by page flip: each waits for the previous flip's event.
            s.expect((stj.get("frames") or 0) >= 3, f"several frames presented (flip events arrived): {stj.get('frames')}")
            if output:
                # `output` describes the display ("/dev/dri/card0 Virtual-2 1024x768@60 atomic");
                # a multi-output kioskd also lists `outputs` by name.
                names = [o.get("name") for o in stj.get("outputs") or [] if isinstance(o, dict)]
                said = str(stj.get("output"))
                s.result("status_output", said)
                s.expect(output in said.split() and names in ([], [output]),
                         f"kioskctl status names the output {output} (output: {said!r}, outputs: {names})")
        except ValueError:
            s.expect(False, f"kioskctl status --json is JSON: {st[:200]}")
        check_screen_truth(s)
        s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")
        s.expect_console_back(console, "restored", f"{on}SIGTERM gives the text console back as it was", head=head)
        if other_head is not None:
            s.expect_console_back(consoles[1], "restored", f"head {other_head}: the text console as it was after kioskd stopped",
                                  head=other_head)
        s.answer()
    return check


scenario("kioskd-clock-bochs", display="VGA", qemu_args=["-rtc", f"base={RTC_BASE}"],
         guest="kioskd-clock.sh", env={"ROT": "0"},
         description="real kioskd: clock background at the RTC time matches the scaled formula, ticks, SIGTERM restores")(clock_scenario())

# Two heads on one virtio-gpu (heads=2: max_outputs=2, Virtual-2 forced on by `video=`); kioskd
# (one output) drives the second by `[display] output`, checked on head 1's own screendump.
scenario("kioskd-clock-virtual2", display="virtio-gpu-pci", heads=2, qemu_args=["-rtc", f"base={RTC_BASE}"],
         guest="kioskd-clock.sh", env={"ROT": "0", "OUTPUT": "Virtual-2"},
         description="real kioskd with output = Virtual-2: the clock on head 1 by its screendump, head 0 keeps the console, "
                     "SIGTERM restores both")(clock_scenario(head=1, other_head=0, output="Virtual-2"))


CYAN, MAGENTA, YELLOW = (0, 255, 255), (255, 0, 255), (255, 255, 0)


@scenario("kioskd-counter-bochs", display="VGA", timeout=240, guest="kioskd-counter.sh",
          description="real kioskd: counter first frame in the default theme, and rotated 90")
def counter_check(s: Session) -> None:
    """Counter first frame (default theme: white background, cyan windows); rotation 90 turns the layout."""
    s.wait_marker("kioskd-up", 90)
    s.wait_marker("counter-shown", 30)
    img = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 10, "counter",
                        what="the counter's cyan windows (more than 2 % of the screen)")
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
    img = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 10, "counter90",
                        what="the rotated counter's cyan windows (more than 2 % of the screen)")
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
          guest="kioskd-connector-hotplug.sh")
def connector_hotplug(s: Session) -> None:
    """Real kioskd on virtio-gpu: connector forced off then re-detected; kioskd keeps running, goes
    inactive, then sets the mode again and repaints the counter."""
    s.wait_marker("kioskd-up", 90)
    s.wait_marker("shown", 30)
    img = s.wait_screen(lambda i: i.count(CYAN) > i.width * i.height // 50, 10, "before",
                        what="the counter's cyan windows on virtio-gpu")
    before = img.count(CYAN)
    s.expect(before > img.width * img.height // 50, f"counter shown on virtio-gpu ({before} cyan pixels)")
    s.answer()
    seen = s.wait_marker("seen-off", 60)
    s.expect(seen == "yes", "kioskd logged 'no connected output' after the connector went off (waited 30 s)")
    s.expect(s.wait_marker("alive-off", 30) == "yes", "kioskd still running with the connector off")
    off = s.wait_marker("status-off", 30).replace(" ", "")
    s.result("status_off_mode", "none" if '"mode":"none"' in off else off[:120])
    s.expect('"mode":"none"' in off, f"status shows no mode while disconnected: {off[:200]}")
    seen = s.wait_marker("seen-on", 60)
    s.expect(seen == "yes", "kioskd logged one more 'mode set' after the connector came back (waited 30 s)")
    s.expect(s.wait_marker("alive-on", 30) == "yes", "kioskd still running after re-detect")
    on = s.wait_marker("status-on", 30).replace(" ", "")
    s.expect('"mode":"1280x800"' in on, f"status shows the mode again: {on[:200]}")
    again = s.wait_screen(lambda i: i.differs(img) == 0, 10, "after",
                          what="the counter repainted, identical to the frame before the connector went off")
    s.result("cyan_before_after", [before, again.count(CYAN)])
    s.answer()
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0")
