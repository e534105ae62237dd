"""The game clock through SIGKILL on a real kernel and a real display (bochs-drm): kioskd shows a
1:00 game clock in tenths and logs every frame that shows another face ("game clock shown" at
--log-level debug: the frame's CLOCK_MONOTONIC instant and the face); the guest kills it with
SIGKILL at several instants while the clock runs, and once while it is stopped, and starts it
again each time. The truth is the clock's start: the instant T the daemon took `kioskctl clock
start` (its kept record, checked against the guest's uptime around the call) and the time R it
had then. After each restart the first frame's face is the truth's at that frame, and each face
the restarted daemon shows next comes at or after the instant the truth reaches it, the
promptest at most one frame (17 ms) later (a frame woken late is the loaded host's, not the clock's); the stopped clock comes back with exactly the time it was stopped with;
the final run reaches zero exactly at T + R, and no frame shows 0.0 before it."""

import json
import re

from clockfaces import NS_PER_MS, change_lags_ns, check_lags, face_error_ns, parse_shown, truth_ns
from vmharness import Session, scenario

UPTIME_SLACK_NS = 10 * NS_PER_MS  # /proc/uptime's resolution
LEFT2_MS = 20_000  # set while stopped, then run out after one more kill


def _ctl(payload: str) -> tuple[int, int, dict]:
    """"BEFORE_MS AFTER_MS ANSWER" (guest's ctl): the uptime bracket in ns and the answer."""
    w = payload.split(" ", 2)
    try:
        return int(w[0]) * NS_PER_MS, int(w[1]) * NS_PER_MS, json.loads(w[2])
    except (ValueError, IndexError):
        return 0, 0, {"unreadable": payload}


def _kept(payload: str) -> dict:
    try:
        return json.loads(payload) or {}
    except ValueError:
        return {}


def _check_restart(s: Session, name: str, payload: str, since: int, left_ms: int, lags: list, errors: list) -> None:
    """Every frame after a restart shows the truth's face at that frame's instant; the faces come
    on time (none early, the promptest within one frame)."""
    lines = [x for x in parse_shown(payload) if x.running]
    s.expect(len(lines) >= 4, f"{name}: the restarted kioskd showed the running clock ({payload[:200]})")
    if not lines:
        return
    errors.append(face_error_ns(lines[0].game, truth_ns(since, left_ms, lines[0].frame_ns)))
    wrong = [(x.game, x.frame_ns) for x in lines if face_error_ns(x.game, truth_ns(since, left_ms, x.frame_ns)) != 0]
    s.expect(not wrong, f"{name}: each of its first {len(lines)} frames shows the truth's face at its instant (off: {wrong[:3]})")
    these = [lag for _, lag in change_lags_ns(lines, since, left_ms)]
    lags.extend(these)
    check_lags(s, name, these)


