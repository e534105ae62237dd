"""Endurance: the real kioskd on virtio-gpu with a counter, through many connector unplug/replug
cycles and touch devices plugged in and out (every other one pulled out mid-stroke). Its open
file descriptors must be the same after the first cycle and at the end, threads no more (idle
dispatch workers exit after 5 s, so the count may fall), and resident memory flat: a leak per
hotplug would show as a steady climb. The daemon must still be alive and the screen
pixel-identical to its first frame once the counter is set back to 0.

  KIOSK_ENDURANCE_CYCLES=N   cycles (default 10: one connector unplug/replug and one touch
                             device each; the documented long run is 100)
"""

import os

from vmharness import NO_TIMER_CHECK, Session, rss_growth_without_warmup, scenario

CYCLES = int(os.environ.get("KIOSK_ENDURANCE_CYCLES", "10"))
# Warm-up (glyph caches, allocator arenas) adds a step or two at some cycle, then RSS stays flat:
# measured runs grew by one step of 4.2 MB at cycle 3, or of 2.3 MB at cycle 7 (about one frame
# kept by the allocator after a mode set). A leak climbs a little every cycle instead, so the
# growth left when the two largest single-cycle steps are taken out must stay small.
RSS_TOLERANCE_KB = 8192
RSS_WARMUP_STEPS = 2
RSS_STEADY_KB = 1024




def _kv(payload: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in payload.split() if "=" in p)


@scenario("kioskd-endurance-virtio", display="virtio-gpu-pci", timeout=3600, kernel_args=NO_TIMER_CHECK, guest="kioskd-endurance.sh")
def endurance(s: Session) -> None:
    """kioskd on virtio-gpu: N connector unplug/replug cycles and N touch devices added and removed (half mid-stroke); fds unchanged, threads not more, RSS within 8 MB of the first cycle and, its two largest warm-up steps aside, within 1 MB, screen still right."""
    s.wait_marker("how-many", 120)
    s.answer(str(CYCLES))
    up = s.wait_marker("kioskd-up", 180)
    s.expect(up != "failed", "kioskd showed its first frame on virtio-gpu")
    if up == "failed":
        return
    s.result("at_start", _kv(up))
    first = s.wait_screen(lambda i: i.count((0, 255, 255)) > i.width * i.height // 50, 30, "start",
                          what="the counter's cyan windows on virtio-gpu")
    cyan = first.count((0, 255, 255))
    s.expect(cyan > first.width * first.height // 50, f"the counter is on screen ({cyan} cyan pixels)")
    s.wait_marker("shown", 60)
    s.answer("go")
    base = _kv(s.wait_marker("first", 240))
    end = _kv(s.wait_marker("end", 60 + CYCLES * 45))
    errors = s.markers("endure-error")
    s.expect(not errors, f"every cycle completed: {errors}")
    s.result("cycles", int(end.get("cycles", "0")))
    s.expect(end.get("cycles") == str(CYCLES), f"{CYCLES} cycles done (guest: {end})")
    s.result("after_first_cycle", base)
    s.result("at_end", {k: end.get(k) for k in ("fds", "threads", "rss_kb")})
    # RSS (kB) after each cycle: a leak climbs steadily; warming up (glyphs, allocator) levels off.
    s.result("rss_kb_by_cycle", [int(_kv(p).get("rss_kb", "0")) for p in s.markers("progress")])
    s.result("events", {k: end.get(k) for k in ("taps", "cut", "offs", "modesets")})
    s.expect(end.get("fds") == base.get("fds"), f"open fds after the first cycle {base.get('fds')}, at the end {end.get('fds')}")
    # Threads may fall (idle dispatch workers exit after 5 s) but never climb: one leaked thread
    # a cycle would end well above the first cycle's count.
    s.expect(base.get("threads") is not None and end.get("threads") is not None
             and int(end["threads"]) <= int(base["threads"]),
             f"threads after the first cycle {base.get('threads')}, at the end {end.get('threads')} (may fall, must not climb)")
    growth = int(end.get("rss_kb", "0")) - int(base.get("rss_kb", "0"))
    s.result("rss_growth_kb", growth)
    s.expect(growth <= RSS_TOLERANCE_KB,
             f"RSS after the first cycle {base.get('rss_kb')} kB, at the end {end.get('rss_kb')} kB (+{growth} kB, allowed +{RSS_TOLERANCE_KB})")
    by_cycle = [int(_kv(p).get("rss_kb", "0")) for p in s.markers("progress")]
    steady = rss_growth_without_warmup(int(base.get("rss_kb", "0")), by_cycle, RSS_WARMUP_STEPS)
    s.result("rss_growth_without_warmup_kb", steady)
    s.expect(len(by_cycle) == CYCLES and steady <= RSS_STEADY_KB,
             f"RSS by cycle {by_cycle} from {base.get('rss_kb')} kB: +{steady} kB besides the {RSS_WARMUP_STEPS} largest steps (allowed +{RSS_STEADY_KB}; a leak climbs every cycle)")
    s.expect(end.get("cut") == str(CYCLES // 2) and end.get("taps") == str(CYCLES - CYCLES // 2),
             f"kiosk-vmtool: {CYCLES - CYCLES // 2} taps and {CYCLES // 2} devices pulled out mid-stroke ({end})")
    s.expect(s.wait_marker("alive", 30) == "yes", "kioskd still running after the cycles")
    value = s.wait_marker("value", 60)
    s.result("counter", value)
    s.expect(value == end.get("taps"), f"every finished tap counted and no cut-off stroke did anything: counter {value}, taps {end.get('taps')}")
    s.expect(s.wait_marker("reset", 60) == "0", "kioskctl counter HOME set 0")
    s.wait_marker("reset-shown", 60)
    s.wait_screen(lambda i: i.differs(first) == 0, 30, "end", what="at 0 again, the screen identical to the first frame")
    s.result("pixels_differing_from_first_frame", 0)
    s.answer("go")
    s.expect(s.wait_marker("kioskd-exit", 60) == "0", "kioskd exits 0 on SIGTERM")
