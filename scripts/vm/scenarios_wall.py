"""A wall clock that cannot know the time: the RTC far off, no NTP client. kioskd must start at
once, show the clock with the "time not synchronised" mark and say so in status; when
systemd-timesyncd's flag file appears, the mark goes."""

import json

from vmharness import Session, scenario


RTC_FAR_OFF = "2001-02-03T04:05:06"


def mark_pixels(img, background) -> int:
    """Pixels other than the background in the top band where the clock draws the mark (the time
    is centred below it; the label is off)."""
    n = 0
    for y in range(0, img.height * 6 // 100):
        for x in range(0, img.width // 2):
            if img.pixel(x, y) != background:
                n += 1
    return n


@scenario("kioskd-time-unsynced", display="VGA", timeout=240, qemu_args=["-rtc", f"base={RTC_FAR_OFF}"],
          guest="kioskd-time-unsynced.sh")
def time_unsynced(s: Session) -> None:
    """RTC in 2001 and no NTP: kioskd starts, the clock shows the mark (screendump) and status says not synchronised; timesyncd's flag file removes the mark."""
    up = s.wait_marker("kioskd-up", 120)
    s.expect(up != "failed", "kioskd started without waiting for time")
    if up == "failed":
        return
    st = s.wait_marker("status-unsynced", 30)
    try:
        sync = json.loads(st).get("time_sync")
    except ValueError:
        sync = None
    s.result("time_sync_before", sync)
    s.expect(sync == {"synchronized": False, "source": "none"}, f"status says the time is not synchronised: {st[:300]}")
    s.wait_marker("unsynced-shown", 30)
    background = s.screendump("probe").pixel_at(0.99, 0.99)
    img = s.wait_screen(lambda i: mark_pixels(i, background) > 50, 20, "unsynced",
                        what="the 'time not synchronised' mark in the top-left band")
    before = mark_pixels(img, background)
    s.result("background", background)
    s.result("mark_pixels_before", before)
    s.answer()
    st2 = s.wait_marker("status-synced", 60)
    try:
        sync2 = json.loads(st2).get("time_sync")
    except ValueError:
        sync2 = None
    s.result("time_sync_after", sync2)
    s.expect(sync2 == {"synchronized": True, "source": "timesyncd"}, f"status says synchronised by timesyncd: {st2[:300]}")
    s.wait_marker("synced", 30)
    img2 = s.wait_screen(lambda i: mark_pixels(i, background) == 0, 10, "synced",
                         what="the mark gone once timesyncd's flag file exists")
    s.result("mark_pixels_after", mark_pixels(img2, background))
    s.answer()
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")
