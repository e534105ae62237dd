"""Outputs on two DRM devices, one kioskd (issue 31, item 1): QEMU with a virtio-gpu (id video0)
and a bochs-display (id video1), each its own DRM device; the guest's card numbers follow the
drivers' probe order, so the config names the devices by driver only:

    [[output]] device = "virtio_gpu", scenes = ["clock"]
    [[output]] device = "bochs-drm",  scenes = ["score"]

Each device's QMP screendump is checked by pixels. Then the bochs connector is forced off and the
bochs device unbound from its driver: the virtio output's frame counter in `kioskctl status` must
keep the clock's one frame a second. Every failure message starts with its check (see CHECKS)."""

import math
import time

from vmharness import Image, Session, VMError, clock_rgb, clock_second, scenario
# load_scenarios imports the scenario files in name order: scenarios_multihead.py is loaded by now.
from kiosk_vm_scenarios_multihead import counter_problem, frames_of, timed_status

CLOCK_AT = (0.03, 0.03)   # a background pixel of the clock (no digits there)
CYAN = (0, 255, 255)
VIRTIO, BOCHS = "video0", "video1"

CHECKS = [
    "list outputs",          # kioskd --list-outputs exits 0 naming both devices' drivers, by-path names and connectors
    "two devices at once",   # video0 (virtio_gpu) the clock's colour for the guest's second, video1 (bochs) the counter
    "bochs connector off",   # the virtio output keeps one frame a second; its screen keeps the clock
    "bochs unplugged",       # the bochs device unbound: the same
    "bochs back",            # the bochs device bound again: the counter on it again; kioskd stays up, SIGTERM exits 0
]


def clock_check(s: Session, check: str, img: Image, t1: float, t2: float) -> None:
    off = clock_second(img, t1, t2, CLOCK_AT)
    s.result("virtio_clock", s.results.get("virtio_clock", []) + [{"check": check, "rgb": img.pixel_at(*CLOCK_AT), "second_offset": off}])
    s.expect(off is not None, f"{check}: the virtio device shows the clock's colour for {t1:.1f}..{t2:.1f}: "
                              f"{img.pixel_at(*CLOCK_AT)}, expected about {clock_rgb(t1)} ({img.path})")


def rate_check(s: Session, check: str, a: str, b: str) -> None:
    """The virtio output (output-1) presented the clock's one frame a second between markers a and b."""
    (t0, st0), (t1, st1) = timed_status(s.wait_marker(a, 60)), timed_status(s.wait_marker(b, 60))
    f0, f1 = frames_of(st0, "output-1"), frames_of(st1, "output-1")
    s.result(f"frames_{a}_{b}", {"virtio": [f0, f1], "bochs": [frames_of(st0, "output-2"), frames_of(st1, "output-2")],
                                 "window_s": round(t1 - t0, 1)})
    if f0 is None or f1 is None:
        s.expect(False, f"{check}: kioskctl status gives output-1's frames ({f0}, {f1}; outputs: {str(st1.get('outputs'))[:300]})")
        return
    need = math.floor(t1 - t0) - 2
    s.expect(f1 - f0 >= need, f"{check}: the virtio output presented {f1 - f0} frames in {t1 - t0:.1f} s; "
                              f"the clock's one a second allows no fewer than {need}")


@scenario("kioskd-two-devices", display=f"virtio-gpu-pci,id={VIRTIO}", qemu_args=["-device", f"bochs-display,id={BOCHS}"],
          timeout=300, guest="kioskd-two-devices.sh")
def two_devices(s: Session) -> None:
    """One kioskd on two DRM devices named by driver: the clock on virtio-gpu and a counter on bochs-display, each checked by its screendump; --list-outputs lists both; the bochs connector forced off and the device unbound while virtio keeps its frame rate."""
    _two_devices(s)


@scenario("kioskd-two-devices-swapped", display=f"bochs-display,id={BOCHS}", qemu_args=["-device", f"virtio-gpu-pci,id={VIRTIO}"],
          timeout=300, guest="kioskd-two-devices.sh")
