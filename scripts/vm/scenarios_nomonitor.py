"""No monitor at boot (issue 31, item 3): the only head of a virtio-gpu forced off on the kernel
command line (`video=Virtual-1:d`), as a TV switched off when the board boots. kioskd must tell
the service manager it is ready with a status saying it waits for a display (a notification socket
in the guest stands in for systemd's), stay up, and show the clock within 2 s of the connector
being forced on through sysfs — which raises no udev event on virtio-gpu."""

import time

from vmharness import Session, clock_rgb, clock_second, scenario

CLOCK_AT = (0.03, 0.03)   # a background pixel of the clock (no digits there)
SHOWN_WITHIN_S = 2.0


@scenario("kioskd-no-monitor-at-boot", display="virtio-gpu-pci", timeout=300, kernel_args="video=Virtual-1:d",
          guest="kioskd-no-monitor.sh")
def no_monitor_at_boot(s: Session) -> None:
    """Head forced off at boot: READY=1 with a waiting STATUS=, kioskd stays up, the clock is shown within 2 s of the connector being forced on (no udev event)."""
    before = s.wait_marker("head-before", 90)
    s.result("head_before", before)
    s.expect(before == "disconnected", f"the kernel's video=Virtual-1:d leaves the connector disconnected at boot ({before})")
    ready = s.wait_marker("ready", 120).split()
    s.result("ready", ready)
    s.expect(len(ready) == 2, f"kioskd sent READY=1 with no display connected (it did not: {ready})")
    if len(ready) == 2:
        s.result("ready_after_start_s", round(float(ready[1]) - float(ready[0]), 2))
    status = s.wait_marker("status-waiting", 30)
    s.result("status_waiting", status)
    s.expect(status.startswith("STATUS=waiting for a display"), f"the STATUS= line says kioskd waits for a display: {status!r}")
    alive = s.wait_marker("alive-waiting", 30).split()
    s.result("alive_waiting", alive)
    s.expect(alive[:2] == ["yes", "0"], f"kioskd is still running 3 s later and has drawn nothing (running, frames logged: {alive})")
    ctl = s.wait_marker("status-waiting-ctl", 30)
    s.result("kioskctl_status_waiting", ctl[:300])
    s.wait_marker("before-on", 30)
    s.answer()

    t_guest = float(s.wait_marker("forced-on", 30))
    t0 = time.monotonic()
    shown = None
    shots = 0
    while time.monotonic() - t0 < SHOWN_WITHIN_S + 3:
        img = s.screendump("after-on")
        shots += 1
        if clock_second(img, t_guest, t_guest + time.monotonic() - t0 + 1, CLOCK_AT) is not None:
            shown = (time.monotonic() - t0, img)
            break
        time.sleep(0.1)
    s.result("screendumps_until_shown", shots)
    if shown is None:
        s.expect(False, f"the clock is on screen within {SHOWN_WITHIN_S + 3:g} s of the connector being forced on "
                        f"(last screendump {s.last_shot}: {img.pixel_at(*CLOCK_AT)} at {CLOCK_AT}, "
                        f"expected about {clock_rgb(t_guest)})")
    else:
        dt, img = shown
        s.result("shown_after_s", round(dt, 2))
        s.result("clock_pixel", {"rgb": img.pixel_at(*CLOCK_AT), "size": f"{img.width}x{img.height}"})
        s.expect(dt <= SHOWN_WITHIN_S, f"the clock is on screen {dt:.2f} s after the connector was forced on "
                                       f"(at most {SHOWN_WITHIN_S:g} s)")
    s.result("head_after", s.wait_marker("head-after", 30))
    steps = s.wait_marker("steps", 60).split()
    try:
        s.result("after_forced_on_s", dict(zip(["connector_seen", "output_ready", "mode_set", "first_frame"],
                                               [round(float(t) - t_guest, 2) for t in steps])))
    except ValueError:
        s.result("after_forced_on_s", steps)
    s.result("first_frame_log", s.wait_marker("first-frame", 60))
    s.answer()
    after = s.wait_marker("notify-after", 30)
    readies, _, last_status = after.partition(" ")
    s.result("notify_after", after)
    s.expect(readies == "1", f"READY=1 was sent once ({readies} times)")
    s.expect(last_status.startswith("STATUS=scene clock") and "Virtual-1" in last_status,
             f"the STATUS= line names the scene and the output once it is shown: {last_status!r}")
    st = s.wait_marker("status-shown", 30).replace(" ", "")
    s.result("kioskctl_status_shown", st[:300])
    s.expect('"mode":"1280x800"' in st, f"kioskctl status shows the output's mode: {st[:300]}")
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")
