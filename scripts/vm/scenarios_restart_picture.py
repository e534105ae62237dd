"""kioskd restarted under a real systemd (252, PID 1, scripts/vm/systemd-boot.sh) keeps its
picture: the DRM device's open file waits in systemd's file descriptor store (the shipped unit's
FileDescriptorStoreMax=) while the next kioskd starts, so the framebuffer on screen stays up
(docs/restart.md). Screendumps one after another time how long the score is off the screen
through `systemctl restart` with the store off and on, and through a crash restarted by
Restart=; 10 restarts leave as many framebuffers on the device as before; a stop empties the
store and the picture goes."""

import os
import time

from vmharness import Image, Session, kv, scenario

# A screendump counts as the score when at most this share of its pixels differs from the one
# taken before the restart (the counter scene is still: the same value draws the same pixels).
SAME_SHARE = 0.01


def _same(img: Image, ref: Image) -> bool:
    return img.differs(ref) <= SAME_SHARE * ref.width * ref.height


def _watch(s: Session, label: str) -> dict:
    """Screendumps from `restart-LABEL` until 1.5 s after `restarted-LABEL`: how many, how many
    did not show the score, and the longest time it was off (first shot without it to the next
    shot with it; None: never off)."""
    s.wait_marker(f"restart-{label}", 120)
    ref = s.screendump(f"{label}-before")
    s.answer()
    t0, shots, off, gone, longest, done_at = time.monotonic(), 0, 0, None, 0.0, None
    while time.monotonic() - t0 < 180:
        img, now = s.screendump(f"{label}-during"), time.monotonic()
        same = _same(img, ref)
        if same:
            os.unlink(img.path)
        shots += 1
        if not same:
            off += 1
            if gone is None:
                gone = now
        elif gone is not None:
            longest, gone = max(longest, now - gone), None
        if done_at is None and s.markers(f"restarted-{label}"):
            done_at = now
        if done_at is not None and now - done_at > 1.5:
            break
    if gone is not None:
        longest = max(longest, time.monotonic() - gone)
    after = kv(s.wait_marker(f"restarted-{label}", 30))
    s.answer()
    return {"screendumps": shots, "without_score": off, "longest_off_s": round(longest, 2) if off else 0.0,
            "restart": after}


@scenario("systemd-restart-picture", display="VGA", timeout=900, boot="scripts/vm/systemd-boot.sh",
          prelude="systemd-prelude.sh", ready_timeout=180, guest="systemd-restart-picture.sh")
def restart_picture(s: Session) -> None:
    """systemd 252 as PID 1: with the shipped FileDescriptorStoreMax= the score stays on the screen through systemctl restart and a crash restart, and 10 restarts leak no framebuffer."""
    inst = s.wait_marker("install", 240)
    s.result("install", inst)
    s.expect(inst.startswith("0|") and "FileDescriptorStoreMax=" in inst,
             f"scripts/install.sh installed the unit with FileDescriptorStoreMax=: {inst}")
    st = kv(s.wait_marker("started", 120))
    s.result("started", st)
    s.expect(st.get("rc") == "0" and st.get("ActiveState") == "active", f"kioskd started: {st}")

    runs = {}
    for label in ("off", "on", "crash"):
        r = _watch(s, label)
        runs[label] = r
        rs = r["restart"]
        s.result(f"restart_{label}", {k: v for k, v in r.items() if k != "restart"}
                 | {k: rs.get(k) for k in ("rc", "t", "fbs", "NFileDescriptorStore", "NRestarts")})
        s.expect(rs.get("rc") == "0" and rs.get("ActiveState") == "active", f"{label}: a new kioskd is active: {rs}")
    s.expect(runs["off"]["without_score"] > 0,
             f"with FileDescriptorStoreMax=0 the score leaves the screen during a restart (the baseline): {runs['off']}")
    for label in ("on", "crash"):
        s.expect(runs[label]["without_score"] == 0,
                 f"{label}: with the store the score never left the screen ({runs[label]['without_score']} of "
                 f"{runs[label]['screendumps']} screendumps without it, longest {runs[label]['longest_off_s']} s)")
        s.expect(runs[label]["restart"].get("NFileDescriptorStore") == "1",
                 f"{label}: systemd holds one descriptor for kioskd: {runs[label]['restart']}")

    leak = kv(s.wait_marker("leak", 600))
    s.result("leak", leak)
    s.expect(leak.get("restarts") == "10", f"10 restarts succeeded: {leak}")
    s.expect(leak.get("before") == leak.get("after") and leak.get("before") not in (None, "?"),
             f"10 restarts leave as many framebuffers on the device: {leak.get('before')} before, {leak.get('after')} after")
    s.expect(leak.get("kept", "0").isdigit() and int(leak.get("kept", "0")) >= int(leak.get("restarts", "0") or 0) + 2,
             f"each restarted kioskd took the kept device (journal): {leak.get('kept')}")

    s.wait_marker("before-stop", 30)
    shown = s.screendump("before-stop")
    s.answer()
    stop = kv(s.wait_marker("stopped", 60))
    s.result("stopped", stop)
    s.expect(stop.get("rc") == "0" and stop.get("NFileDescriptorStore") == "0", f"stop empties the store: {stop}")
    s.wait_screen(lambda i: not _same(i, shown), 15, "after-stop", what="the score gone after systemctl stop")
    s.answer()
    s.result("journal", s.wait_marker("journal", 30))