@scenario("kioskd-clock-kill", display="VGA", timeout=420, guest="kioskd-clock-kill.sh")
def kioskd_clock_kill(s: Session) -> None:
    """A running 1:00 game clock on DRM, kioskd SIGKILLed and restarted at two instants, once more while stopped and once before zero: every frame after each restart shows the truth's face, the promptest face within one frame; the stopped time comes back exact; zero comes exactly at the kept start + 20 s."""
    up = s.wait_marker("kioskd-up", 120)
    s.expect(up != "failed", "kioskd started on bochs-drm")
    if up == "failed":
        return
    a, b, start = _ctl(s.wait_marker("start", 60))
    kept = _kept(s.wait_marker("kept", 60))
    s.result("kept", kept)
    s.expect(start.get("ok") is True, f"kioskctl clock start ({start})")
    since, left = kept.get("sinceMonotonicNs"), kept.get("remainingMs")
    if since is None or left != 60_000:
        s.expect(False, f"the kept record runs since T with 1:00 left ({kept})")
        return
    s.expect(a - UPTIME_SLACK_NS <= since <= b + UPTIME_SLACK_NS,
             f"the kept start T is within the guest's clock around kioskctl clock start ({a}…{b} ns, T {since})")
    lags: list[int] = []
    errors: list[int] = []
    for n in range(2):
        if s.wait_marker("kioskd-up", 120) == "failed":
            s.expect(False, f"restart-{n}: kioskd started again after SIGKILL")
            return
        _check_restart(s, f"restart-{n}", s.wait_marker(f"restart-{n}", 60), since, left, lags, errors)

    # Stopped: the time it was stopped with is the truth at an instant inside kioskctl's call,
    # set to 0:20 then; after SIGKILL and a restart it is exactly that.
    a, b, stop = _ctl(s.wait_marker("stop", 60))
    stopped_ms = (stop.get("clock") or {}).get("remaining_ms")
    s.result("stopped_ms", stopped_ms)
    if stopped_ms is not None:
        lo, hi = truth_ns(since, left, b + UPTIME_SLACK_NS), truth_ns(since, left, a - UPTIME_SLACK_NS)
        s.expect(lo <= stopped_ms * NS_PER_MS <= hi + NS_PER_MS,
                 f"stopped with {stopped_ms} ms left: the truth at an instant within kioskctl clock stop ({lo / 1e6:.0f}…{hi / 1e6:.0f} ms)")
    _, _, set_ = _ctl(s.wait_marker("set", 60))
    s.expect((set_.get("clock") or {}) .get("remaining_ms") == LEFT2_MS and (set_.get("clock") or {}).get("running") is False,
             f"set 0:20 while stopped ({set_})")
    s.wait_marker("kioskd-up", 120)
    again = parse_shown(s.wait_marker("restart-stopped", 60))
    status = s.wait_marker("stopped-status", 60).split(" ", 1)[-1]
    clocks = (_kept(status).get("clocks") or [{}])
    c = clocks[0].get("clock") or {}
    s.result("restart_stopped", {"shown": [x._asdict() for x in again[:1]], "status": c})
    s.expect(c.get("running") is False and c.get("remaining_ms") == LEFT2_MS,
             f"restart-stopped: status has the clock stopped with exactly 20000 ms ({c})")
    s.expect(bool(again) and again[0].game == "20.0" and not again[0].running,
             f"restart-stopped: the first frame shows 20.0, stopped ({again[:1]})")

    a, b, start2 = _ctl(s.wait_marker("start2", 60))
    kept2 = _kept(s.wait_marker("kept2", 60))
    since2 = kept2.get("sinceMonotonicNs")
    s.result("kept2", kept2)
    if since2 is None or kept2.get("remainingMs") != LEFT2_MS:
        s.expect(False, f"started again: the kept record runs since T2 with 0:20 left ({kept2}, {start2})")
        return
    s.expect(a - UPTIME_SLACK_NS <= since2 <= b + UPTIME_SLACK_NS, f"T2 is within kioskctl clock start's call ({a}…{b}, {since2})")
    if s.wait_marker("kioskd-up", 120) == "failed":
        s.expect(False, "restart-last: kioskd started again")
        return
    _check_restart(s, "restart-last", s.wait_marker("restart-last", 60), since2, LEFT2_MS, lags, errors)
    final = parse_shown(s.wait_marker("final", 60))
    zero = re.search(r"frame_ns=(\d+).*?zero_ns=(\d+)", s.wait_marker("final-zero", 60))
    s.expect(zero is not None, "the restarted clock ran out (a 'reached zero' line)")
    if zero:
        frame_ns, zero_ns = int(zero.group(1)), int(zero.group(2))
        s.result("zero_minus_truth_ns", zero_ns - (since2 + LEFT2_MS * NS_PER_MS))
        s.result("zero_frame_minus_truth_ms", round((frame_ns - since2 - LEFT2_MS * NS_PER_MS) / 1e6, 2))
        s.expect(zero_ns == since2 + LEFT2_MS * NS_PER_MS, "zero came exactly at T2 + 20 s")
        s.expect(frame_ns >= zero_ns, f"the frame showing 0.0 is not before zero ({(frame_ns - zero_ns) / 1e6:.2f} ms after it)")
        s.expect(any(x.game == "0.0" and x.frame_ns == frame_ns for x in final), f"the frame log shows 0.0 at that frame ({final})")
    s.result("restart_first_frame_error_ms", [round(x / 1e6, 2) for x in errors])
    s.result("face_lag_ms", {"n": len(lags), "min": round(min(lags, default=0) / 1e6, 2), "max": round(max(lags, default=0) / 1e6, 2)})
    s.expect(s.wait_marker("kioskd-exit", 30) == "0", "kioskd exits 0 on SIGTERM")