def two_devices_swapped(s: Session) -> None:
    """kioskd-two-devices with the two devices' PCI slots swapped (bochs-display first): the same config, the same scenes on the same devices."""
    _two_devices(s)


def _two_devices(s: Session) -> None:
    s.result("checks", CHECKS)
    s.result("cards", s.wait_marker("cards", 90))

    check = "list outputs"
    code = s.wait_marker("list-exit", 60)
    listed = s.wait_marker("list", 30)
    s.result("list_outputs", listed)
    s.expect(code == "0", f"{check}: kioskd --list-outputs exits 0 ({code}): {listed[:300]}")
    for word in ("driver virtio_gpu", "driver bochs-drm", "/dev/dri/by-path/pci-", "Virtual-1 connected", "Virtual-2 connected"):
        s.expect(word in listed, f"{check}: kioskd --list-outputs says {word!r}: {listed[:600]}")

    check = "two devices at once"
    up = s.wait_marker("kioskd-up", 120)
    if up == "failed":
        said = (s.markers("kioskd-log") or [""])[-1]
        raise VMError(f"{check}: kioskd showed no first frame with outputs on two devices; it said: {said[-500:]}")
    s.result("opened", s.wait_marker("opened", 30))
    t1 = float(s.wait_marker("shot1", 30))
    try:
        counter = _wait(s, BOCHS, "counter")
    except VMError as e:
        s.expect(False, f"{check}: {e}")
        counter = s.screendump("counter", device=BOCHS)
    clock = s.screendump("clock", device=VIRTIO)
    s.answer()
    t1b = float(s.wait_marker("shot1-done", 30))
    clock_check(s, check, clock, t1, t1b)
    p = counter_problem(counter)
    s.result("sizes", [f"{clock.width}x{clock.height}", f"{counter.width}x{counter.height}"])
    s.expect(p is None, f"{check}: the bochs device shows the counter: {p} ({counter.path})")
    s.expect(counter_problem(clock) is not None, f"{check}: the virtio device does not show the counter ({clock.path})")
    _, st1 = timed_status(s.wait_marker("status1", 30))
    s.result("status1_outputs", [{k: o.get(k) for k in ("name", "connector", "scene", "frames")} for o in st1.get("outputs") or []
                                 if isinstance(o, dict)])

    for check, marker, key, rates, shot in (("bochs connector off", "bochs-connector", "bochs_connector", ("off0", "off1"), "shot2"),
                                            ("bochs unplugged", "unbound", "unbound", ("gone0", "gone1"), "shot3")):
        # The bochs device fails; the virtio output keeps its frame a second and its clock.
        s.result(key, s.wait_marker(marker, 30))
        rate_check(s, check, *rates)
        t = float(s.wait_marker(shot, 30))
        clock = s.screendump(f"clock-{marker}", device=VIRTIO)
        s.answer()
        clock_check(s, check, clock, t, float(s.wait_marker(f"{shot}-done", 30)))
    check = "bochs back"
    s.result("rebound", s.wait_marker("rebound", 60))
    try:
        back = _wait(s, BOCHS, "counter-back")
        s.result("bochs_back_counter", {"cyan": back.count(CYAN), "white_at_corner": back.pixel_at(0.01, 0.01)})
    except VMError as e:
        s.expect(False, f"{check}: {e}")
    s.answer()
    s.expect(s.wait_marker("alive", 30) == "yes", f"{check}: kioskd still running after the bochs device went away")
    s.result("kioskd_said", s.wait_marker("kioskd-said", 30))
    code = s.wait_marker("kioskd-exit", 30)
    s.expect(code == "0", f"SIGTERM: kioskd exits 0 (status {code})")


def _wait(s: Session, device: str, label: str, timeout: float = 30.0) -> Image:
    """Screendumps of `device` until one shows the counter (counter_problem None)."""
    deadline = time.monotonic() + timeout
    while True:
        img = s.screendump(label, device=device)
        if counter_problem(img) is None:
            return img
        if time.monotonic() > deadline:
            raise VMError(f"screen: the {device} device shows the counter: not seen within {timeout:g}s "
                          f"({counter_problem(img)}; last screendump {img.path})")
        time.sleep(0.3)
